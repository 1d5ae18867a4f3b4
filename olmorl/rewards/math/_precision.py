"""The precision a question asks for ("to the nearest hundredth", "to 2 decimal places", "3 significant figures").

Without a prompt a decimal reference is taken as rounded, and a more precise answer that rounds to it passes
(0.033 for 0.03). Where the prompt asks for a precision, the answer must be written at it: 0.033 answers a
three-place question, not "to the nearest hundredth". An answer equal in value to the reference passes however
it is written (0.030 and 3/100 are 0.03); any other value passes only if it has no nonzero digit past the places
asked for and is the reference rounded to them.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from olmorl.rewards.math._numbers import ExactNumber, parse_number, round_half_up
from olmorl.rewards.math._sympy import TooLarge, exact_rational, parse_latex

_COUNT = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_NEAREST = {"tenth": 1, "hundredth": 2, "thousandth": 3, "ten thousandth": 4, "whole number": 0, "whole": 0,
            "integer": 0, "cent": 2, "penny": 2, "dollar": 0}
_NEAREST_RE = re.compile(
    r"\bnearest\s+(ten[- ]thousandth|tenth|hundredth|thousandth|whole number|whole|integer|cent|penny|dollar)s?\b",
    re.IGNORECASE)
_PLACES_RE = re.compile(r"\b(\d|one|two|three|four|five|six)\s+decimal\s+(?:places?|digits?)\b", re.IGNORECASE)
_SIGNIFICANT_RE = re.compile(r"\b(\d|one|two|three|four|five|six)\s+(?:significant\s+(?:figures?|digits?)|sig\.?\s*figs?)\b",
                             re.IGNORECASE)


def prompt_text(prompt: Any) -> str:
    """The text of an item's prompt: a string, or the contents of a list of chat messages."""
    if isinstance(prompt, list):
        return " ".join(m.content for m in prompt if isinstance(getattr(m, "content", None), str))
    return prompt if isinstance(prompt, str) else ""


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _COUNT[word.lower()]


def requested_places(prompt: str, reference: ExactNumber) -> int | None:
    """The decimal places the prompt asks the answer to be written to, for this reference; None when it asks for
    none, asks for two different ones, or the reference itself is written more precisely (then the phrase is
    about something else, "the smallest number that rounds to 3.5 to the nearest tenth")."""
    lowered = prompt.lower()
    if "nearest" not in lowered and "decimal" not in lowered and "sig" not in lowered:
        return None
    asked = {_NEAREST[m.group(1).lower().replace("-", " ")] for m in _NEAREST_RE.finditer(prompt)}
    asked |= {_count(m.group(1)) for m in _PLACES_RE.finditer(prompt)}
    for m in _SIGNIFICANT_RE.finditer(prompt):
        if reference.value == 0:
            return None
        asked.add(_count(m.group(1)) - 1 - math.floor(math.log10(abs(reference.value))))
    if len(asked) != 1:
        return None
    places = asked.pop()
    return places if (reference.decimal_places or 0) <= places else None


def at_requested_precision(reference: Fraction, answer: Fraction, places: int) -> bool:
    """Whether an answer of value `answer` is the reference written to `places` decimal places."""
    if answer == reference:
        return True
    scaled = answer * Fraction(10) ** places
    return scaled.denominator == 1 and round_half_up(reference, places) == answer


def exact_value(answer: str) -> Fraction | None:
    """The exact rational value of a normalized answer (`0.030`, `\\frac{3}{100}`), None when it has none (an
    irrational value, an expression, text): such an answer is never written at a finite precision."""
    if (number := parse_number(answer)) is not None:
        return number.value
    try:
        return exact_rational(parse_latex(answer))
    except (TooLarge, ValueError, TypeError):
        return None
