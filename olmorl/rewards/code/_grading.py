"""Turning what the sandbox reported into per-test statuses and a reward.

A test passes only on positive evidence: the harness's completion frame plus, for every decomposed
assert, probe values that satisfy the check evaluated here. Exit status and stdout markers never count.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from olmorl.rewards.code._outside import OutsideError, evaluate, values_equal
from olmorl.rewards.code._tests import CompiledTest
from olmorl.sandbox import TestRun, decode_value

TestStatus = Literal["passed", "failed", "error", "timeout"]
Compare = Literal["whitespace", "tokens", "exact"]  # how stdout is compared (see stdout_matches)
_EXCERPT = 400


def grade(test: CompiledTest, run: TestRun | None, sandbox_failure: str | None,
          float_tolerance: float | None, compare: Compare = "whitespace") -> dict[str, Any]:
    """One test's detail record: status, message, runtime, bounded output excerpts."""
    if run is None:
        return {"status": "error", "message": sandbox_failure or "the test did not run", "runtime_s": None}
    status, message = _status(test, run, float_tolerance, compare)
    record: dict[str, Any] = {"status": status, "runtime_s": run.runtime_s}
    if message:
        record["message"] = message[:_EXCERPT]
    if status != "passed":
        if run.stdout:
            record["stdout"] = run.stdout[:_EXCERPT]
        if run.stderr:
            record["stderr"] = run.stderr[-_EXCERPT:]
    return record


def _status(test: CompiledTest, run: TestRun, tol: float | None,
            compare: Compare = "whitespace") -> tuple[TestStatus, str | None]:
    if run.timed_out:
        return "timeout", "the test ran past its time limit"
    frames = run.frames
    for frame in frames:
        if "program_error" in frame:
            return "error", f"the program raised {frame['program_error']}"
    if test.expected_stdout is not None:
        return _stdio_status(test.expected_stdout, run, frames, tol, compare)
    site_values: dict[int, list[Any]] = {}
    done = False
    for frame in frames:
        if "site" in frame and isinstance(frame.get("values"), list):
            site_values.setdefault(frame["site"], frame["values"])  # the first report of a site counts
        elif "failed" in frame:
            return "failed", str(frame["failed"])
        elif "error" in frame:
            return "error", str(frame["error"])
        elif frame.get("done") is True:
            done = True
    if test.is_function:
        return _function_status(test.expected_value, site_values.get(0), done, tol)
    for site_id, site in test.sites.items():
        raw = site_values.get(site_id)
        if raw is None:
            return "error", f"no result for `{site.source}`"
        try:
            ok = evaluate(site, [decode_value(v) for v in raw], tol)
        except (OutsideError, ValueError, TypeError, ArithmeticError, IndexError, KeyError) as exc:
            return "error", f"`{site.source}`: {type(exc).__name__}: {exc}"
        if not ok:
            return "failed", f"`{site.source}` is false"
    if not done:
        return "error", _unfinished(run)
    return "passed", None


def _unfinished(run: TestRun) -> str:
    if run.signal:
        return f"the test process was killed by signal {run.signal} before the test finished"
    return "the test process exited before the test finished (exit/os._exit?)"


def _stdio_status(expected: str, run: TestRun, frames: list[dict[str, Any]],
                  tol: float | None, compare: Compare = "whitespace") -> tuple[TestStatus, str | None]:
    done = next((f for f in frames if f.get("done") is True), None)
    if done is None:
        return "error", _unfinished(run)
    if done.get("exit") not in (0, None):
        return "error", f"the program exited with status {done.get('exit')}"
    if run.stdout_truncated:
        return "failed", "output exceeded the limit"
    if stdout_matches(run.stdout, expected, tol, compare):
        return "passed", None
    return "failed", "wrong output"


def normalize_output(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def stdout_matches(actual: str, expected: str, tol: float | None = None, compare: Compare = "whitespace") -> bool:
    """whitespace: lines compared without trailing whitespace, trailing blank lines dropped; tokens: the
    whitespace-separated tokens compared (line breaks and runs of spaces alike, as most judges' default
    checkers do); exact: byte for byte. A float tolerance compares number tokens within it."""
    if compare == "exact":
        return actual == expected
    if compare == "tokens":
        actual, expected = " ".join(actual.split()), " ".join(expected.split())
    got, want = normalize_output(actual), normalize_output(expected)
    if got == want:
        return True
    if tol is None or len(got) != len(want):
        return False
    for line_got, line_want in zip(got, want):
        tokens_got, tokens_want = line_got.split(), line_want.split()
        if len(tokens_got) != len(tokens_want):
            return False
        for a, b in zip(tokens_got, tokens_want):
            if a == b:
                continue
            try:
                x, y = float(a), float(b)
            except ValueError:
                return False
            if not (math.isfinite(x) and math.isfinite(y) and math.isclose(x, y, rel_tol=tol, abs_tol=tol)):
                return False
    return True


def _function_status(expected: Any, raw: list[Any] | None, done: bool,
                     tol: float | None) -> tuple[TestStatus, str | None]:
    if raw is None or len(raw) != 1:
        return "error", "no return value was reported"
    try:
        value = decode_value(raw[0])
    except (ValueError, TypeError) as exc:
        return "error", f"unreadable return value: {exc}"
    if not done:
        return "error", "the call did not finish"
    # APPS/TACO conventions: tuples compare as lists; an expected value may be wrapped in a list.
    if isinstance(value, tuple):
        value = list(value)
    if values_equal(value, expected, tol):
        return "passed", None
    if isinstance(expected, list) and len(expected) == 1 and values_equal(value, expected[0], tol):
        return "passed", None
    return "failed", "wrong return value"


def reward(statuses: list[str], scoring: str, threshold: float) -> float:
    if not statuses:
        return 0.0
    rate = sum(s == "passed" for s in statuses) / len(statuses)
    if scoring == "all":
        return 1.0 if rate == 1.0 else 0.0
    if scoring == "threshold":
        return rate if rate >= threshold else 0.0
    return rate
