"""What a composite item costs over its components sent alone (goal: <= 5% extra).

One reward server; each round sends the same N rows twice, in alternating order: as N `composite` items of
four components (math, format, overlong, repetition), and as the 4N component items alone in one request
(their rewards summed client-side, as a trainer without composites does). Every row's math answer is new in
every round, so no cache of an earlier round helps either mode. Reports per mode the median and p90 seconds per
batch and the server's mean CPU seconds (server + workers) per batch, the overhead of the composite on each, and the
machine's load average (a shared machine: compare modes within a run, not across runs).

    python benchmarks/composite_overhead.py [--rows 512] [--rounds 7] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import TreeMonitor, percentile  # noqa: E402

from olmorl.rewards.service._local import LocalRewardServer  # noqa: E402

FILLER = "Let me work through this step by step, checking each partial result before going on. "


def components(answer: int, reference: int) -> list[dict]:
    return [{"verifier": "math", "ground_truth": str(reference)},
            {"verifier": "format", "options": {"layout": "think_answer"}, "weight": 0.2},
            {"verifier": "overlong", "options": {"max_tokens": 4096, "buffer_tokens": 1024}},
            {"verifier": "repetition", "options": {"ngram_size": 3, "max_penalty": -0.5}}]


def rows(n: int, seed: int) -> list[tuple[str, int, list[dict]]]:
    rng = random.Random(seed)
    made = []
    for _ in range(n):
        reference = rng.randrange(10**6)
        answer = reference if rng.random() < 0.5 else reference + 1
        response = f"<think>{FILLER * rng.randrange(2, 30)}</think>\n<answer>\\boxed{{{answer}}}</answer>"
        made.append((response, rng.randrange(100, 5000), components(answer, reference)))
    return made


def composite_items(batch: list[tuple[str, int, list[dict]]]) -> list[dict]:
    return [{"verifier": "composite", "response": response, "completion_tokens": tokens, "ground_truth": parts}
            for response, tokens, parts in batch]


def separate_items(batch: list[tuple[str, int, list[dict]]]) -> list[dict]:
    return [{"verifier": part["verifier"], "response": response, "completion_tokens": tokens,
             "ground_truth": part.get("ground_truth"), "options": part.get("options", {})}
            for response, tokens, parts in batch for part in parts]


def timed(client: httpx.Client, url: str, items: list[dict], monitor: TreeMonitor) -> tuple[float, float, list]:
    cpu_before, started = monitor.cpu_now(), time.perf_counter()
    reply = client.post(f"{url}/v1/verify", json={"items": items})
    wall = time.perf_counter() - started
    reply.raise_for_status()
    results = reply.json()["results"]
    assert all(r["status"] == "ok" for r in results), [r for r in results if r["status"] != "ok"][:1]
    return wall, monitor.cpu_now() - cpu_before, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    walls: dict[str, list[float]] = {"composite": [], "separate": []}
    cpus: dict[str, list[float]] = {"composite": [], "separate": []}
    with LocalRewardServer(workers=args.workers, max_items_per_request=args.rows * 4) as server, \
            httpx.Client(timeout=600) as client:
        assert server.process is not None
        monitor = TreeMonitor(server.process.pid)
        monitor.start()
        timed(client, server.url, composite_items(rows(16, -1)), monitor)  # warm-up: first requests pay imports
        for round_ in range(args.rounds):
            modes = ["composite", "separate"] if round_ % 2 == 0 else ["separate", "composite"]
            for mode in modes:
                batch = rows(args.rows, seed=round_ * 2 + (mode == "separate"))
                items = composite_items(batch) if mode == "composite" else separate_items(batch)
                wall, cpu, _ = timed(client, server.url, items, monitor)
                walls[mode].append(wall)
                cpus[mode].append(cpu)
        monitor.stop()
    table = Table(title=f"composite vs components alone: {args.rows} rows x 4 components, {args.rounds} rounds, "
                        f"{args.workers} workers, {os.cpu_count()} CPUs")
    for column in ("mode", "items per batch", "median s", "p90 s", "server CPU s (mean)"):
        table.add_column(column, justify="right")
    for mode in ("separate", "composite"):
        table.add_row(mode, str(args.rows * (4 if mode == "separate" else 1)), f"{statistics.median(walls[mode]):.3f}",
                      f"{percentile(walls[mode], 0.9):.3f}", f"{statistics.fmean(cpus[mode]):.3f}")
    console = Console()
    console.print(table)
    wall_extra = statistics.median(walls["composite"]) / statistics.median(walls["separate"]) - 1
    cpu_extra = sum(cpus["composite"]) / sum(cpus["separate"]) - 1  # CPU ticks are 10 ms: totals, not medians
    console.print(f"composite overhead: wall {wall_extra:+.1%}, server CPU {cpu_extra:+.1%} (goal <= +5%); "
                  f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after (shared machine)")


if __name__ == "__main__":
    main()
