"""An ordinal that names the item a "which <noun>" question asks for: "For which grade ...?" answered
`12^{\\mathrm{th}} \\text{ grade}` (or `12th grade`, `12^{th}`) chooses grade 12, the reference 12.

Only where the question asks "which <noun>", only an ordinal whose suffix is English for its number (`1st`, `2nd`,
`3rd`, `12th`; never `12st`), and only with that same noun or none after it: `12th term` for "Which grade" or an
ordinal in a question that asks for a count or a value (the 2003rd term, not 2003) stays as it was.
"""

from __future__ import annotations

import re

from olmorl.rewards.math._normalize import normalize_answer

_WHICH_NOUN_RE = re.compile(r"\bwhich\s+([a-z]+)\b", re.IGNORECASE)
_ORDINAL_RE = re.compile(r"^(?P<n>\d{1,4})\s*(?:\^\s*\{\s*(?P<sup>st|nd|rd|th)\s*\}|(?P<plain>st|nd|rd|th))"
                         r"(?:\s+(?P<noun>[a-z]+))?$", re.IGNORECASE)


def _suffix(number: int) -> str:
    if number % 100 in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")


def ordinal_choice(prompt: str, answer: str) -> str | None:
    """The number an ordinal answer (`12th grade`) names for a "which grade" question, or None."""
    nouns = {noun.lower() for noun in _WHICH_NOUN_RE.findall(prompt or "")}
    m = _ORDINAL_RE.match(normalize_answer(answer))
    if not nouns or m is None:
        return None
    suffix = (m.group("sup") or m.group("plain")).lower()
    noun = (m.group("noun") or "").lower()
    if suffix != _suffix(int(m.group("n"))) or (noun and noun not in nouns and noun.rstrip("s") not in nouns):
        return None
    return m.group("n")
