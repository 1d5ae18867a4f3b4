"""Programs in other languages through the code verifiers and /run_code: picking the program out of
a response and reading the compile step's outcome.

A command (any language but Python) runs as its own process, so it cannot answer the test process's
requests: its test is judged in the sandbox's test process from what is seen from outside (the
zygote's `waitpid` status, the captured stdout), which the program cannot forge (see `_harness`).
"""

from __future__ import annotations

import re
from typing import Any

from olmorl.sandbox import Language, TestRun

_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
COMPILE_ERROR_CHARS = 2000
BUILD_INDEX = -1  # the TestRun of a compiled program's build step


def extract_source(response: str, lang: Language) -> str:
    """The last fenced block tagged with one of `lang`'s fence tags (or untagged) after removing
    <think> blocks; else the whole text."""
    text = _strip_think(response)
    head, sep, tail = text.rpartition("</think>")
    text = tail if sep else text
    tags = {"", *lang.fences}
    blocks = [body for tag, body in fenced_blocks(text) if tag.strip().lower() in tags]
    return blocks[-1] if blocks else text


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Every (tag, body) of a fenced block, as `re.findall(r"```([^\\n`]*)\\n(.*?)```", text, re.DOTALL)` finds
    them, with `str.find`: the regex tried its closing fence at every character of a body (18 us of a HumanEval
    item's ~650 characters, ~2 ms of a 64 kB response), `find` scans for it in C."""
    blocks, pos = [], 0
    while (start := text.find("```", pos)) != -1:
        # the tag: up to the line's end, with no backtick in it (else no block opens here: try one character on)
        tick = text.find("`", start + 3)
        newline = text.find("\n", start + 3, len(text) if tick == -1 else tick)
        if newline == -1:
            pos = start + 1
            continue
        end = text.find("```", newline + 1)
        if end == -1:  # no closing fence: none opens later either
            break
        blocks.append((text[start + 3:newline], text[newline + 1:end]))
        pos = end + 3
    return blocks


def _strip_think(text: str) -> str:
    """Remove each `<think>` ... first following `</think>` (as a lazy regex would), in linear time:
    a regex retries every unclosed `<think>` to the end of the text (quadratic)."""
    kept, pos, start = [], 0, None
    for tag in _THINK_TAG.finditer(text):
        if not tag.group(1):
            if start is None:
                start = tag.start()
        elif start is not None:
            kept.append(text[pos:start])
            pos, start = tag.end(), None
    kept.append(text[pos:])
    return "".join(kept)


def split_build(runs: list[TestRun]) -> tuple[TestRun | None, list[TestRun]]:
    """(the build step's run or None, the tests' runs)."""
    build = next((r for r in runs if r.index == BUILD_INDEX), None)
    return build, [r for r in runs if r.index != BUILD_INDEX]


def compile_error(build: TestRun | None, compile_timeout_s: float) -> str | None:
    """Why the build failed (the compiler's own words, bounded), or None when it succeeded."""
    if build is None or build.status == "passed":
        return None
    if build.timed_out:
        return f"compilation did not finish within {compile_timeout_s:g} s"
    if build.signal is not None:
        return f"the compiler was killed by signal {build.signal} (memory or process limit?)\n{build.stderr}"[
            :COMPILE_ERROR_CHARS]
    if build.exit_code != 0:
        text = (build.stderr + ("\n" + build.stdout if build.stdout else "")).strip()
        return (text or f"the compiler exited with status {build.exit_code}")[-COMPILE_ERROR_CHARS:]
    return (build.message or "the build failed")[:COMPILE_ERROR_CHARS]  # e.g. it produced no program


def compile_details(build: TestRun | None, error: str | None) -> dict[str, Any]:
    """Detail fields about the build step, for a result's `details`."""
    if build is None:
        return {}
    details: dict[str, Any] = {"compile_s": build.runtime_s}
    if error is not None:
        details["compile_error"] = error
    return details
