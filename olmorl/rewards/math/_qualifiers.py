"""Words around a stated value that change what it states: a bound, a magnitude, a second answer.

- A bound is not the value: "at least 360", "360 students or more", "no more than 5", "up to 12", "more than 7"
  state a range, so an answer qualified by one states no answer. A careful grader still reads "at least 5" (or
  "5 or more") as the answer to a question that asks for the least or the minimum ("What is the least number of
  boxes he needs?"), and "at most 5" to one that asks for the most or the maximum; a strict bound ("more than 5")
  never.
- A magnitude word after a number is part of it: "3 hundred" is 300, "2.5 million" 2,500,000, "36 dozen" 432 (a
  bare 3, 2.5 or 36 is never read from them). Where the question asks for the quantity in that unit ("in
  millions", "How many dozen ...?"), the word is the unit and the number stands.
- "12, but it could be 13", "B, but C is also possible": a contrast that offers another answer makes a hedge.
"""

from __future__ import annotations

import re
from fractions import Fraction

from olmorl.rewards.math._question import question_tail

_NUMBER_RE = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:/\d+)?")
_NOISE = r"(?:[\s$~(}]|\\[,;: ]|\\\(|\\\[|\\(?:text|mathrm|textbf)\{\s*\}?)*"
# Before the number: what makes it a lower, an upper or a strict bound. "rounded up to 360" is a rounding.
_LOWER_BEFORE = r"at\s+least|(?:no|not)\s+(?:less|fewer|lower|smaller)\s+than|(?:a\s+)?minimum\s+of"
_UPPER_BEFORE = r"at\s+most|(?:no|not)\s+(?:more|greater|higher|larger)\s+than|(?:a\s+)?maximum\s+of|" \
    r"up\s+to"
_STRICT_BEFORE = r"(?:more|less|fewer|greater|higher|lower|larger|smaller)\s+than|(?<![\d}]\s)(?<![\d}])(?:over|under)"
_BOUND_BEFORE_RE = re.compile(
    rf"\b(?:(?P<lower>{_LOWER_BEFORE})|(?P<upper>{_UPPER_BEFORE})|(?P<strict>{_STRICT_BEFORE})){_NOISE}$",
    re.IGNORECASE,
)
# After the number (and up to two unit words): "or more", "at least", "minimum"; a "+" that ends it ("360+").
_BOUND_AFTER_RE = re.compile(
    r"^(?:\s*\\?\}|\$)*[\s,]*(?:\\text\{\s*)?(?:[A-Za-z]+\s+){0,2}?(?:"
    r"(?P<lower>or\s+(?:more|greater|higher|above|over|larger)|at\s+least|minimum)|"
    r"(?P<upper>or\s+(?:less|fewer|lower|below|under|smaller)|at\s+most|maximum)|(?P<strict>or\s+so))\b"
    r"|^\+(?![\w({\\$.-])",
    re.IGNORECASE,
)
# A question that asks for the least or the most ("the least number of boxes"); "at least one T" in a question
# only restricts what is counted.
_ASKS_LEAST_RE = re.compile(r"(?<!\bat\s)\b(?:least|minimum|minimal|fewest|smallest|lowest)\b", re.IGNORECASE)
_ASKS_MOST_RE = re.compile(r"(?<!\bat\s)\b(?:most(?!\s+likely)|maximum|maximal|greatest|largest|highest)\b",
                           re.IGNORECASE)
# "add up to 360", "rounded up to 360": a verb's "up to" reaches the value, it does not bound it.
_VERB_UP_TO_RE = re.compile(
    rf"\b(?:round|add|sum|come|came|count|go|goes|went|amount|total|add|build|climb|scale|make|made)\w*\s+up\s+to{_NOISE}$",
    re.IGNORECASE)


def bound_kind(before: str, after: str) -> str | None:
    """"lower", "upper" or "strict" when the words right before or after a number make it a bound, else None."""
    match = _BOUND_BEFORE_RE.search(before[-40:]) or _BOUND_AFTER_RE.match(after[:60])
    if match is None or (match.group("upper") and _VERB_UP_TO_RE.search(before[-40:])):
        return None
    return next((kind for kind in ("lower", "upper", "strict") if match.group(kind)), "lower")


def bound_stated(before: str, after: str, question: str = "") -> bool:
    """Whether the value between `before` and `after` is stated as a bound the question does not ask for."""
    kind = bound_kind(before, after)
    return kind == "strict" or (kind == "lower" and not _ASKS_LEAST_RE.search(question_tail(question))) or (
        kind == "upper" and not _ASKS_MOST_RE.search(question_tail(question)))


def bounded(text: str, start: int, end: int, question: str = "") -> bool:
    """Whether a number of text[start:end] is stated as a bound that the question does not ask for."""
    return any(bound_stated(text[:number.start()], text[number.end():], question)
               for number in _NUMBER_RE.finditer(text, start, end))


MAGNITUDES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9, "trillion": 10**12,
              "dozen": 12, "score": 20}
_WORDS = "|".join(MAGNITUDES)
# A magnitude word heading the text after a number ("hundred students", "\\text{ thousand}"); "hundredths" is not.
MAGNITUDE_AFTER_RE = re.compile(rf"^[ \t]*(?:\\text\{{\s*|\\mathrm\{{\s*|\\,|\\ |~)?({_WORDS})s?\b", re.IGNORECASE)
_SCALED_RE = re.compile(
    rf"(?<![\w.])(\d[\d,]*(?:\.\d+)?)((?:[ \t]*(?:\\text\{{\s*|\\mathrm\{{\s*|\\,|\\ |~)?(?:{_WORDS})s?\b\}}?)+)"
    # "3 hundred and 20": the rest of the number
    r"(?:\s+and\s+(\d+)(?![\d.,]))?",
    re.IGNORECASE,
)
_WORD_RE = re.compile(_WORDS, re.IGNORECASE)
# "How many dozen eggs ...?", "in millions of dollars", "(in thousands)": the question's own unit.
_ASKED_UNIT_RE = re.compile(
    rf"\b(?:how\s+many|in|number\s+of|many)\s+(?:\w+\s+)?({_WORDS})s?\b|\b({_WORDS})s\s+of\b", re.IGNORECASE)


def magnitude_after(after: str) -> str:
    """The magnitude word heading `after` (" hundred students" -> "hundred"), else ""."""
    match = MAGNITUDE_AFTER_RE.match(after)
    return match.group(1).lower() if match else ""


def scaled(answer: str, question: str = "") -> str:
    """`3 hundred` -> `300`, `2.5 million dollars` -> `2500000 dollars`; the number alone where the question asks
    for the quantity in that unit ("in millions": `2.5 million` -> `2.5`)."""
    if not _WORD_RE.search(answer):
        return answer
    asked = {(m.group(1) or m.group(2)).lower() for m in _ASKED_UNIT_RE.finditer(question_tail(question))}

    def value(match: re.Match[str]) -> str:
        words = [w.lower() for w in _WORD_RE.findall(match.group(2))]
        if all(word in asked for word in words) and not match.group(3):
            return match.group(1)
        number = Fraction(match.group(1).replace(",", ""))
        for word in words:
            number *= MAGNITUDES[word]
        if match.group(3):
            if int(match.group(3)) >= MAGNITUDES[words[-1]]:
                return match.group(0)  # "3 hundred and 500" is no number
            number += int(match.group(3))
        if number.denominator == 1:
            return str(number.numerator)
        return f"{float(number):.12g}" if number.denominator in (2, 4, 5, 8, 10, 20, 25, 50, 100) else str(number)

    return _SCALED_RE.sub(value, answer)


# ", but it could be 13", "; though C is also possible", "(or C)": a contrast that offers a second answer.
_ALTERNATIVE_RE = re.compile(
    r"(?:^|[,;(]|\s)\s*(?:but|though|although|however|yet|or)\b[^.;]{0,60}?"
    r"(?:\b(?:could|may|might)\s+(?:also\s+|just\s+as\s+well\s+)?be\b"
    # "but it could be written as 0.5" restates the answer
    r"(?!\s+(?:\w+ed|written|shown|seen|done|given|made|found|taken|proven)\b)|"
    r"\b(?:is|are|would\s+be)\s+(?:also|equally)\s+(?:possible|correct|valid|likely|plausible|right)\b)",
    re.IGNORECASE,
)


def offers_alternative(rest: str) -> bool:
    """Whether the words after an answer offer another one ("12, but it could be 13")."""
    return bool(_ALTERNATIVE_RE.search(rest[:200]))


def qualified_statement(statement: str, answer: str, question: str = "") -> tuple[str | None, str]:
    """(why there is no answer: "bound" or "hedged", else None; the answer) for the value `answer` read from an
    answer statement: "at least 360 students" is a bound, "12, but it could be 13" a hedge, and a magnitude word
    after the value joins it ("3 hundred students" -> "3 hundred")."""
    at = statement.rfind(answer)
    start, end = (at, at + len(answer)) if at >= 0 else (0, len(statement))
    if bounded(statement, start, end, question):
        return "bound", answer
    if offers_alternative(statement):
        return "hedged", answer
    if (word := magnitude_after(statement[end:])) and word not in answer.lower():
        answer = f"{answer} {word}"
    return None, answer


def qualified_boxes(text: str, boxes: list[tuple[int, int, str]], rest: str, question: str = "") -> str | None:
    """"bound" when the words around a final box make its value a bound ("at least $\\boxed{5}$"), "hedged" when
    the rest of its sentence offers a second answer ("$\\boxed{12}$, but it could be 13"), else None. `boxes`:
    (start, end, content) of the final boxes."""
    for start, end, content in boxes:
        before = text[max(0, start - 40):start] + " "
        if bounded(before + content + " " + text[end:end + 60], len(before), len(before) + len(content), question):
            return "bound"
    return "hedged" if offers_alternative(rest) else None
