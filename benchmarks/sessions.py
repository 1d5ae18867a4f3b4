"""Session API: tool-call latency (p50/p99) and sessions opened+closed per second, against baselines
measured in the same run on the same server.

Latency, one client call at a time over HTTP (keep-alive), `--calls` calls each:
- HTTP floor: GET /healthz (what any round trip costs);
- stateless sandbox run: POST /run_code of the same cell (a fresh fork in a warm code sandbox; no state);
- python tool call: POST /v1/sessions/{id}/tool `print(x)` in a persistent sandboxed interpreter;
- text tool call: `reply` of an ifeval_multiturn session (one IFEval check in the worker pool).
Throughput, `--concurrency` clients at once, `--sessions` sessions each kind:
- open+close of ifeval_multiturn sessions (no process) and of python sessions (a sandbox each).

Run: python benchmarks/sessions.py [--calls 300] [--sessions 200] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

import httpx

from olmorl.clients import AsyncSessionClient, SessionClient
from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import SandboxSettings, SessionSettings

TURNS = {"turns": [{"prompt": "Describe a cat.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [None]}] * 2}


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def interleaved(calls: dict[str, object], n: int, rounds: int = 10) -> dict[str, list[float]]:
    """`n` timed calls per path, in rounds that alternate the paths so all see the same machine load."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for call in calls.values():
        call()  # warm
    for _ in range(rounds):
        for name, call in calls.items():
            for _ in range(max(n // rounds, 1)):
                started = time.perf_counter()
                call()
                samples[name].append(time.perf_counter() - started)
    return samples


def latency(url: str, n: int) -> dict[str, list[float]]:
    with httpx.Client(base_url=url, timeout=60) as http, SessionClient(url) as client:
        body = {"code": "x = 1\nprint(x)", "language": "python"}
        python = client.open("python", {"ground_truth": "1"})
        python.call("python", code="x = 1")
        texts = iter([client.open("ifeval_multiturn", TURNS) for _ in range(n + 1)])  # first turn of each
        try:
            return interleaved({
                "HTTP floor (GET /healthz)": lambda: http.get("/healthz").raise_for_status(),
                "stateless sandbox run (/run_code)": lambda: http.post("/run_code", json=body).raise_for_status(),
                "python tool call (persistent)": lambda: python.call("python", code="print(x)"),
                "text tool call (ifeval_multiturn)": lambda: next(texts).call("reply", response="a cat"),
            }, n)
        finally:
            python.close()


async def open_close_rate(url: str, env: str, task: dict, count: int, concurrency: int) -> float:
    slots = asyncio.Semaphore(concurrency)

    async def one(client: AsyncSessionClient) -> None:
        async with slots:
            session = await client.open(env, task)
            await session.close()

    async with AsyncSessionClient(url, max_connections=concurrency * 2) as client:
        await one(client)
        started = time.perf_counter()
        await asyncio.gather(*(one(client) for _ in range(count)))
        return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    state = tempfile.mkdtemp(prefix="olmorl-bench-sessions-")
    with LocalRewardServer(workers=1, sandbox=SandboxSettings(parallelism=1),
                           sessions=SessionSettings(max_sandboxed=args.concurrency, max_calls=args.calls + 10,
                                                    idle_ttl_s=30, state_dir=state)) as server:
        rows = latency(server.url, args.calls)
        floor = statistics.median(rows["HTTP floor (GET /healthz)"])
        print(f"\nTool-call latency, {args.calls} sequential calls each (ms)")
        print(f"{'path':<38} {'p50':>8} {'p99':>8} {'p50 / HTTP floor':>17}")
        for name, samples in rows.items():
            p50, p99 = percentiles(samples)
            print(f"{name:<38} {p50:>8.2f} {p99:>8.2f} {statistics.median(samples) / floor:>16.1f}x")
        text_rate = asyncio.run(open_close_rate(server.url, "ifeval_multiturn", TURNS, args.sessions, args.concurrency))
        python_rate = asyncio.run(open_close_rate(server.url, "python", {"ground_truth": "1"},
                                                  max(args.sessions // 4, 10), args.concurrency))
        print(f"\nSessions opened and closed per second, {args.concurrency} at once")
        print(f"{'environment':<38} {'sessions/s':>10} {'vs text':>8}")
        print(f"{'ifeval_multiturn (no process)':<38} {text_rate:>10.1f} {1.0:>7.2f}x")
        print(f"{'python (one sandbox each)':<38} {python_rate:>10.1f} {python_rate / text_rate:>7.2f}x")


if __name__ == "__main__":
    main()
