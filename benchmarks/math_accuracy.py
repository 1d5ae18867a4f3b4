"""Accuracy of the `math` verifier on the hand-labelled development set, side by side with math-verify.

    python benchmarks/math_accuracy.py [--data benchmarks/data/math_dev.jsonl] [--split dev|heldout|all]

Prints, per category, accuracy / false positives / false negatives for olmorl and for math-verify
(`math_verify.parse` + `verify` on the same response and reference), then totals per split.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from olmorl.rewards.engine._registry import InvalidInput, load_verifiers
from olmorl.rewards._settings import Settings

DATA = Path(__file__).parent / "data" / "math_dev.jsonl"


def load_rows(path: Path = DATA) -> list[dict]:
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


def olmorl_grader():
    verifier = load_verifiers()["math"](Settings())

    def grade(response: str, ground_truth: str, prompt: str | None = None) -> bool:
        task = verifier.make_task(response, ground_truth, {}, prompt)
        try:
            return verifier.score(task).reward > 0.5
        except InvalidInput:  # a reference the verifier cannot parse earns no reward: a reject, not a crash
            return False

    return grade


def math_verify_grader():
    from math_verify import parse, verify

    def grade(response: str, ground_truth: str, prompt: str | None = None) -> bool:  # math-verify reads no prompt
        try:
            # Give math-verify its best shot at the reference: LaTeX extraction wants delimiters.
            delimited = "$" in ground_truth or "\\boxed" in ground_truth
            gold = parse(ground_truth if delimited else f"${ground_truth}$") or parse(ground_truth)
            pred = parse(response)
            return bool(verify(gold, pred))
        except Exception:
            return False

    return grade


class Tally:
    def __init__(self) -> None:
        self.n = self.correct = self.fp = self.fn = self.negatives = 0

    def add(self, label: bool, predicted: bool) -> None:
        self.n += 1
        self.negatives += not label
        self.correct += predicted == label
        self.fp += predicted and not label
        self.fn += label and not predicted

    def cells(self) -> list[str]:
        acc = 100.0 * self.correct / self.n if self.n else 0.0
        return [f"{acc:.1f}", str(self.fp), str(self.fn)]


def evaluate(rows: list[dict], graders: dict) -> dict[str, dict[str, dict[str, Tally]]]:
    """split -> category -> grader -> Tally (split 'all' included; category 'TOTAL' included)."""
    result: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(Tally)))
    for row in rows:
        for name, grade in graders.items():
            predicted = grade(row["response"], row["ground_truth"])
            for split in (row.get("split", "dev"), "all"):
                for category in (row["category"], "TOTAL"):
                    result[split][category][name].add(row["label"], predicted)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--no-math-verify", action="store_true", help="olmorl only")
    args = parser.parse_args()
    rows = load_rows(args.data)
    graders = {"olmorl": olmorl_grader()}
    if not args.no_math_verify:
        graders["math-verify"] = math_verify_grader()
    started = time.perf_counter()
    result = evaluate(rows, graders)
    console = Console()
    for split in ("dev", "heldout", "all"):
        if split not in result:
            continue
        table = Table(title=f"math accuracy — split {split}")
        table.add_column("category")
        table.add_column("n", justify="right")
        for name in graders:
            table.add_column(f"{name} acc%", justify="right")
            table.add_column("FP", justify="right")
            table.add_column("FN", justify="right")
        categories = sorted(c for c in result[split] if c != "TOTAL") + ["TOTAL"]
        for category in categories:
            tallies = result[split][category]
            first = next(iter(tallies.values()))
            cells = [category, str(first.n)]
            for name in graders:
                cells += tallies[name].cells()
            table.add_row(*cells, end_section=category == categories[-2])
        console.print(table)
        for name in graders:
            total = result[split]["TOTAL"][name]
            console.print(
                f"  {name:12s} accuracy {100 * total.correct / total.n:.2f}%  FP {total.fp} "
                f"({100 * total.fp / total.n:.2f}% of cases, {100 * total.fp / max(total.negatives, 1):.2f}% of "
                f"{total.negatives} negatives)  FN {total.fn}"
            )
    console.print(f"{len(rows)} rows graded in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
