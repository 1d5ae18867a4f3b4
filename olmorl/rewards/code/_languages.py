"""Programs in other languages through the code verifiers and /run_code: picking the program out of
a response, reading the compile step's outcome, and making a command's test runs gradable.

A command (any language but Python) runs as its own process, so it cannot send the harness frames:
the evidence is what the zygote saw from outside (its `waitpid` status, the captured stdout), which
the program cannot forge. `as_graded` turns that into the same completion record a Python test
reports, so one grader (`_grading.grade`) scores both.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from olmorl.sandbox import Language, TestRun

_FENCE = re.compile(r"```([^\n`]*)\n(.*?)```", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
COMPILE_ERROR_CHARS = 2000
BUILD_INDEX = -1  # the TestRun of a compiled program's build step


def extract_source(response: str, lang: Language) -> str:
    """The last fenced block tagged with one of `lang`'s fence tags (or untagged) after removing
    <think> blocks; else the whole text."""
    text = _THINK.sub("", response)
    head, sep, tail = text.rpartition("</think>")
    text = tail if sep else text
    tags = {"", *lang.fences}
    blocks = [body for tag, body in _FENCE.findall(text) if tag.strip().lower() in tags]
    return blocks[-1] if blocks else text


def split_build(runs: list[TestRun]) -> tuple[TestRun | None, list[TestRun]]:
    """(the build step's run or None, the tests' runs)."""
    build = next((r for r in runs if r.index == BUILD_INDEX), None)
    return build, [r for r in runs if r.index != BUILD_INDEX]


def compile_error(build: TestRun | None, compile_timeout_s: float) -> str | None:
    """Why the build failed (the compiler's own words, bounded), or None when it succeeded."""
    if build is None:
        return None
    if build.timed_out:
        return f"compilation did not finish within {compile_timeout_s:g} s"
    if build.signal is not None:
        return f"the compiler was killed by signal {build.signal} (memory or process limit?)\n{build.stderr}"[
            :COMPILE_ERROR_CHARS]
    if build.exit_code != 0:
        text = (build.stderr + ("\n" + build.stdout if build.stdout else "")).strip()
        return (text or f"the compiler exited with status {build.exit_code}")[-COMPILE_ERROR_CHARS:]
    return None


def as_graded(run: TestRun) -> TestRun:
    """A command's run with the zygote's view of its exit as the completion record: exited (with its
    status) or not (killed by a signal: no record, so the grader reports the signal)."""
    frames = [{"done": True, "exit": run.exit_code}] if run.exit_code is not None else []
    return dataclasses.replace(run, frames=frames)


def compile_details(build: TestRun | None, error: str | None) -> dict[str, Any]:
    """Detail fields about the build step, for a result's `details`."""
    if build is None:
        return {}
    details: dict[str, Any] = {"compile_s": build.runtime_s}
    if error is not None:
        details["compile_error"] = error
    return details
