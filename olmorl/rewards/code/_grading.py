"""Turning what the sandbox reported into per-test detail records and a reward.

The verdict of each test comes from the sandbox's test process, which the program cannot reach
(see `olmorl.sandbox._harness`): the server only bounds and reports it. Stdout markers never count;
a command's (other languages') exit status is what the sandbox saw from outside (`waitpid`).
"""

from __future__ import annotations

from typing import Any, Literal

from olmorl.rewards.code._tests import CompiledTest
from olmorl.sandbox import TestRun
from olmorl.sandbox._wire import normalize_output, stdout_matches

__all__ = ["grade", "normalize_output", "reward", "stdout_matches"]

TestStatus = Literal["passed", "failed", "error", "timeout"]
Compare = Literal["whitespace", "tokens", "exact"]  # how stdout is compared (see stdout_matches)
_EXCERPT = 400


def grade(test: CompiledTest, run: TestRun | None, sandbox_failure: str | None) -> dict[str, Any]:
    """One test's detail record: status, message, runtime, bounded output excerpts."""
    if run is None:
        return {"status": "error", "message": sandbox_failure or "the test did not run", "runtime_s": None}
    record: dict[str, Any] = {"status": run.status, "runtime_s": run.runtime_s}
    if run.message:
        record["message"] = run.message[:_EXCERPT]
    if run.status != "passed":
        if run.stdout:
            record["stdout"] = run.stdout[:_EXCERPT]
        if run.stderr:
            record["stderr"] = run.stderr[-_EXCERPT:]
    return record


def reward(statuses: list[str], scoring: str, threshold: float) -> float:
    if not statuses:
        return 0.0
    rate = sum(s == "passed" for s in statuses) / len(statuses)
    if scoring == "all":
        return 1.0 if rate == 1.0 else 0.0
    if scoring == "threshold":
        return rate if rate >= threshold else 0.0
    return rate
