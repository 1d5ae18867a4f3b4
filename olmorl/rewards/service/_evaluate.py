"""Standalone evaluation: score a JSONL/Parquet file in-process (or through a server) and summarize.

Rows are either olmorl items (`response`, `ground_truth`, `verifier`) or open-instruct RLVR rows
(`messages`, `ground_truth`, `dataset`) plus a response column; column names map by flags. An
open-instruct row whose `dataset`/`ground_truth` are equal-length lists is scored once per pair and
its rewards are summed, as open-instruct does.

A row is scored when every item of it came back `ok`; any other row has reward null and its status and
error in the output. Mean reward and accuracy are over scored rows only. Exit status: 0 when at least
one row was scored, 1 when none was (or no server answered), 2 for an unusable input (missing file,
missing column).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from olmorl.clients._exceptions import OlmorlError
from olmorl.rewards._models import VerifyResult
from olmorl.rewards._settings import Settings

_STATUSES = ("ok", "invalid", "timeout", "error")
_STATUS_RANK = {s: i for i, s in enumerate(_STATUSES)}


class InputError(Exception):
    """The input cannot be scored as given (missing file or column): exit 2 with this one line."""


class NothingScored(Exception):
    """No row could be scored (no server answered, or every item failed): exit 1 with this one line."""


def load_rows(path: str) -> list[dict[str, Any]]:
    """JSONL through the stdlib JSON parser (one document a line, mixed value types allowed); Parquet
    through pyarrow (the `parquet` extra)."""
    if not Path(path).is_file():
        raise InputError(f"{path}: no such file")
    if path.endswith(".parquet"):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise InputError(f"{path}: reading Parquet needs pyarrow (pip install 'olmorl[parquet]'), "
                             "or convert the file to JSONL") from None
        return pq.read_table(path).to_pylist()
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InputError(f"{path}:{number}: not valid JSON: {exc}") from None
                if not isinstance(rows[-1], dict):
                    raise InputError(f"{path}:{number}: a row must be a JSON object, not {type(rows[-1]).__name__}")
    return rows


def check_columns(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """Every row has the columns scoring reads, before any is scored: one error naming the column and its flag."""
    needed: list[tuple[tuple[str, ...], str]] = [((args.response_column,), "--response-column"), ((args.ground_truth_column,), "--ground-truth-column")]
    if not args.verifier:
        needed.append(((args.verifier_column,) if args.verifier_column else ("verifier", "dataset"),
                       "--verifier-column (or --verifier NAME for every row)"))
    for names, flag in needed:
        lacking = [number for number, row in enumerate(rows, 1) if not any(name in row for name in names)]
        if lacking:
            column = " or ".join(repr(name) for name in names)
            found = ", ".join(sorted({key for row in rows[:100] for key in row})) or "none"
            raise InputError(f"{args.file}: no column {column} in {len(lacking)} of {len(rows)} rows (first: row "
                             f"{lacking[0]}); name it with {flag}. Columns found: {found}")


def _column(row: dict[str, Any], *names: str | None) -> Any:
    for name in names:
        if name and name in row:
            return row[name]
    return None


def row_items(row: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The items of one row: one, or one per (verifier, ground truth) pair for multi-verifier rows."""
    verifier = args.verifier or _column(row, args.verifier_column, "verifier", "dataset")
    truth = row.get(args.ground_truth_column)
    prompt = _column(row, args.prompt_column, "prompt", "messages")
    base = {"response": row.get(args.response_column), "prompt": prompt}
    if isinstance(verifier, list):
        truths = truth if isinstance(truth, list) and len(truth) == len(verifier) else [truth] * len(verifier)
        return [{**base, "verifier": v, "ground_truth": t} for v, t in zip(verifier, truths)]
    return [{**base, "verifier": verifier, "ground_truth": truth}]


def combine(results: list[VerifyResult]) -> dict[str, Any]:
    """One row's score from its items' results: rewards add up, the worst status wins."""
    worst = max(results, key=lambda r: _STATUS_RANK[r.status])
    return {
        "verifier": "+".join(r.verifier for r in results),
        "reward": sum(r.reward or 0.0 for r in results) if worst.status == "ok" else None,
        "status": worst.status,
        "error": worst.error,
        "details": results[0].details if len(results) == 1 else [r.details for r in results],
    }


async def _score_batches(batches: list[list[dict[str, Any]]], args: argparse.Namespace, settings: Settings,
                         progress: Progress, task_id: Any) -> list[VerifyResult]:
    results: list[VerifyResult] = []
    if args.server:
        from olmorl.clients import AsyncRewardClient

        async with AsyncRewardClient(args.server, api_key=args.api_key, max_batch_size=args.batch_size) as client:
            for batch in batches:
                results += await client.verify(batch)
                progress.advance(task_id, len(batch))
        return results
    from olmorl.rewards.engine._engine import RewardEngine

    engine = RewardEngine(settings)
    await engine.start()
    try:
        for batch in batches:
            results += await engine.verify_batch(batch)
            progress.advance(task_id, len(batch))
    finally:
        await engine.stop()
    return results


def _by_column(result: VerifyResult, args: argparse.Namespace) -> VerifyResult:
    """An item-field error ("item: response: ...") named by the column and flag it came from."""
    for field, column, flag in (("response", args.response_column, "--response-column"),
                                ("verifier", args.verifier_column or "verifier", "--verifier-column")):
        prefix = f"item: {field}: "
        if result.error and result.error.startswith(prefix):
            return result.model_copy(update={"error": f"column {column!r} ({flag}): {result.error[len(prefix):]}"})
    return result


def run_evaluation(args: argparse.Namespace, settings: Settings) -> int:
    """Score the file and print the summary; raises InputError / NothingScored (see the module docstring)."""
    console = Console(stderr=True)
    rows = load_rows(args.file)
    if not rows:
        raise InputError(f"{args.file}: no rows")
    check_columns(rows, args)
    per_row = [row_items(row, args) for row in rows]
    flat = [item for items in per_row for item in items]
    batches = [flat[i:i + args.batch_size] for i in range(0, len(flat), args.batch_size)]

    started = time.perf_counter()
    with Progress(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console) as progress:
        task_id = progress.add_task("scoring", total=len(flat))
        try:
            results = asyncio.run(_score_batches(batches, args, settings, progress, task_id))
        except OlmorlError as exc:  # no server answered, or it refused the request: nothing was scored
            raise NothingScored(f"nothing scored: {exc}") from None
    elapsed = time.perf_counter() - started

    scored, cursor = [], 0
    for row, items in zip(rows, per_row):
        scored.append({**row, **combine([_by_column(r, args) for r in results[cursor:cursor + len(items)]])})
        cursor += len(items)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            for row in scored:
                handle.write(json.dumps(row, default=str) + "\n")
    Console(width=max(Console().width, 110)).print(summary_table(scored, args.label_column, elapsed, Path(args.file).name))
    if not any(row["status"] == "ok" for row in scored):
        worst = next(row for row in scored if row["status"] != "ok")
        raise NothingScored(f"no row could be scored ({len(scored)} rows not ok); first error: {worst['error']}")
    return 0


def summary_table(scored: list[dict[str, Any]], label_column: str, elapsed: float, title: str) -> Table:
    labelled = any(label_column in row for row in scored)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in scored:
        groups[str(row["verifier"])].append(row)
    groups["all"] = scored

    table = Table(title=f"{title}: {len(scored)} rows in {elapsed:.1f} s ({len(scored) / max(elapsed, 1e-9):.1f} rows/s)",
                  caption="mean reward and accuracy are over rows scored ok; other rows were not scored")
    for name in ("verifier", "rows", "mean reward", *_STATUSES):
        table.add_column(name, justify="left" if name == "verifier" else "right")
    if labelled:
        for name in ("accuracy", "false pos", "false neg"):
            table.add_column(name, justify="right")
    for name, group in groups.items():
        counts = {s: sum(r["status"] == s for r in group) for s in _STATUSES}
        ok = [r for r in group if r["status"] == "ok"]
        cells = [name, str(len(group)), f"{sum(r['reward'] for r in ok) / len(ok):.4f}" if ok else "-",
                 *(str(counts[s]) for s in _STATUSES)]
        if labelled:
            judged = [r for r in ok if label_column in r]
            correct = sum(bool(r[label_column]) == (r["reward"] >= 0.5) for r in judged)
            false_pos = sum(not r[label_column] and r["reward"] >= 0.5 for r in judged)
            false_neg = sum(bool(r[label_column]) and r["reward"] < 0.5 for r in judged)
            cells += [f"{correct / len(judged):.2%}", str(false_pos), str(false_neg)] if judged else ["-"] * 3
        table.add_row(*cells, end_section=name == list(groups)[-2] if len(groups) > 1 else False)
    return table
