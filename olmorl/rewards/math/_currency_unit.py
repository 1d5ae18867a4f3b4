"""The currency unit a question asks its amount in: "What was the average price, in cents, of his stamps?"
(reference `5.4 \\text{ cents}`) is not answered by `\\$5.4`, a dollar amount a hundred times larger, though the number
is the reference's. The same holds the other way: "How many dollars ...?" is not answered by `45 cents`. The
question's unit decides, else the reference's; an answer that names the asked unit as well (`\\$5 and 40 cents`,
`5.4 cents ($0.054)`) is left to the value, and so is every answer where neither names a unit. It reads the answer
as extracted (a closing sentence's reader keeps the number, not its unit word)."""

from __future__ import annotations

import re

_CENTS_ASKED_RE = re.compile(r"\b(?:in|how many|number of)\s+cents\b", re.IGNORECASE)
_DOLLARS_ASKED_RE = re.compile(r"\b(?:in|how many|number of)\s+dollars\b", re.IGNORECASE)
_CENTS_RE = re.compile(r"\bcents?\b|¢|\\cent\b|\\textcent\b", re.IGNORECASE)
# A dollar amount: an escaped sign (`\$5.4`; a bare `$` is also LaTeX's math delimiter), the word, or USD.
_DOLLARS_RE = re.compile(r"\\\$|\bdollars?\b|\bUSD\b", re.IGNORECASE)


def other_currency(prompt: str, reference: str, candidates: tuple[str, ...]) -> str | None:
    """The unit ("cents" or "dollars") the question or the reference asks the amount in, where every candidate states
    the amount in the other one only; else None."""
    if _CENTS_ASKED_RE.search(prompt):
        unit = "cents"
    elif _DOLLARS_ASKED_RE.search(prompt):
        unit = "dollars"
    elif _CENTS_RE.search(reference) and not _DOLLARS_RE.search(reference):
        unit = "cents"  # the question names no unit: the reference's decides
    elif _DOLLARS_RE.search(reference) and not _CENTS_RE.search(reference):
        unit = "dollars"
    else:
        return None
    asked, other = (_CENTS_RE, _DOLLARS_RE) if unit == "cents" else (_DOLLARS_RE, _CENTS_RE)
    if candidates and all(other.search(c) and not asked.search(c) for c in candidates):
        return unit
    return None
