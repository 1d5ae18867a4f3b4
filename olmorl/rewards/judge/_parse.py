"""Reading the judge's verdict out of its reply.

Order: drop a reasoning model's `<think>…</think>`; then the last JSON object carrying a score (inside a
```json fence or bare in the text; keys matched case-insensitively, so open-instruct's
`{"REASONING": ..., "SCORE": "7"}` works too); then, as a last resort, the last `score: N` in the text.
Anything else is an error: a judge reply never silently becomes a 0.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
_SCORE_PATTERN = re.compile(r"\b(?:score|rating)\b[\s\"'*:=]*(?:is|of)?[\s\"'*:=]*(-?\d+(?:\.\d+)?)", re.IGNORECASE)
_NUMBER = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*(?:/\s*\d+(?:\.\d+)?)?\s*")
_SCORE_KEYS = ("score", "rating")
_REASONING_KEYS = ("reasoning", "explanation", "rationale", "justification")
_DECODER = json.JSONDecoder(strict=False)  # judges put raw newlines inside JSON strings
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


def _objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object that starts somewhere in `text` (outermost first, by position)."""
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
            found.append(value)
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


def _from_objects(objects: list[dict[str, Any]], parsed_from: str) -> Judgement | None:
    for obj in reversed(objects):
        score = _as_number(_lookup(obj, _SCORE_KEYS))
        if score is not None:
            reasoning = _lookup(obj, _REASONING_KEYS)
            return Judgement(score, None if reasoning is None else str(reasoning), parsed_from)
    return None


def parse_judgement(text: str | None, score_min: float, score_max: float) -> Judgement:
    """The score in a judge reply, checked against the scale; raises JudgementError."""
    if not text or not text.strip():
        raise JudgementError("the judge returned an empty reply")
    body = _after_thinking(text)
    judgement = None
    for block in reversed(_FENCE.findall(body)):
        judgement = _from_objects(_objects(block), "fenced_json")
        if judgement:
            break
    if judgement is None:
        judgement = _from_objects(_objects(body), "json")
    if judgement is None:
        matches = _SCORE_PATTERN.findall(body)
        if matches:
            judgement = Judgement(float(matches[-1]), None, "pattern")
    if judgement is None:
        raise JudgementError("no score found in the judge reply")
    if not math.isfinite(judgement.score) or not score_min <= judgement.score <= score_max:
        raise JudgementError(f"score {judgement.score:g} is outside the scale {score_min:g}..{score_max:g}")
    return judgement
