"""The `sql` verifier (text-to-SQL, BIRD/Spider style): the response's query and the reference query run on
the same SQLite database, read-only and time-limited, in the code sandbox; the result sets are compared
on the server (see `_compare`)."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, Json, JsonValue

from olmorl.rewards.engine._registry import InvalidInput, ItemError, Score, Task, current_request, register
from olmorl.rewards._settings import Settings
from olmorl.rewards.code import SandboxVerifier
from olmorl.rewards.sql._compare import extract_query, orders_result, results_match
from olmorl.sandbox import TestInput

RUNNER = (Path(__file__).parent / "_runner.py").read_text()
_SQLITE_HEADER = b"SQLite format 3\x00"
_EXCERPT_ROWS = 5
_SETUP_S = 10.0  # the sandbox run's allowance beyond the two queries' limits: start-up and building the database
_CACHE_BYTES = 256 << 20  # database files kept (base64) in the server's memory, least recently used dropped


class SqlGroundTruth(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    query: str = Field(min_length=1, description="the reference query (one SELECT statement)")
    schema_sql: str | None = Field(default=None, alias="schema",
                                   description="CREATE statements of the database (run as one script)")
    rows: dict[str, list[list[JsonValue] | dict[str, JsonValue]]] | None = Field(
        default=None, description="rows to insert after the schema: table -> rows, each a list of values in "
                                  "column order or an object column -> value")
    database: str | None = Field(default=None, description="instead of schema and rows: a SQLite file, as a "
                                                           "path relative to the server's sql.data_dir")


@register
class SqlVerifier(SandboxVerifier):
    name = "sql"
    aliases = ("text2sql", "text_to_sql")
    description = ("Text-to-SQL: the response's query (last ```sql block, else the text) and the reference run on "
                   "a SQLite database (schema + rows, or a file in sql.data_dir), read-only and time-limited, in "
                   "the sandbox; reward 1 when the result sets match (as multisets; in order when the reference "
                   "has a top-level ORDER BY; numbers within 1e-6 relative).")
    ground_truth_type = SqlGroundTruth | Json[SqlGroundTruth]  # the object, or a string holding it (datasets)

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._files: OrderedDict[tuple[str, int, int], str] = OrderedDict()
        self._files_lock = threading.Lock()  # items read files on several threads at once

    def make_task(self, response: str, ground_truth: Any, options: dict[str, Any], prompt: Any) -> Task:
        task = super().make_task(response, ground_truth, options, prompt)
        truth: SqlGroundTruth = task.ground_truth
        if (truth.database is None) == (truth.schema_sql is None):
            raise InvalidInput("ground_truth: give either `schema` (with optional `rows`) or `database`, not "
                               f"{'both' if truth.database is not None else 'neither'}")
        if truth.rows is not None and truth.schema_sql is None:
            raise InvalidInput("ground_truth.rows needs a `schema` that creates their tables")
        if truth.database is not None:
            self._database_path(truth.database)  # an unusable file is this item's fault: `invalid` now
        return task

    def _database_path(self, name: str) -> Path:
        data_dir = self.settings.sql.data_dir
        if not data_dir:
            raise InvalidInput("ground_truth.database names a file, but the server has no sql.data_dir "
                               "(OLMORL_SQL_DATA_DIR)")
        root = Path(data_dir).resolve()
        path = (root / name).resolve()
        if not path.is_relative_to(root):
            raise InvalidInput(f"ground_truth.database {name!r} is outside sql.data_dir")
        if not path.is_file():
            raise InvalidInput(f"ground_truth.database {name!r}: no such file in sql.data_dir")
        wal = path.with_name(path.name + "-wal")
        if wal.is_file() and wal.stat().st_size > 0:  # rows the main file does not hold yet: the sandbox gets only it
            raise InvalidInput(f"ground_truth.database {name!r} has a non-empty write-ahead log beside it; "
                               "checkpoint it first (PRAGMA wal_checkpoint(TRUNCATE))")
        size = path.stat().st_size
        if size > self.settings.sql.max_database_mb << 20:
            raise InvalidInput(f"ground_truth.database {name!r} has {size >> 20} MiB; the limit is "
                               f"{self.settings.sql.max_database_mb} MiB (sql.max_database_mb)")
        return path

    def _database_b64(self, name: str) -> str:
        """The file's bytes, base64; cached by path, size and mtime, so an edited file is read afresh."""
        path = self._database_path(name)
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        with self._files_lock:
            if key in self._files:
                self._files.move_to_end(key)
                return self._files[key]
        with open(path, "rb") as file:  # read-only; the sandbox gets a copy, never the file
            data = file.read()
        if not data.startswith(_SQLITE_HEADER):
            raise InvalidInput(f"ground_truth.database {name!r} is not a SQLite 3 database file")
        encoded = base64.b64encode(data).decode("ascii")
        with self._files_lock:
            self._files[key] = encoded
            while sum(len(v) for v in self._files.values()) > _CACHE_BYTES and len(self._files) > 1:
                self._files.popitem(last=False)
        return encoded

    async def score_async(self, task: Task) -> Score:
        if self.pool is None:
            raise self.unavailable_error()
        truth: SqlGroundTruth = task.ground_truth
        candidate = extract_query(task.response)
        if not candidate:
            return Score(0.0, {"reason": "no_query"})
        sql = self.settings.sql
        # each result gets half the sandbox's output cap, less room for the JSON around them
        request: dict[str, Any] = {"queries": [truth.query, candidate], "timeout_s": sql.query_timeout_s,
                                   "max_rows": sql.max_rows, "max_result_bytes": self.settings.sandbox.max_output_bytes // 2 - 256,
                                   "schema": truth.schema_sql, "rows": truth.rows, "database": None}
        if truth.database is not None:
            request["database"] = await asyncio.to_thread(self._database_b64, truth.database)
        stdin = await asyncio.to_thread(json.dumps, request)
        timeout = min(2 * sql.query_timeout_s + _SETUP_S, self.settings.sandbox.max_test_timeout_s)
        runs, failure = await self.pool.run(RUNNER, [TestInput(stdin=stdin)], timeout, owner=current_request.get())
        in_sandbox_s = sum(run.runtime_s for run in runs)
        if failure is not None or not runs:
            raise ItemError("error", f"sql sandbox run failed: {failure}", {"reason": "sandbox"}, in_sandbox_s)
        run = runs[0]
        try:
            if run.status != "passed":
                raise ValueError(run.message)
            report = json.loads(run.stdout)
        except ValueError as exc:
            raise ItemError("error", f"sql run {run.status}: {exc}", {"reason": "sandbox", "stderr": run.stderr[-400:]},
                            in_sandbox_s) from None
        return _judge(report, truth, candidate, in_sandbox_s)


def _judge(report: dict[str, Any], truth: SqlGroundTruth, candidate: str, elapsed_s: float) -> Score:
    if "setup_error" in report:
        raise InvalidInput(f"ground_truth: the database could not be built: {report['setup_error']}")
    reference, answer = report["results"]
    if "error" in reference:
        message = f"the reference query failed: {reference['error']}"
        if reference["kind"] in ("timeout", "too_many_rows", "too_large"):  # this server's limits, not a wrong truth
            raise ItemError("error", message, {"reason": "reference_" + reference["kind"]}, elapsed_s)
        raise InvalidInput(f"ground_truth.query: {message}")
    details: dict[str, Any] = {"query": candidate[:2000], "ordered": orders_result(truth.query),
                               "reference_rows": len(reference["rows"])}
    if "error" in answer:  # the model's fault: status ok, reward 0, the error said
        reason = {"error": "sql_error"}.get(answer["kind"], answer["kind"])
        return Score(0.0, {**details, "reason": reason, "error": answer["error"][:2000]}, elapsed_s=elapsed_s)
    matched = results_match(reference["rows"], answer["rows"], details["ordered"])
    details.update(candidate_rows=len(answer["rows"]), reason=None if matched else "mismatch")
    if not matched:
        details.update(reference_excerpt=reference["rows"][:_EXCERPT_ROWS],
                       candidate_excerpt=answer["rows"][:_EXCERPT_ROWS])
    return Score(float(matched), details, elapsed_s=elapsed_s)
