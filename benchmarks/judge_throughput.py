"""LM-judge throughput against the concurrency bound, and the cache's speed-up.

A scripted judge (tests/fake_openai.py, its own process) answers every call after a fixed latency. For
each concurrency limit C, a fresh reward server (`olmorl-rewards serve`, judge.concurrency=C) scores N
distinct judge items through POST /v1/verify. Baseline: the ideal `N × latency / C` (the judge is the
only cost, and exactly C calls are always in flight). Target: wall time within 10% of it. Then the same
batch again: every item is a cache hit. A second baseline, measured in the same run, shows what this
machine allows: the bare openai client in this process, C calls in flight, against the same judge.

    python benchmarks/judge_throughput.py [--items 1000] [--latency-ms 200] [--concurrency 16 32 64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import JudgeSettings

ROOT = Path(__file__).resolve().parent.parent


def start_fake_judge(latency_ms: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_openai.py"), "--latency-ms",
                                str(latency_ms)], stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline() if process.stdout else ""
    if not line.startswith("READY "):
        process.kill()
        raise RuntimeError(f"fake judge did not start: {line!r}")
    return process, line.split()[1]


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def verify(url: str, items: list[dict]) -> tuple[float, list[dict]]:
    started = time.perf_counter()
    reply = httpx.post(f"{url}/v1/verify", json={"items": items}, timeout=600)
    elapsed = time.perf_counter() - started
    reply.raise_for_status()
    return elapsed, reply.json()["results"]


async def bare_client_s(judge_url: str, n: int, concurrency: int) -> float:
    """N chat calls with the openai client and a semaphore: the floor for any judge service here."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=judge_url, api_key="EMPTY", max_retries=0)
    slots = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with slots:
            await client.post("/chat/completions", cast_to=object, body={
                "model": "judge-model", "messages": [{"role": "user", "content": f"bare {concurrency} {i}"}]})

    await one(-1)
    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    elapsed = time.perf_counter() - started
    await client.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 32, 64])
    args = parser.parse_args()

    fake, judge_url = start_fake_judge(args.latency_ms)
    rows = []
    try:
        for concurrency in args.concurrency:
            settings = JudgeSettings(base_url=judge_url, model="judge-model", concurrency=concurrency)
            items = [{"verifier": "judge", "prompt": f"Question {i}: explain item {i}.",
                      "response": f"Answer {i}."} for i in range(args.items)]
            with LocalRewardServer(workers=1, judge=settings, log_path=os.devnull) as server:
                verify(server.url, items[:1] and [{**items[0], "prompt": "warm-up"}])  # connections, imports
                cpu_before = cpu_s(server.process.pid), cpu_s(fake.pid)  # type: ignore[union-attr]
                cold, results = verify(server.url, items)
                cpu_server = (cpu_s(server.process.pid) - cpu_before[0]) / args.items * 1000  # type: ignore[union-attr]
                cpu_fake = (cpu_s(fake.pid) - cpu_before[1]) / args.items * 1000
                bad = [r for r in results if r["status"] != "ok" or r["details"].get("cache_hit")]
                warm, again = verify(server.url, items)
                hits = sum(bool(r["details"].get("cache_hit")) for r in again)
            ideal = args.items * args.latency_ms / 1000 / concurrency
            bare = asyncio.run(bare_client_s(judge_url, args.items, concurrency))
            rows.append((concurrency, ideal, bare, cold, cold / ideal, cold / bare, len(bad), warm, hits,
                         cold / warm, cpu_server, cpu_fake))
    finally:
        fake.terminate()
        fake.wait(10)

    print(f"\nLM judge throughput: {args.items} items, scripted judge latency {args.latency_ms:g} ms, "
          f"{os.cpu_count()} CPUs (shared; other processes may be running)")
    header = (f"{'C':>4} {'ideal s':>8} {'bare client s':>14} {'olmorl s':>9} {'/ideal':>7} {'target':>7} "
              f"{'/bare':>6} {'not ok':>7} "
              f"{'re-run s':>9} {'cache hits':>11} {'speed-up':>9} {'server ms/item':>15} {'judge ms/item':>14}")
    print(header)
    print("-" * len(header))
    for c, ideal, bare, cold, ratio, vs_bare, bad, warm, hits, speedup, cpu_server, cpu_fake in rows:
        verdict = "met" if ratio <= 1.10 else "MISSED"
        print(f"{c:>4} {ideal:>8.2f} {bare:>14.2f} {cold:>9.2f} {ratio:>7.3f} {verdict:>7} {vs_bare:>6.2f} {bad:>7} "
              f"{warm:>9.3f} {hits:>11} {speedup:>8.0f}x {cpu_server:>15.2f} {cpu_fake:>14.2f}")
    print("/ideal: olmorl over the concurrency bound (target <= 1.10); /bare: olmorl over the bare client")
    print("server/judge ms/item: CPU time of the reward server / scripted judge process per item (first run)")


if __name__ == "__main__":
    main()
