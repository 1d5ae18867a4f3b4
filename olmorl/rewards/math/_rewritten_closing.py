"""A closing sentence that only rewrites the value the sentence before it states.

"The fraction of 2 feet that equals 3 inches is **3/24**. This can be simplified to **1/8**." The last sentence
names no answer of its own: "this" is the value just stated, shown in another form. The answer is that value in
its new form, provided both forms are the same number; two different numbers contradict each other and state no
answer. A denial ("This cannot be simplified to ...") is no rewriting, and a sentence before it that states no
single answer leaves nothing to rewrite.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from olmorl.rewards.math._numbers import parse_number

Closing = tuple[tuple[str, ...], str | None]

_REWRITE_RE = re.compile(
    r"(?:^|(?<=[.!?])[ \t]+|\n)[ \t]*(?:this|that|it|which)\s+"
    r"(?:(?:can|could|may)\s+(?:also\s+)?be\s+|is\s+)?(?:further\s+)?"
    r"(?:simplified|simplifies|reduced|reduces|rewritten|written|expressed)\s+(?:further\s+)?(?:to|as)\s+"
    r"\**\s*(?P<value>[-+]?\d[\d,]*(?:\.\d+)?(?:/\d+)?)\s*\**\s*\.?\s*$",
    re.IGNORECASE,
)


def ends_in_rewrite(body: str) -> bool:
    """Whether `body`'s last sentence only rewrites a value ("This can be simplified to 1/8.")."""
    return _ends_in_digit(body) and _REWRITE_RE.search(body) is not None


def _ends_in_digit(body: str) -> bool:
    """A cheap look before `_REWRITE_RE`'s scan of the whole text: its value's last digit (or a comma) ends the
    text but for spaces, asterisks and a full stop."""
    end = len(body)
    while end > 0 and (body[end - 1].isspace() or body[end - 1] in "*."):
        end -= 1
    return end > 0 and (body[end - 1].isdecimal() or body[end - 1] == ",")


def rewritten_closing(body: str, question: str, closing: Callable[[str, str], Closing | None]) -> Closing | None:
    """The rewritten value when the sentence before `body`'s rewriting last sentence states that single value
    (read by `closing`), else None: no answer."""
    match = _REWRITE_RE.search(body)
    if match is None:
        return None
    before = closing(body[:match.start()], question)
    if before is None or before[1] is not None or len(before[0]) != 1:
        return None
    stated, rewritten = parse_number(before[0][0].strip(" *")), parse_number(match.group("value"))
    if stated is None or rewritten is None or stated.value != rewritten.value:
        return None
    return (match.group("value"),), None
