"""Session API: tool-call latency (p50/p99) and sessions opened+closed per second, against baselines
measured in the same run on the same server.

Latency, one client call at a time over HTTP (keep-alive), `--calls` calls each:
- HTTP floor: GET /healthz (what any round trip costs);
- stateless sandbox run: POST /run_code of the same cell (a fresh fork in a warm code sandbox; no state);
- python tool call: POST /v1/sessions/{id}/tool `print(x)` in a persistent sandboxed interpreter;
- text tool call: `reply` of an ifeval_multiturn session (one IFEval check in the worker pool).
Throughput, `--concurrency` clients at once, `--sessions` sessions each kind:
- open+close of ifeval_multiturn sessions (no process) and of python sessions (a sandbox each).
Session open time, one open at a time (`--opens` each; the session is closed untimed after each):
- python with warm interpreters (`warm_interpreters`, the default 2): the pool refilled before each open, and
  back to back (the next open while the refill of the last runs);
- python with no pool (`warm_interpreters=0`, a second server in the same run): each open starts a sandbox;
- ifeval_multiturn (no process): the floor of an open over HTTP.
It also reports the memory (PSS) of an idle warm interpreter, read from the live sandbox records.

Run: python benchmarks/sessions.py [--calls 300] [--sessions 200] [--concurrency 16] [--opens 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from olmorl.clients import AsyncSessionClient, SessionClient
from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import SandboxSettings, SessionSettings
from olmorl.sandbox._memory import process_tree_bytes

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


def warm_ready(http: httpx.Client) -> int:
    return http.get("/readyz").json()["sessions"]["warm_interpreters_ready"]


def server_open_s(http: httpx.Client, env: str) -> tuple[float, float]:
    """(sum of seconds, count) of the server's own open time of `env` sessions so far (its histogram)."""
    total = count = 0.0
    for line in http.get("/metrics").text.splitlines():
        if line.startswith("olmorl_session_open_duration_seconds_") and f'env="{env}"' in line:
            if line.startswith("olmorl_session_open_duration_seconds_sum"):
                total = float(line.rsplit(" ", 1)[1])
            elif line.startswith("olmorl_session_open_duration_seconds_count"):
                count = float(line.rsplit(" ", 1)[1])
    return total, count


def open_times(url: str, env: str, task: dict, n: int, refilled: bool) -> tuple[list[float], float]:
    """Seconds per open (the client's round trip), one at a time, and the server's own mean (its histogram);
    `refilled`: wait for a full pool first."""
    samples = []
    with SessionClient(url) as client, httpx.Client(base_url=url, timeout=60) as http:
        full = warm_ready(http) if refilled else 0
        client.open(env, task).close()  # warm the connection
        total, count = server_open_s(http, env)
        for _ in range(n):
            if refilled:
                deadline = time.monotonic() + 30
                while warm_ready(http) < full and time.monotonic() < deadline:
                    time.sleep(0.01)
            started = time.perf_counter()
            session = client.open(env, task)
            samples.append(time.perf_counter() - started)
            session.close()
        total_after, count_after = server_open_s(http, env)
    return samples, (total_after - total) / max(count_after - count, 1)


def warm_interpreter_mib(state_dir: str) -> list[float]:
    """PSS of each live sandbox (the idle warm interpreters when no session is open), from their records."""
    pids = [json.loads(p.read_text())["pid"] for p in Path(state_dir).glob("*.json")]
    return [process_tree_bytes(pid) / 2**20 for pid in pids if os.path.exists(f"/proc/{pid}")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--opens", type=int, default=100)
    args = parser.parse_args()
    python_task = {"ground_truth": "1"}
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
        time.sleep(2)  # the pool refills after the burst
        memory = warm_interpreter_mib(state)
        opens = {"python, warm pool (refilled before each)": open_times(server.url, "python", python_task,
                                                                         args.opens, refilled=True),
                 "python, warm pool (back to back)": open_times(server.url, "python", python_task, args.opens,
                                                                refilled=False),
                 "ifeval_multiturn (no process)": open_times(server.url, "ifeval_multiturn", TURNS, args.opens,
                                                             refilled=False)}
    cold_state = tempfile.mkdtemp(prefix="olmorl-bench-sessions-")
    with LocalRewardServer(workers=1, sandbox=SandboxSettings(parallelism=1),
                           sessions=SessionSettings(max_sandboxed=args.concurrency, warm_interpreters=0,
                                                    state_dir=cold_state)) as cold:
        opens["python, no pool (warm_interpreters=0)"] = open_times(cold.url, "python", python_task, args.opens,
                                                                    refilled=False)
    print(f"\nSession open time, {args.opens} opens one at a time (ms): the client's round trip, the server's own")
    print(f"{'path':<44} {'p50':>8} {'p99':>8} {'server mean':>12}")
    for name, (samples, server_s) in opens.items():
        p50, p99 = percentiles(samples)
        print(f"{name:<44} {p50:>8.2f} {p99:>8.2f} {server_s * 1000:>12.2f}")
    if memory:
        print(f"\nIdle warm interpreter memory (PSS): {', '.join(f'{m:.1f}' for m in memory)} MiB")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
