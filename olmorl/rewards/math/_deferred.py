"""An answer phrase that defers its value to the next paragraph.

Kojima's plain zero-shot StrategyQA run (batch 21) writes "The answer (Yes or No) is followed by an explanation."
and then a paragraph that opens with the answer: "Yes, it is normal to find parsley in multiple sections of ...".
A reader takes that opening yes/no as the answer. Only an explicit announcement that the answer comes next
defers ("followed by an explanation", "as follows"); a non-answer ("not known.", "not as important as the
explanation.") stays what it says, and the next paragraph must open with the word and a mark ("Yes, ...") or be
the word alone on its line, so "Yes or no depends on ..." is no answer. Batch 42 adds "followed by a list of
holidays." then "Yes" alone on a line above the list: a list announced, like an explanation, comes after the answer.
"""

from __future__ import annotations

import re

_DEFERRING_RE = re.compile(
    r"^\s*(?:followed\s+by\s+(?:an?|the)\s+(?:brief\s+|short\s+)?(?:explanation|list(?:\s+of\s+[a-z]+(?:\s+[a-z]+){0,3})?)"
    r"|as\s+follows)\s*[.:]?\s*$",
    re.IGNORECASE,
)
# The next paragraph opens with the word and a mark ("Yes, ...") or is the word alone on its line ("Yes\n\n- ..."),
# with no other verdict word opening the text after it ("Yes\nNo" names both).
_NEXT_PARAGRAPH_ANSWER_RE = re.compile(
    r"[.:]?[ \t]*\n[ \t]*\n\s*(?=(?:yes|no)\b(?:\s*[,.;:!]|[ \t]*(?:$|\n(?!\s*(?:yes|no|true|false)\b))))",
    re.IGNORECASE,
)


def deferred_answer_start(statement: str, text: str, end: int) -> int | None:
    """Where the deferred answer starts, when `statement` (ending at `end` in `text`) defers to the next
    paragraph and that paragraph opens with a yes/no; None otherwise."""
    if not _DEFERRING_RE.match(statement):
        return None
    match = _NEXT_PARAGRAPH_ANSWER_RE.match(text, end)
    return match.end() if match else None
