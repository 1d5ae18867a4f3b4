"""A conclusion that the asked value is not determined, then a final answer that gives one value.

"Therefore, the value of $b$ can be any real number.\\nThe answer is: 0": the response's own conclusion is that no
single value answers, and the answer line after it gives one. A careful grader reads two final answers that
contradict each other (a hedge, as "4 or 6" is), so the response gives none. Only the sentence right before the
final answer's anchor counts, and only when that sentence ends on the claim (so "x can be any integer, so the
least is 1" is read as before); an answer that is itself "all real numbers", an interval or a set is what such a
conclusion states, and stands.
"""

from __future__ import annotations

import re

_QUALITY = r"(?:real|positive|negative|nonnegative|non-negative|nonzero|non-zero|complex|rational|whole)\s+"
# The claim, ending its sentence: "can be any real number.", "cannot be determined.", "is not uniquely determined."
_INDETERMINATE_RE = re.compile(
    rf"\b(?:(?:can|could|may)\s+(?:be|take)\s+any\s+(?:{_QUALITY})?(?:number|value|integer)s?"
    r"|(?:cannot|can\s?not|can't)\s+be\s+(?:uniquely\s+)?determined"
    r"|is\s+(?:not\s+uniquely\s+determined|undetermined|indeterminate|not\s+unique))"
    r"(?:\s+(?:for|of)\s+\$?[a-zA-Z]\$?)?\s*[.!]?\s*$",
    re.IGNORECASE,
)
_SENTENCE_BREAK_RE = re.compile(r"(?<!\d)\.\s|\n")
_LEAD_IN_RE = re.compile(r"\n[ \t*]*(?:final\s+)?answer[ \t*]*:?[ \t]*$", re.IGNORECASE)  # Minerva's "Final Answer: "
# An answer that states the whole range itself: "all real numbers", "(-\\infty, \\infty)", "\\mathbb{R}", a set.
_RANGE_ANSWER_RE = re.compile(r"\\infty|\\mathbb|\ball\b|\bany\b|\breal\b|\\\{|\bnone\b|\\emptyset", re.IGNORECASE)


def contradicts_indeterminate(before: str, answer: str) -> bool:
    """Whether the sentence that ends `before` (the text before the final answer's anchor) concludes that the
    asked value can be any number or cannot be determined, while `answer` (the anchor's text) is one value."""
    body = _LEAD_IN_RE.sub("", before.rstrip()).rstrip()
    if not body or _RANGE_ANSWER_RE.search(answer):
        return False
    start = max((m.end() for m in _SENTENCE_BREAK_RE.finditer(body, 0, len(body) - 1)), default=0)
    return bool(_INDETERMINATE_RE.search(body[start:]))
