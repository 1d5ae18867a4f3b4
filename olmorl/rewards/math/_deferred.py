"""An answer phrase that defers its value to the next paragraph.

Kojima's plain zero-shot StrategyQA run (batch 21) writes "The answer (Yes or No) is followed by an explanation."
and then a paragraph that opens with the answer: "Yes, it is normal to find parsley in multiple sections of ...".
A reader takes that opening yes/no as the answer. Only an explicit announcement that the answer comes next
defers ("followed by an explanation", "as follows"; batch 74's below); a non-answer ("not known.") stays what it
says, and the next paragraph must open with the word and a mark ("Yes, ...") or be the word alone on its line, so
"Yes or no depends on ..." is no answer. Batch 42 adds "followed by a list of holidays." then "Yes" alone on a line
above the list: a list announced, like an explanation, comes after the answer.
Batch 67 adds "is based on the following information:", a paragraph of facts, then "No, it would not be typical ...":
an answer said to rest on what follows comes after that basis, so the first later paragraph that opens with a yes/no
answers it (no paragraph before it may open with a verdict word, and none after it with the other one).
Batch 71 adds "The answer (arabic numerals) is _____." then, after a blank line, "The tree had to begin with 8 ripe
apples." as the response's last line: the blank is the template's, and that one last line is the answer.
Batch 74 adds an answer said to matter less than its explanation ("not as important as the reasoning behind the
answer.", then "Yes, Christopher Columbus broke ..."): it names the explanation that follows as where the answer is,
so it defers as an announcement does, under the same next-paragraph rule (batches 21 and 24 hold two such rows,
"not as important as the explanation.", labelled answered).
"""

from __future__ import annotations

import re

# "The answer is not as important as ...": the one "is not" an answer phrase may go on with (`_anchors`).
LESS_IMPORTANT = r"not\s+as\s+important\s+as\b"
_DEFERRING_RE = re.compile(
    r"^\s*(?:followed\s+by\s+(?:an?|the)\s+(?:brief\s+|short\s+)?(?:explanation|list(?:\s+of\s+[a-z]+(?:\s+[a-z]+){0,3})?)"
    r"|as\s+follows"
    # "not as important as the explanation": the explanation that follows holds the answer
    rf"|{LESS_IMPORTANT}\s+the\s+(?:explanation|reason(?:ing)?(?:\s+(?:behind|for)\s+(?:it|the\s+answer))?))"
    r"\s*[.:]?\s*$",
    re.IGNORECASE,
)
# "based on the following (information):" announces a basis first: the answer opens a later paragraph.
_BASIS_FOLLOWS_RE = re.compile(
    r"^\s*based\s+on\s+the\s+following(?:\s+(?:information|facts|reasons|reasoning))?\s*:\s*$", re.IGNORECASE
)
# "The answer (arabic numerals) is _____." is a template's blank, not a value: the answer is the one line after it,
# when that line ends the response ("_____." then "The tree had to begin with 8 ripe apples.").
_BLANK_RE = re.compile(r"^\s*_{3,}\s*\.?\s*$")
_PARAGRAPH_BREAK = r"[ \t]*\n[ \t]*\n\s*"
_LAST_LINE_AFTER_BLANK_RE = re.compile(rf"[.]?{_PARAGRAPH_BREAK}(?=[^\n]*\S[^\n]*\s*\Z)")
_PARAGRAPH_BREAK_RE = re.compile(_PARAGRAPH_BREAK)
_VERDICT_OPENING_RE = re.compile(r"(yes|no|true|false)\b", re.IGNORECASE)
# A paragraph answers when it opens with the word and a mark ("Yes, ...") or is the word alone on its line
# ("Yes\n\n- ..."), with no other verdict word opening the text after it ("Yes\nNo" names both).
_ANSWER_OPENING = r"(?:yes|no)\b(?:\s*[,.;:!]|[ \t]*(?:$|\n(?!\s*(?:yes|no|true|false)\b)))"
_ANSWER_OPENING_RE = re.compile(_ANSWER_OPENING, re.IGNORECASE)
_NEXT_PARAGRAPH_ANSWER_RE = re.compile(rf"[.:]?{_PARAGRAPH_BREAK}(?={_ANSWER_OPENING})", re.IGNORECASE)


def deferred_answer_start(statement: str, text: str, end: int) -> int | None:
    """Where the deferred answer starts, when `statement` (ending at `end` in `text`) defers to the next
    paragraph and that paragraph opens with a yes/no, or announces a basis and a later paragraph answers after it;
    None otherwise."""
    if _BASIS_FOLLOWS_RE.match(statement):
        return _answer_after_basis(text, end)
    if _BLANK_RE.match(statement):
        match = _LAST_LINE_AFTER_BLANK_RE.match(text, end)
        return match.end() if match else None
    if not _DEFERRING_RE.match(statement):
        return None
    match = _NEXT_PARAGRAPH_ANSWER_RE.match(text, end)
    return match.end() if match else None


def _answer_after_basis(text: str, end: int) -> int | None:
    """Where the first paragraph after `end` that opens with a yes/no answer starts, when every paragraph before
    it opens with no verdict word and none after it opens with another; None otherwise."""
    breaks = list(_PARAGRAPH_BREAK_RE.finditer(text, end))
    for index, paragraph_break in enumerate(breaks):
        if not (opening := _VERDICT_OPENING_RE.match(text, paragraph_break.end())):
            continue
        if not _ANSWER_OPENING_RE.match(text, paragraph_break.end()):
            return None  # "Yes or no depends on ...": a verdict word with no answer
        word = opening.group(1).lower()
        later = (_VERDICT_OPENING_RE.match(text, after.end()) for after in breaks[index + 1:])
        if any(other is not None and other.group(1).lower() != word for other in later):
            return None  # "Yes, ..." and then "No, ...": both named
        return paragraph_break.end()
    return None
