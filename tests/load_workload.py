"""A mixed reward workload with known answers, driven by many concurrent clients; shared by the load
correctness test (tests/test_load.py) and the load benchmark (benchmarks/load.py).

Every item's expected status and reward is known when it is made, so a run can check that each item
came back exactly once, in order, with the right score. The judge items carry a `[[fake: json N]]`
marker that the scripted OpenAI server (tests/fake_openai.py) answers with score N.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olmorl.clients import AsyncRewardClient

IFEVAL_LOWER = json.dumps({"instruction_id": ["change_case:english_lowercase"], "kwargs": [None]})
FAMILIES = ("math", "code", "ifeval", "judge", "string_match")


@dataclass(frozen=True)
class Case:
    item: dict[str, Any]
    family: str
    reward: float


def make_case(index: int, rng: random.Random, families: tuple[str, ...] = FAMILIES) -> Case:
    family = families[index % len(families)]
    right = rng.random() < 0.5
    tag = f"{index}"
    if family == "math":
        a, b = rng.randint(1, 999), rng.randint(1, 999)
        shown = a + b if right else a + b + 1
        item = {"verifier": "math", "prompt": f"{a}+{b}?", "response": f"So it is $\\boxed{{{shown}}}$.",
                "ground_truth": str(a + b)}
    elif family == "code":
        k = index + 1
        op = "+" if right else "-"
        item = {"verifier": "code", "response": f"```python\ndef f(x):\n    return x {op} {k}\n```",
                "ground_truth": [f"assert f(1) == {1 + k}", f"assert f(2) == {2 + k}"]}
    elif family == "ifeval":
        text = f"all lower case, item {tag}." if right else f"Not Lower Case, item {tag}."
        item = {"verifier": "ifeval", "prompt": "Answer in lower case.", "response": text,
                "ground_truth": IFEVAL_LOWER}
    elif family == "judge":
        score = rng.randint(1, 10)
        item = {"verifier": "judge", "prompt": f"Question {tag}?", "response": f"Answer {tag}. [[fake: json {score}]]"}
        return Case({**item, "id": tag}, family, (score - 1) / 9)
    else:
        item = {"verifier": "string_match", "response": f"<answer>{tag if right else 'no'}</answer>",
                "ground_truth": tag}
    return Case({**item, "id": tag}, family, 1.0 if right else 0.0)


def make_cases(count: int, seed: int = 0, families: tuple[str, ...] = FAMILIES) -> list[Case]:
    rng = random.Random(seed)
    return [make_case(i, rng, families) for i in range(count)]


@dataclass
class LoadReport:
    elapsed_s: float
    items: int
    wrong: list[str] = field(default_factory=list)  # human-readable mismatches (empty when all is well)
    item_ms: dict[str, list[float]] = field(default_factory=dict)  # server elapsed_ms per family
    request_ms: list[float] = field(default_factory=list)  # client round trip per request
    peak_rss_mb: float = 0.0
    rss_samples_mb: list[float] = field(default_factory=list)


async def run_load(urls: list[str], cases: list[Case], *, clients: int = 64, batch_size: int = 32,
                   server_pids: list[int] | None = None, timeout: float = 300.0) -> LoadReport:
    """`clients` concurrent clients, each sending its share of `cases` in batches of `batch_size`, one
    request at a time, over its own AsyncRewardClient (round-robin across `urls`); checks every answer."""
    shares = [cases[c::clients] for c in range(clients)]
    report = LoadReport(0.0, len(cases), item_ms={f: [] for f in FAMILIES})
    sampling = asyncio.Event()

    async def sample_rss() -> None:
        while not sampling.is_set():
            report.rss_samples_mb.append(sum(tree_rss_mb(pid) for pid in server_pids or []))
            await asyncio.sleep(0.25)

    async def one_client(share: list[Case]) -> None:
        async with AsyncRewardClient(urls, timeout=timeout, max_batch_size=batch_size, max_concurrency=1,
                                     on_error="zero") as client:
            for start in range(0, len(share), batch_size):
                chunk = share[start:start + batch_size]
                began = time.perf_counter()
                results = await client.verify([case.item for case in chunk])
                report.request_ms.append((time.perf_counter() - began) * 1000)
                if len(results) != len(chunk):
                    report.wrong.append(f"sent {len(chunk)} items, got {len(results)} results")
                for case, result in zip(chunk, results):
                    if result.id != case.item["id"]:
                        report.wrong.append(f"item {case.item['id']} answered as {result.id}: out of order")
                    elif result.status != "ok" or abs((result.reward or 0.0) - case.reward) > 1e-9:
                        report.wrong.append(f"item {case.item['id']} ({case.family}): expected {case.reward}, got "
                                            f"{result.status} {result.reward} {result.error or ''}".strip())
                    report.item_ms[case.family].append(result.elapsed_ms)

    sampler = asyncio.create_task(sample_rss())
    began = time.perf_counter()
    await asyncio.gather(*(one_client(share) for share in shares if share))
    report.elapsed_s = time.perf_counter() - began
    sampling.set()
    await sampler
    report.peak_rss_mb = max(report.rss_samples_mb, default=0.0)
    return report


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, in MiB (0 for a process that is gone)."""
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) / 1024
            for task in os.listdir(f"/proc/{current}/task"):
                stack += [int(child) for child in Path(f"/proc/{current}/task/{task}/children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, StopIteration):
            continue
    return total


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def request_codes(metrics_text: str) -> dict[str, float]:
    """HTTP status code -> requests answered with it, from a server's /metrics."""
    import re

    codes: dict[str, float] = {}
    for code, value in re.findall(r'olmorl_requests_total{[^}]*code="(\d+)"[^}]*} (\S+)', metrics_text):
        codes[code] = codes.get(code, 0.0) + float(value)
    return codes
