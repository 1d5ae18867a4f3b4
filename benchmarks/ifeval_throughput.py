"""Throughput of the `ifeval` verifier: mixed items with 1-5 constraints each (IF-RLVR shape).

Starts `olmorl-rewards serve --port P --workers W` as a subprocess, POSTs batches to /v1/verify and
prints items/s next to the verifier called in a loop, in one process and in two at once on halves split by
ground truth (what this machine gives two workers with nothing between them), on the same items. Each round
makes new items and starts a new server. Targets: server >= 1.5x the one-process loop on 2 workers (section 0 of the
scale-out work) and >= 500 items/s on 2 cores.

    python benchmarks/ifeval_throughput.py [--items 16000] [--rounds 3] [--batch 256] [--workers 2] [--clients 4]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import TreeMonitor, one_loop, percentile, two_loops  # noqa: E402

from olmorl.rewards.service._local import free_port, wait_until_ready  # noqa: E402
from olmorl.rewards.instructions import CONSTRAINTS  # noqa: E402
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


def through_server(items: list[dict], batch: int, workers: int,
                   clients: int) -> tuple[float, list[float], TreeMonitor]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "olmorl.rewards", "serve", "--port", str(port), "--workers", str(workers), "--log-level", "warning"],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(url, proc, 60)
        with httpx.Client(timeout=120) as client:
            client.post(f"{url}/v1/verify", json={"items": items[:batch]}).raise_for_status()  # warm-up
            monitor = TreeMonitor(proc.pid)
            monitor.start()
            latencies: list[float] = []
            batches = [items[i:i + batch] for i in range(0, len(items), batch)]

            def post(part: list[dict]) -> list[dict]:
                sent = time.perf_counter()
                results = client.post(f"{url}/v1/verify", json={"items": part}).json()["results"]
                return [{**r, "request_s": time.perf_counter() - sent} for r in results]

            start = time.perf_counter()
            # concurrent requests, as a trainer's scorer sends them: a worker never waits for the next batch
            with ThreadPoolExecutor(clients) as requests:
                for results in requests.map(post, batches):
                    assert all(r["status"] == "ok" for r in results), [r for r in results if r["status"] != "ok"][:2]
                    latencies += [r["request_s"] for r in results]  # request latency, counted per item
            rate = len(items) / (time.perf_counter() - start)
            monitor.stop()
            return rate, latencies, monitor
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=16000, help="items per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each on new items and a new server")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    print(f"{args.rounds} rounds of {args.items} items, {args.clients} concurrent requests of {args.batch}, "
          f"{args.workers} workers, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"{'round':>5}{'1 loop items/s (before/after)':>32}{'2 loops':>9}{'server':>9}"
          f"{'req p50 ms':>11}{'req p99 ms':>11}"
          f"{'CPU ms/item 1 loop':>20}{'server':>8}{'server/1 loop':>15}{'server/2 loops':>16}")
    ratios = []
    for round_ in range(args.rounds):
        items = make_items(args.items, seed=round_)
        # The one-process loop runs before and after the server, so a change in the machine's load hits both.
        before = one_loop("ifeval", items)
        served, latencies, monitor = through_server(items, args.batch, args.workers, args.clients)
        after = one_loop("ifeval", items)
        pair = two_loops("ifeval", items)
        baseline = 2 * len(items) / (before[0] + after[0])
        ratios.append(served / baseline)
        loop_rates = f"{baseline:.0f} ({len(items) / before[0]:.0f}/{len(items) / after[0]:.0f})"
        print(f"{round_ + 1:>5}{loop_rates:>32}{pair:>9.0f}{served:>9.0f}{1000 * statistics.median(latencies):>11.1f}"
              f"{1000 * percentile(latencies, 0.99):>11.1f}{1000 * before[1] / len(items):>20.3f}"
              f"{1000 * monitor.cpu_s / len(items):>8.3f}{served / baseline:>14.2f}x{served / pair:>15.2f}x")
    print(f"load average now {os.getloadavg()[0]:.1f}")
    print(f"server / 1 loop, median of {len(ratios)} rounds: {statistics.median(ratios):.2f}x (target >= 1.5x on "
          f"2 workers; rounds: {', '.join(f'{r:.2f}' for r in ratios)}); target >= 500 items/s: "
          f"{'met' if served >= 500 else 'NOT met'}")


if __name__ == "__main__":
    main()
