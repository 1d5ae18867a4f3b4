"""The form a question asks for besides the value: "Simplify ..." asks for the value in its simplest form.

An answer equal in value to the reference but with a decimal left under a radical sign (`2\\sqrt{60.5}` for
"Simplify $\\sqrt{242}$", `\\frac{\\sqrt{5.76}}{0.2}` for "Simplify: ...") has not done the simplification asked
for; nor has one that only restates the expression the question quotes (`\\sqrt{242}`, or `\\sqrt{242} \\approx
15.6`, for "Simplify $\\sqrt{242}$"; `\\sqrt{242} = 11\\sqrt{2}` states the simplified form and passes). Without
such a question, or where the reference itself keeps a decimal under a radical or is the quoted expression, the
value decides.
"""

from __future__ import annotations

import re

from olmorl.rewards.math._normalize import normalize_answer
from olmorl.rewards.math._structure import is_simple_lhs, top_level_split

_SIMPLIFY_RE = re.compile(r"\bsimplif(?:y|ied)\b|\bsimplest\b", re.IGNORECASE)
_DECIMAL_RADICAND_RE = re.compile(r"\\sqrt(?:\[[^\]]*\])?\{[^{}]*\d\.\d")
_QUOTED_MATH_RE = re.compile(r"\$\$?(.+?)\$\$?|\\\((.+?)\\\)", re.DOTALL)
_APPROXIMATION_RE = re.compile(r"\\approx.*$", re.DOTALL)


def _key(text: str) -> str:
    return re.sub(r"\s+", "", normalize_answer(text))


def _restates(prompt: str, reference: str, answer: str) -> bool:
    """Whether every exact side of the answer is an expression the prompt quotes (approximations after
    `\\approx` state no exact form)."""
    quoted = {_key(a or b) for a, b in _QUOTED_MATH_RE.findall(prompt)}
    if not quoted or _key(reference) in quoted:
        return False
    sides = [_APPROXIMATION_RE.sub("", side).strip() for side in top_level_split(answer, ("=",))]
    if len(sides) > 1 and is_simple_lhs(sides[0]):
        sides = sides[1:]  # `x = \sqrt{242}`: the label states nothing
    exact = [side for side in sides if side]
    return bool(exact) and all(_key(side) in quoted for side in exact)


def unsimplified(prompt: str, reference: str, compared: list[str]) -> bool:
    """Whether the prompt asks to simplify and the matched answer still has a decimal under a radical sign or
    only restates the expression the prompt quotes."""
    if not _SIMPLIFY_RE.search(prompt):
        return False
    return any(_restates(prompt, reference, answer) for answer in compared) or (
        not _DECIMAL_RADICAND_RE.search(reference)
        and any(_DECIMAL_RADICAND_RE.search(answer) for answer in compared))
