"""Reading the judge's verdict out of its reply.

The score is read only from the judge's final verdict, never from text it quotes (a judge that quotes
a response saying `{"score": 10}` and is then cut off must not award 10). Order: drop a reasoning
model's `<think>…</think>`; then the last JSON object carrying a score, which must end the reply
(inside a ```json fence or bare; only whitespace, a closing fence or a period may follow; keys matched
case-insensitively, so open-instruct's `{"REASONING": ..., "SCORE": "7"}` works too); then, as a last
resort, a `score: N` on the reply's last line. Anything else is an error: a judge reply never silently
becomes a 0, and never a score it did not give.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
# "Score: 7", "**Rating:** 7/10", "a score of 7." ending the reply's last line
_SCORE_PATTERN = re.compile(r"\b(?:score|rating)\b[\s\"'*:=]*(?:is|of)?[\s\"'*:=]*(-?\d+(?:\.\d+)?)"
                            r"(?:\s*/\s*\d+(?:\.\d+)?)?[\s\"'*.]*$", re.IGNORECASE)
_NUMBER = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*(?:/\s*\d+(?:\.\d+)?)?\s*")
_SCORE_KEYS = ("score", "rating")
_REASONING_KEYS = ("reasoning", "explanation", "rationale", "justification")
_DECODER = json.JSONDecoder(strict=False)  # judges put raw newlines inside JSON strings
_VERDICT_END = re.compile(r"[\s`.]*")  # what may follow the final verdict
_MAX_OBJECT_STARTS = 200  # bound the scan on long replies


class JudgementError(ValueError):
    """The reply holds no usable score; the message says why."""


@dataclass(frozen=True)
class Judgement:
    score: float
    reasoning: str | None
    parsed_from: str  # "json", "fenced_json" or "pattern"


def _after_thinking(text: str) -> str:
    head, sep, tail = text.rpartition("</think>")
    if sep:
        return tail
    if "<think>" in text:
        raise JudgementError("the reply ended inside <think> (judge max_tokens too small?)")
    return text


def _objects(text: str) -> list[tuple[dict[str, Any], int]]:
    """Every JSON object that starts somewhere in `text` (outermost first, by position), with its end."""
    found = []
    starts = [m.start() for m in re.finditer(r"\{", text)][-_MAX_OBJECT_STARTS:]
    end_of_last = -1
    for start in starts:
        if start < end_of_last:
            continue  # inside an object already decoded
        try:
            value, end = _DECODER.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append((value, end))
            end_of_last = end
    return found


def _lookup(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for key in keys:
        if key in lowered:
            return lowered[key]
    return None


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        match = _NUMBER.fullmatch(value)
        if match:
            return float(match.group(1))
    return None


def _final_verdict(text: str, parsed_from: str) -> Judgement | None:
    """The last JSON object carrying a score, if nothing but `_VERDICT_END` follows it."""
    for obj, end in reversed(_objects(text)):
        score = _as_number(_lookup(obj, _SCORE_KEYS))
        if score is not None:
            if not _VERDICT_END.fullmatch(text, end):
                return None  # the judge went on after it: a quoted or draft score, not its verdict
            reasoning = _lookup(obj, _REASONING_KEYS)
            return Judgement(score, None if reasoning is None else str(reasoning), parsed_from)
    return None


def parse_judgement(text: str | None, score_min: float, score_max: float) -> Judgement:
    """The score in a judge reply, checked against the scale; raises JudgementError."""
    if not text or not text.strip():
        raise JudgementError("the judge returned an empty reply")
    body = _after_thinking(text)
    judgement = None
    fences = list(_FENCE.finditer(body))
    if fences and _VERDICT_END.fullmatch(body, fences[-1].end()):
        judgement = _final_verdict(fences[-1].group(1), "fenced_json")
    if judgement is None:
        judgement = _final_verdict(body, "json")
    if judgement is None:
        lines = [line for line in body.strip().splitlines() if line.strip()]
        match = _SCORE_PATTERN.search(lines[-1]) if lines else None
        if match:
            judgement = Judgement(float(match.group(1)), None, "pattern")
    if judgement is None:
        raise JudgementError("no final verdict with a score ends the judge reply")
    if not math.isfinite(judgement.score) or not score_min <= judgement.score <= score_max:
        raise JudgementError(f"score {judgement.score:g} is outside the scale {score_min:g}..{score_max:g}")
    return judgement


def parse_verdict_object(text: str | None, key: str) -> tuple[Any, str | None]:
    """The value of `key` in the judge's final verdict object, and its reasoning, read as
    `parse_judgement` reads a score: after any `<think>`, the last JSON object carrying `key` (keys
    matched case-insensitively), fenced or bare, with nothing but `_VERDICT_END` after it. Raises
    JudgementError; the caller checks the value's type and range."""
    if not text or not text.strip():
        raise JudgementError("the judge returned an empty reply")
    body = _after_thinking(text)
    fences = list(_FENCE.finditer(body))
    candidates = [fences[-1].group(1)] if fences and _VERDICT_END.fullmatch(body, fences[-1].end()) else []
    for candidate in [*candidates, body]:
        for obj, end in reversed(_objects(candidate)):
            value = _lookup(obj, (key,))
            if value is not None:
                if not _VERDICT_END.fullmatch(candidate, end):
                    break  # the judge went on after it: quoted or drafted, not its verdict
                reasoning = _lookup(obj, _REASONING_KEYS)
                return value, None if reasoning is None else str(reasoning)
    raise JudgementError(f"no final verdict with {key!r} ends the judge reply")
