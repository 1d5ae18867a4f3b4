"""Throughput of the `ifeval` verifier: mixed items with 1-5 constraints each (IF-RLVR shape).

Starts `olmorl-rewards serve --port P --workers W` as a subprocess, POSTs batches to /v1/verify and
prints items/s next to an in-process, single-process baseline (the verifier called in a loop) from
the same run. Target: >= 500 items/s through the server on 2 cores.

    python benchmarks/ifeval_throughput.py [--items 4000] [--batch 256] [--workers 2] [--clients 4]
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import TreeMonitor, percentile  # noqa: E402
from math_throughput import in_fresh_process  # noqa: E402

from olmorl.rewards._settings import Settings  # noqa: E402
from olmorl.rewards.instructions import CONSTRAINTS, IFEvalVerifier  # noqa: E402
from tests._ifeval_cases import CASES  # noqa: E402
from tests._ifeval_corpus import response  # noqa: E402

RLVR_SOURCES = {"ifeval", "ifbench_train"}  # what IF-RLVR samples its constraints from


def make_items(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    pool = [c for c in CASES if CONSTRAINTS[c[0]].source in RLVR_SOURCES]
    items = []
    for i in range(n):
        chosen = rng.sample(pool, rng.randint(1, 5))
        text = response(rng) if rng.random() < 0.7 else rng.choice(chosen)[2]
        gt = str([{"instruction_id": [c[0] for c in chosen], "kwargs": [c[1] or None for c in chosen]}])
        items.append({"id": str(i), "verifier": "ifeval", "response": f"<think>plan</think>{text}", "ground_truth": gt})
    return items


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_process(items: list[dict]) -> tuple[float, float]:
    """items/s and CPU seconds of the verifier in a loop in this process, warmed up as a worker is."""
    verifier = IFEvalVerifier(Settings())
    verifier.warm_up()  # steady state, as the server path (its workers warm up before serving)
    start, cpu = time.perf_counter(), time.process_time()
    for item in items:
        verifier.score(verifier.make_task(item["response"], item["ground_truth"], {}, None))
    return len(items) / (time.perf_counter() - start), time.process_time() - cpu


def through_server(items: list[dict], batch: int, workers: int,
                   clients: int) -> tuple[float, list[float], TreeMonitor]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "olmorl.rewards", "serve", "--port", str(port), "--workers", str(workers), "--log-level", "warning"],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=120) as client:
            deadline = time.time() + 60
            while True:
                try:
                    if client.get(f"{url}/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.time() > deadline:
                    raise RuntimeError("server did not become ready")
                time.sleep(0.2)
            client.post(f"{url}/v1/verify", json={"items": items[:batch]}).raise_for_status()  # warm-up
            monitor = TreeMonitor(proc.pid)
            monitor.start()
            latencies: list[float] = []
            batches = [items[i:i + batch] for i in range(0, len(items), batch)]

            def post(part: list[dict]) -> list[dict]:
                return client.post(f"{url}/v1/verify", json={"items": part}).json()["results"]

            start = time.perf_counter()
            # concurrent requests, as a trainer's scorer sends them: a worker never waits for the next batch
            with ThreadPoolExecutor(clients) as requests:
                for results in requests.map(post, batches):
                    assert all(r["status"] == "ok" for r in results), [r for r in results if r["status"] != "ok"][:2]
                    latencies += [r["elapsed_ms"] / 1000 for r in results]
            rate = len(items) / (time.perf_counter() - start)
            monitor.stop()
            return rate, latencies, monitor
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    items = make_items(args.items)
    print(f"{len(items)} items, {args.clients} concurrent requests, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (shared machine)")
    # The in-process loop runs before and after the server, so a change in the machine's load hits both.
    before, own_cpu = in_fresh_process(in_process, items)
    served, latencies, monitor = through_server(items, args.batch, args.workers, args.clients)
    after, _ = in_fresh_process(in_process, items)
    baseline = (before + after) / 2
    print(f"{'path':<52}{'items/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'CPU ms/item':>13}")
    print(f"{'in-process loop, 1 process (mean of before/after)':<52}{baseline:>9.0f}{'-':>9}{'-':>9}"
          f"{1000 * own_cpu / len(items):>13.3f}")
    print(f"{f'/v1/verify, {args.workers} workers, batch {args.batch}':<52}{served:>9.0f}"
          f"{1000 * statistics.median(latencies):>9.1f}{1000 * percentile(latencies, 0.99):>9.1f}"
          f"{1000 * monitor.cpu_s / len(items):>13.3f}")
    print(f"in-process before/after: {before:.0f}/{after:.0f} items/s; load average now {os.getloadavg()[0]:.1f}")
    print(f"server/in-process loop: {served / baseline:.2f}x (target >= 1.5x on 2 workers); "
          f"target >= 500 items/s: {'met' if served >= 500 else 'NOT met'}")


if __name__ == "__main__":
    main()
