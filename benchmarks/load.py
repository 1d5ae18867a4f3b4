"""Load benchmark: a mixed stream (math, code, IF, judge, string match) from many concurrent clients.

    python benchmarks/load.py                      # 10,000 items, 64 clients, then 1 vs 2 replicas
    python benchmarks/load.py --items 2000 --scaling-items 1000

Part 1 runs `--items` items from `--clients` concurrent AsyncRewardClients against one reward server
(`--workers` worker processes) whose judge is the scripted OpenAI server (tests/fake_openai.py, run as
its own process with `--judge-latency-ms` per call). It checks that every item came back exactly once,
in order, with its expected reward, that no request got a 5xx, and samples the server's RSS (process
tree). It prints items/s, request round trips, and per-verifier item times (server-side `elapsed_ms`: each
item's own time where it ran, queueing excluded).

Part 2 runs the same kind of workload (`--scaling-items`) against one server and then against two
servers behind the client's round-robin, same settings each, and prints the ratio; one server is the
baseline. On a machine with few cores the replicas compete for the same CPUs, so expect little gain.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import httpx

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from load_workload import (  # noqa: E402
    FAMILIES,
    LoadReport,
    make_cases,
    percentile,
    request_codes,
    run_load,
    tree_rss_mb,
)

from olmorl.rewards.service._local import LocalRewardServer  # noqa: E402
from olmorl.rewards._settings import JudgeSettings  # noqa: E402


def start_fake_judge(latency_ms: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, str(TESTS / "fake_openai.py"), "--latency-ms", str(latency_ms)],
                               stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline() if process.stdout else ""
    if not line.startswith("READY "):
        process.kill()
        raise RuntimeError(f"fake judge did not start: {line!r}")
    return process, line.split()[1]


def run_against(replicas: int, args: argparse.Namespace, judge_url: str, count: int,
                seed: int) -> tuple[LoadReport, list[dict[str, float]], float]:
    """One run on fresh servers: the report, each server's request codes, and the idle RSS before."""
    judge = JudgeSettings(base_url=judge_url, model="judge-model", concurrency=args.judge_concurrency)
    with ExitStack() as stack:
        logs = Path(tempfile.mkdtemp(prefix="olmorl-load-"))
        servers = [stack.enter_context(LocalRewardServer(workers=args.workers, judge=judge,
                                                         log_path=str(logs / f"server-{n}.log")))
                   for n in range(replicas)]
        pids = [s.process.pid for s in servers]
        idle_rss = sum(tree_rss_mb(pid) for pid in pids)
        report = asyncio.run(run_load([s.url for s in servers], make_cases(count, seed=seed), clients=args.clients,
                                      batch_size=args.batch_size, server_pids=pids))
        codes = [request_codes(httpx.get(f"{s.url}/metrics").text) for s in servers]
    return report, codes, idle_rss


def describe(report: LoadReport, codes: list[dict[str, float]]) -> list[str]:
    answered = sum(len(v) for v in report.item_ms.values())
    five_xx = sum(v for served in codes for code, v in served.items() if code.startswith("5"))
    return [f"items answered {answered}/{report.items}, wrong or out of order {len(report.wrong)}, "
            f"5xx responses {five_xx:g}"] + [f"  e.g. {w}" for w in report.wrong[:5]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32, help="items per request of each client")
    parser.add_argument("--workers", type=int, default=2, help="worker processes per server")
    parser.add_argument("--judge-latency-ms", type=float, default=50.0)
    parser.add_argument("--judge-concurrency", type=int, default=64)
    parser.add_argument("--scaling-items", type=int, default=4000, help="0 skips the replica comparison")
    args = parser.parse_args()

    fake_judge, judge_url = start_fake_judge(args.judge_latency_ms)
    failed = False
    try:
        print(f"## Mixed load: {args.items} items ({', '.join(FAMILIES)}), {args.clients} clients, batches of "
              f"{args.batch_size}, 1 server x {args.workers} workers, judge latency {args.judge_latency_ms:g} ms")
        report, codes, idle_rss = run_against(1, args, judge_url, args.items, seed=0)
        for line in describe(report, codes):
            print(line)
        failed |= bool(report.wrong) or any(c.startswith("5") for served in codes for c in served)
        print(f"throughput {report.items / report.elapsed_s:.1f} items/s over {report.elapsed_s:.1f} s; request "
              f"round trip p50 {percentile(report.request_ms, 50):.0f} ms, p99 {percentile(report.request_ms, 99):.0f} ms")
        samples = report.rss_samples_mb
        print(f"server RSS (process tree): idle {idle_rss:.0f} MiB, peak {report.peak_rss_mb:.0f} MiB, "
              f"last {samples[-1] if samples else float('nan'):.0f} MiB")
        print()
        print("| verifier | items | p50 ms | p99 ms | max ms |")
        print("|---|---:|---:|---:|---:|")
        for family, values in report.item_ms.items():
            print(f"| {family} | {len(values)} | {percentile(values, 50):.1f} | {percentile(values, 99):.1f} | "
                  f"{max(values, default=float('nan')):.1f} |")

        if args.scaling_items:
            print()
            print(f"## Replica scaling: {args.scaling_items} items, {args.clients} clients, "
                  f"each server {args.workers} workers")
            rates = {}
            print("| replicas | items/s | request p99 ms | check |")
            print("|---:|---:|---:|---|")
            for replicas in (1, 2):
                run, run_codes, _ = run_against(replicas, args, judge_url, args.scaling_items, seed=replicas)
                rates[replicas] = run.items / run.elapsed_s
                ok = not run.wrong and not any(c.startswith("5") for served in run_codes for c in served)
                failed |= not ok
                print(f"| {replicas} | {rates[replicas]:.1f} | {percentile(run.request_ms, 99):.0f} | "
                      f"{'all answered, in order' if ok else describe(run, run_codes)[0]} |")
            print(f"scaling ratio (2 replicas / 1, baseline 1 replica): {rates[2] / rates[1]:.2f}x")
    finally:
        fake_judge.terminate()
        fake_judge.wait(10)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
