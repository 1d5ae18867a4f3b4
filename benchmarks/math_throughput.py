"""Throughput and latency of the `math` verifier through the reward server, against the same verifier called
in a loop in one process (the section-0 goal: server >= 1.5x that on 2 workers) and math-verify called
in-process (its default settings).

Each round makes new items, starts a new `olmorl-rewards serve --port P --workers W` subprocess (so no cache
of an earlier round helps) and has several concurrent clients POST batches of 64-512 items to /v1/verify.
Around it, in fresh interpreters on the same items: the verifier in a loop in one process (before and after
the server, so a change in the machine's load hits both), and in two processes at once on halves split by
ground truth, which is what this machine gives two workers with nothing between them. Items are a realistic mix (integers,
fractions, decimals, radicals, expressions needing SymPy, sets/tuples, letters; right and wrong; CoT-length
responses) with ~2% adversarial items. Reports items/s per round, p50/p99 request latency (each item counted
with the wall-clock time of the request that carried it: queue + work; `elapsed_ms` is the item's own time)
and the server's peak RSS (server + its worker processes). math-verify runs on the last round's
first 1,000 items (it does ~20 items/s). Targets: >= 2x math-verify's items/s on 2 cores, p99 < 1 s.

    python benchmarks/math_throughput.py [--items 4000] [--rounds 3] [--clients 4] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import TreeMonitor, one_loop, percentile, two_loops  # noqa: E402

from olmorl.rewards.service._local import free_port, wait_until_ready  # noqa: E402

FILLER = [
    "First, let me restate the problem in my own words and list the given quantities. ",
    "We know that the total is {a} and that each part is {b} more than the previous one. ",
    "Multiplying, {a} \\cdot {b} = {ab}, and subtracting {b} gives {abb}. ",
    "Let's double-check with a small case: if n = 2 the formula gives {c}, which matches. ",
    "By the quadratic formula, $x = \\frac{{-b \\pm \\sqrt{{b^2-4ac}}}}{{2a}}$, and here the discriminant is {c}. ",
    "Now consider the constraint modulo {b}; the remainder must be {r}. ",
]


def _cot(rng: random.Random) -> str:
    a, b, c = rng.randint(2, 999), rng.randint(2, 99), rng.randint(1, 500)
    parts = [rng.choice(FILLER).format(a=a, b=b, ab=a * b, abb=a * b - b, c=c, r=a % b) for _ in range(rng.randint(6, 20))]
    paragraphs = ["".join(parts[i:i + 3]) for i in range(0, len(parts), 3)]
    return "\n\n".join(paragraphs) + "\n\n"


def _case(rng: random.Random) -> tuple[str, str]:
    """(answer as written, reference) for one realistic item; about a quarter are wrong."""
    kind = rng.random()
    n, m = rng.randint(2, 9999), rng.randint(2, 99)
    wrong = rng.random() < 0.25
    if kind < 0.45:
        return str(n + wrong), str(n)
    if kind < 0.58:
        return f"\\frac{{{n}}}{{{m}}}", f"\\frac{{{n + wrong}}}{{{m}}}"
    if kind < 0.66:
        value = n / 100
        return f"{value:.2f}", f"{value + wrong:.2f}"
    if kind < 0.72:
        return f"{m}\\sqrt{{{2 + (n % 7)}}}", f"\\sqrt{{{m * m * (2 + (n % 7) + wrong)}}}"
    if kind < 0.80:
        return f"x^2 + {2 * m}x + {m * m}", f"(x+{m + wrong})^2"
    if kind < 0.85:
        return f"({n}, {m})", f"({n}, {m + wrong})"
    if kind < 0.89:
        return f"x = {m} \\text{{ or }} x = -{n}", f"{m}, -{n + wrong}"
    if kind < 0.93:
        letter = "ABCDE"[n % 5]
        return f"\\textbf{{({letter})}}", "ABCDE"[(n + wrong) % 5]
    if kind < 0.96:
        return f"{n}\\%", f"{n + wrong}"
    return f"\\frac{{{m}\\pi}}{{{n}}}", f"\\frac{{{m + wrong}\\pi}}{{{n}}}"


ADVERSARIAL = [
    lambda rng: ("The answer is $\\boxed{10^{10^{10}}}$.", "1"),
    lambda rng: ("The answer is $\\boxed{10**10**10}$.", "1"),
    lambda rng: ("The answer is $\\boxed{2^{2^{2^{2^{2^{2}}}}}}$.", "4"),
    lambda rng: (f"The answer is $\\boxed{{{rng.randint(10**5, 10**6)}!}}$.", "5"),
    lambda rng: ("x " * 50_000, "3"),
    lambda rng: (" ".join(f"\\boxed{{{i}}}" for i in range(rng.randint(1000, 3000))), "7"),
    lambda rng: ("The answer is \\boxed{" + "{(" * rng.randint(100, 300), "1"),
    lambda rng: ("The answer is $\\boxed{" + "(" * 30 + "x+" * 30 + "1}$", "1"),
]
ANCHORS = ["Therefore, the answer is $\\boxed{{{}}}$.", "**Final Answer**\n\n$$\\boxed{{{}}}$$",
           "Final Answer: The final answer is ${}$. I hope it is correct.", "Answer: ${}$", "#### {}"]


ADVERSARIAL_IDS: set[str] = set()


def make_items(n: int, adversarial_rate: float = 0.02, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    items = []
    for i in range(n):
        if rng.random() < adversarial_rate:
            response, gt = rng.choice(ADVERSARIAL)(rng)
            ADVERSARIAL_IDS.add(str(i))
        else:
            answer, gt = _case(rng)
            response = _cot(rng) + rng.choice(ANCHORS).format(answer)
        items.append({"id": str(i), "verifier": "math", "response": response, "ground_truth": gt})
    return items


# -- math-verify in-process ----------------------------------------------------------------------------

def math_verify_run(items: list[dict]) -> tuple[float, list[float]]:
    from math_verify import parse, verify

    latencies = []
    start = time.perf_counter()
    for item in items:
        t0 = time.perf_counter()
        try:
            gold = parse(f"${item['ground_truth']}$")
            verify(gold, parse(item["response"]))
        except Exception:
            pass
        latencies.append(time.perf_counter() - t0)
    return len(items) / (time.perf_counter() - start), latencies


# -- the server ----------------------------------------------------------------------------------------

async def _client(client: httpx.AsyncClient, url: str, batches: list[list[dict]], latencies: list[float],
                  statuses: dict) -> None:
    for batch in batches:
        sent = time.perf_counter()
        reply = await client.post(f"{url}/v1/verify", json={"items": batch})
        reply.raise_for_status()
        request_s = time.perf_counter() - sent
        for result in reply.json()["results"]:
            latencies.append(request_s)
            statuses[result["status"]] = statuses.get(result["status"], 0) + 1


async def _timed_clients(url: str, per_client: list[list[list[dict]]], latencies: list[float],
                         statuses: dict) -> float:
    """Seconds for the clients to send all their batches. Each client is built and connected first, as a
    trainer's is once per run: building an httpx client costs 15-60 ms of CPU, which the server's cores would
    otherwise spend on the benchmark."""
    clients = [httpx.AsyncClient(timeout=600) for _ in per_client]
    try:
        await asyncio.gather(*(client.get(f"{url}/healthz") for client in clients))
        start = time.perf_counter()
        await asyncio.gather(*(_client(client, url, batches, latencies, statuses)
                               for client, batches in zip(clients, per_client)))
        return time.perf_counter() - start
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))


def server_run(items: list[dict], workers: int, clients: int,
               seed: int = 1) -> tuple[float, list[float], dict, TreeMonitor]:
    port = free_port()
    server = subprocess.Popen(
        ["olmorl-rewards", "serve", "--port", str(port), "--workers", str(workers), "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(url, server, 120)
        # Warm the workers (imports, parser) outside the measurement.
        httpx.post(f"{url}/v1/verify", json={"items": make_items(32, 0, seed=99)}, timeout=120).raise_for_status()
        rng = random.Random(seed)
        batches, i = [], 0
        while i < len(items):
            size = rng.randint(64, 512)
            batches.append(items[i:i + size])
            i += size
        per_client = [batches[k::clients] for k in range(clients)]
        latencies: list[float] = []
        statuses: dict[str, int] = {}
        monitor = TreeMonitor(server.pid)
        monitor.start()
        elapsed = asyncio.run(_timed_clients(url, per_client, latencies, statuses))
        monitor.stop()
        return len(items) / elapsed, latencies, statuses, monitor
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=4000, help="items per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each on new items and a new server")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    console = Console(width=140)
    console.print(f"{args.rounds} rounds of {args.items} items, {args.clients} clients, batches of 64-512, "
                  f"{args.workers} workers, {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")
    rounds = Table(title="math: server vs the verifier in a loop (each round: new items, new server)")
    for column in ("round", "1 loop items/s (before/after)", "2 loops items/s", "server items/s",
                   "server p99 request ms",
                   "server / 1 loop", "server / 2 loops"):
        rounds.add_column(column, justify="right")
    ratios = []
    for round_ in range(args.rounds):
        ADVERSARIAL_IDS.clear()
        items = make_items(args.items, seed=round_)
        # The one-process loop runs before and after the server, so a change in the machine's load hits both.
        before = one_loop("math", items)
        srv_rate, srv_lat, statuses, monitor = server_run(items, args.workers, args.clients)
        after = one_loop("math", items)
        pair = two_loops("math", items)
        own_rate = 2 * len(items) / (before[0] + after[0])
        ratios.append(srv_rate / own_rate)
        rounds.add_row(str(round_ + 1), f"{own_rate:.0f} ({len(items) / before[0]:.0f}/{len(items) / after[0]:.0f})",
                       f"{pair:.0f}", f"{srv_rate:.0f}", f"{1000 * percentile(srv_lat, 0.99):.0f}",
                       f"{srv_rate / own_rate:.2f}x", f"{srv_rate / pair:.2f}x")
    console.print(rounds)
    mv_rate, mv_lat = math_verify_run(items[:1000])
    table = Table(title=f"last round in detail ({len(ADVERSARIAL_IDS)} adversarial items)")
    for column in ("system", "items/s", "p50 ms", "p99 ms", "max ms", "CPU ms/item", "peak RSS MiB"):
        table.add_column(column, justify="right" if column != "system" else "left")
    table.add_row(f"olmorl server, {args.workers} workers, POST /v1/verify (latency: queue + work)",
                  f"{srv_rate:.0f}", f"{1000 * statistics.median(srv_lat):.1f}",
                  f"{1000 * percentile(srv_lat, 0.99):.1f}", f"{1000 * max(srv_lat):.0f}",
                  f"{1000 * monitor.cpu_s / len(items):.2f}", f"{monitor.peak_rss / 2**20:.0f}")
    own_lat = before[2]
    table.add_row("olmorl verifier in a loop, 1 process (latency: work per item)",
                  f"{own_rate:.0f}", f"{1000 * statistics.median(own_lat):.1f}",
                  f"{1000 * percentile(own_lat, 0.99):.1f}", f"{1000 * max(own_lat):.0f}",
                  f"{1000 * before[1] / len(items):.2f}", "-")
    table.add_row("math-verify in-process, 1 process (first 1,000 items)", f"{mv_rate:.0f}", f"{1000 * statistics.median(mv_lat):.1f}",
                  f"{1000 * percentile(mv_lat, 0.99):.1f}", f"{1000 * max(mv_lat):.0f}", "-", "-")
    console.print(table)
    console.print(f"server statuses (last round): {statuses}; load average now {os.getloadavg()[0]:.1f}")
    console.print(f"server / 1 loop, median of {len(ratios)} rounds = {statistics.median(ratios):.2f}x "
                  f"(target >= 1.5x on 2 workers; rounds: {', '.join(f'{r:.2f}' for r in ratios)}); "
                  f"server / math-verify = {srv_rate / mv_rate:.2f}x (target >= 2x)")


if __name__ == "__main__":
    main()
