"""Session calls one request each vs batched: client CPU and latency of a burst of python sessions.

Each burst: `--sessions` python sessions from a full warm pool, each opened, one tool call, verified. Singles:
every session's calls are their own requests, all sessions at once (AsyncSessionClient.open / call / verify,
what the trainer sent before batching). Batched: one open_many, one call_many, one verify_many. Reports the
client thread's CPU per burst (the cost a trainer's multi-turn loop pays under the interpreter lock), the
burst's wall time and the mean latency of each kind of call as a client sees it (a batched call's latency is its
request's). The arms alternate, `--repeats` each, each burst starting with the pool full.

Run: python benchmarks/session_batches.py [--sessions 64 --repeats 4]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time

import httpx

from olmorl.clients import AsyncSessionClient
from olmorl.rewards.service._local import LocalRewardServer

TASK = {"verifier": "math", "ground_truth": "3"}


def ready(url: str) -> int:
    return httpx.get(f"{url}/readyz", timeout=5).json()["sessions"]["warm_interpreters_ready"]


async def burst(client: AsyncSessionClient, n: int, batched: bool) -> tuple[float, float, dict[str, float]]:
    """(client CPU s, wall s, mean client latency ms by kind) of one burst of n sessions."""
    latency: dict[str, list[float]] = {"open": [], "tool": [], "verify": []}

    async def timed(kind: str, call):
        start = time.perf_counter()
        out = await call
        latency[kind].append(time.perf_counter() - start)
        return out

    cpu, began = time.thread_time(), time.perf_counter()
    if batched:
        sessions = await timed("open", client.open_many([{"env": "python", "task": TASK}] * n))
        await timed("tool", client.call_many([(s, "python", {"code": "print(1 + 2)"}) for s in sessions]))
        await timed("verify", client.verify_many([(s, "\\boxed{3}") for s in sessions]))
    else:
        async def one() -> None:
            session = await timed("open", client.open("python", TASK))
            await timed("tool", session.call("python", code="print(1 + 2)"))
            await timed("verify", session.verify("\\boxed{3}"))

        await asyncio.gather(*(one() for _ in range(n)))
    return time.thread_time() - cpu, time.perf_counter() - began, \
        {kind: statistics.mean(v) * 1000 for kind, v in latency.items()}


async def run(url: str, n: int, repeats: int) -> None:
    async with AsyncSessionClient(url, max_connections=512) as client:
        for batched in (False, True):  # warm-up: connections open, as from a trainer's second step
            await burst(client, n, batched)
        print("| arm (load at start) | client CPU ms per burst | wall ms | open ms | tool ms | verify ms |")
        print("|---|---|---|---|---|---|")
        for _ in range(repeats):
            for batched in (False, True):
                while ready(url) < n:
                    await asyncio.sleep(0.2)
                load = os.getloadavg()[0]
                cpu, wall, mean = await burst(client, n, batched)
                print(f"| {'batched' if batched else 'one request each'} ({load:.1f}) | {cpu * 1000:.0f} "
                      f"| {wall * 1000:.0f} | {mean['open']:.0f} | {mean['tool']:.0f} | {mean['verify']:.0f} |",
                      flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=4)
    args = ap.parse_args()
    log = os.path.join(tempfile.mkdtemp(prefix="olmorl-batches-"), "server.log")
    server = LocalRewardServer(log_path=log, extra_env={"OLMORL_SESSIONS_WARM_INTERPRETERS": str(args.sessions),
                                                        "OLMORL_SESSIONS_WARM_MAX_STARTING": "4"}).start()
    try:
        while ready(server.url) < args.sessions:
            time.sleep(0.5)
        print(f"{os.cpu_count()} cores; {args.sessions} python sessions a burst, each opened, one tool call, verified")
        asyncio.run(run(server.url, args.sessions, args.repeats))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
