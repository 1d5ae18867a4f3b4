"""The short closing after a program's output block (tool-integrated reasoning): `Janet has 18 apples left.`,
`Four containers were imported on the second day.`, and a closing that opens with the count the program printed,
its other numbers givens (`3.0`, then `Three trucks will be needed to transport 80 flagstones in one trip.`)."""

from __future__ import annotations

import re

from olmorl.rewards.math._question_echo import COUNT_WORDS, ENDED_RE

_OUTPUT_BLOCK_END_RE = re.compile(r"```output\b.*?```", re.DOTALL)
_TOOL_CLOSING_CHARS = 500
_WORKING_RE = re.compile(r"\b(?:wait|wrong|error|mistake|incorrect|fix|let me|let's|retry|again|try)\b", re.IGNORECASE)
DENIAL_RE = re.compile(r"\b(?:not|never|cannot|no)\b|n't", re.IGNORECASE)
# The counted noun is plural: regular ("containers") or irregular ("Ten men can stay upright on the wave.").
_OPENING_COUNT_RE = re.compile(
    r"^\W*(\d+|[A-Za-z]+)\s+(?!of\b)(?:[a-z]+s|(?:wo)?men|people|children|feet|teeth|geese|mice)\b")
_OUTPUT_VALUE_RE = re.compile(r"\A```output[ \t]*\n\s*(\d+(?:\.0+)?)\s*```")  # a program that printed one count
_TAIL_BLOCK_WORDS_RE = re.compile(r"\b(?:if|unless|or|but|than|more|less|fewer|at least|at most)\b", re.IGNORECASE)


def worded_count(sentence: str) -> tuple[tuple[str, ...], str | None] | None:
    """"Four containers were imported on the second day." after a program's output: the sentence opens with its
    count in words (two to twenty, then a plural noun, not "of"), its only number; no hedge, denial or condition."""
    opened = opening_count(sentence)
    if opened is None or opened.group(1).isdigit() or _count(opened) in ("0", "1") or not _plain_closing(sentence):
        return None
    return (_count(opened),), None


def opening_count(sentence: str) -> re.Match[str] | None:
    """The count a sentence opens with, in digits or words, before a plural noun ("Three trucks ...")."""
    opened = _OPENING_COUNT_RE.match(sentence)
    return opened if opened and (opened.group(1).isdigit() or opened.group(1).lower() in COUNT_WORDS) else None


def printed_count(opened: re.Match[str], sentence: str, body: str) -> str | None:
    """"Three trucks will be needed to transport 80 flagstones in one trip." after a program printed `3.0`: the
    closing opens with the count the program printed, so its other numbers are givens."""
    printed = _OUTPUT_VALUE_RE.search(body[body.rfind("```output"):])
    if printed is None or not _plain_closing(sentence):
        return None
    return _count(opened) if float(_count(opened)) == float(printed.group(1)) else None


def _count(opened: re.Match[str]) -> str:
    return opened.group(1) if opened.group(1).isdigit() else COUNT_WORDS[opened.group(1).lower()]


def _plain_closing(sentence: str) -> bool:
    """A finished sentence with no denial, condition, alternative or comparison in it."""
    return bool(ENDED_RE.search(sentence)) and not DENIAL_RE.search(sentence) and not _TAIL_BLOCK_WORDS_RE.search(sentence)


def after_tool_output(body: str) -> bool:
    """Whether the response ends with a short closing right after a program's output block."""
    start = body.rfind("```output", max(0, len(body) - 4000))
    if start < 0:
        return False
    block = _OUTPUT_BLOCK_END_RE.match(body, start)
    if block is None or not 0 < len(body) - block.end() <= _TOOL_CLOSING_CHARS:
        return False
    closing = body[block.end():]
    # "That is wrong, let me fix the code: x = 5." goes on working; it does not conclude.
    return "```" not in closing and not _WORKING_RE.search(closing)
