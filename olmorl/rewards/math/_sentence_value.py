"""The value an answer sentence states: "The largest $n$ is 34" -> "34" (`sentence_value`), for an anchor
followed by a sentence (`_extract`): the value after the last copula, the sentence's only number or math span, or
the one in Markdown bold. An answer sentence that has ended may be followed by its working in parentheses
(`worked_value`).
"""

from __future__ import annotations

import re

from olmorl.rewards.math._question_echo import asked_difference_value
from olmorl.rewards.math._restated import qualified_value

_MATH_OR_NUMBER_RE = re.compile(r"\$[^$]+\$|\\\(.+?\\\)|(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:/\d+)?(?:\s*(?:%|percent\b))?")
_YES_NO_RE = re.compile(r"^(?:yes|no|true|false)\b", re.IGNORECASE)
# The one value in Markdown bold of a sentence with several ("196 has **9** positive divisors"): bold marks it as
# a box does; not where the sentence offers another value or denies one.
_BOLD_VALUE_RE = re.compile(r"\*\*\s*(\$[^$*]+\$|[-+]?\d[\d,]*(?:\.\d+)?(?:/\d+)?)\s*\*\*")
_BOLD_BLOCK_RE = re.compile(r"\b(?:or|not|never|either|than)\b|n't", re.IGNORECASE)
# A colon between digits is a time or a ratio (`7:05`, `3:4`), never a label before a value.
_COPULA_RE = re.compile(r"\b(?:is|are|was|were|equals|be)\b|=|(?<!\d):|:(?!\d)")
# "..., which can be simplified to 3√13": a form the value is rewritten in leads the value it states (not after a
# denial: "cannot be simplified to").
_REWRITTEN_AS_RE = re.compile(r"^(?:simplified|rewritten|written|expressed|reduced)\s+(?:to|as)\s+", re.IGNORECASE)
_DENIED_BEFORE_RE = re.compile(r"(?:\bnot|n't|\bcannot|\bnever)\s*$", re.IGNORECASE)
# "35. (4 x 5 = 20, 3 x 5 = 15, 20 + 15 = 35)": a value whose sentence has ended (its full stop), then its working
# in parentheses, closed or cut off at the response's end; the working holds no parenthesis of its own.
_WORKED_RE = re.compile(r"^(?P<value>[^()\n]{1,40}?)\.\s+\((?P<working>[^()\n]{1,300})\)?\s*\.?$")
# Working that says more than how the value was reached: an alternative, a denial, a doubt, a condition.
_WORKING_BLOCK_RE = re.compile(
    r"\b(?:or|not|no|never|but|however|wait|actually|maybe|perhaps|probably|approximately|about|roughly|"
    r"wrong|incorrect|if|unless)\b|n't|\?", re.IGNORECASE)
_PLAIN_NUMBER_RE = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
# The working's last side: the value it reaches, a currency sign before it and up to three unit words after it.
_REACHED_RE = re.compile(r"^\s*\$?\s*(-?\d[\d,]*(?:\.\d+)?)(?:\s+[A-Za-z]+){0,3}\s*$")


def sentence_value(answer: str, *, ended: bool = False, question: str = "") -> str:
    """The value a sentence states: "The largest $n$ is 34" -> "34" (a bare value is returned as is).

    A sentence has three or more words outside math; its value follows the last "is"/"are"/"="
    when that holds a number or math, else it is the sentence's only number or math span, or of several the
    one in Markdown bold ("196 has **9** positive divisors" -> "9"). In a sentence that `ended` (its full stop
    seen), a number after the last copula may be followed by words that only qualify it ("... equals 360
    students in total at the concert" -> "360"), or by the comparative a `question` that asks a difference names
    ("= 574664 more kids stayed home compared to those who went to the camp" -> "574664")."""
    if answer.count(" ") < 2 or _YES_NO_RE.match(answer):
        return answer  # "yes, because 7 is prime": the verdict comes first
    spans = _math_spans(answer)
    outside = answer
    for start, end in reversed(spans):  # each math span becomes a space
        outside = outside[:start] + " " + outside[end:]
    outside = re.sub(r"\\\(.*?\\\)|\\[a-zA-Z]+\{[^{}]*\}", " ", outside)
    if len(re.findall(r"[A-Za-z]{2,}", outside)) < 3:
        return answer
    copulas = [m for m in _COPULA_RE.finditer(answer) if not _inside_math(answer, m.start(), spans)]
    if copulas:
        tail = answer[copulas[-1].end():].strip()
        if not _DENIED_BEFORE_RE.search(answer[:copulas[-1].start()]):
            tail = _REWRITTEN_AS_RE.sub("", tail)
        if _MATH_OR_NUMBER_RE.search(tail):
            if ended and (value := qualified_value(tail) or asked_difference_value(tail, question)):
                return value
            return tail
    values = _MATH_OR_NUMBER_RE.findall(answer)
    bold = _BOLD_VALUE_RE.findall(answer)
    if len(values) > 1 and len(bold) == 1 and answer.count("**") == 2 and not _BOLD_BLOCK_RE.search(answer):
        return bold[0]
    return values[0] if len(values) == 1 else answer


def _math_spans(text: str) -> list[tuple[int, int]]:
    """The `$...$` spans of a sentence that are math: a pair of dollar signs around prose words is two currency
    amounts ("40 hours x $10 / hour + 5 hours x $10/hour = $460"), not math."""
    spans = []
    for m in re.finditer(r"\$[^$]*\$", text):
        content = re.sub(r"\\[a-zA-Z]+(?:\{[^{}]*\})?", " ", m.group())
        if not re.search(r"[a-zA-Z]{3,}", content):
            spans.append((m.start(), m.end()))
    return spans


def _inside_math(text: str, index: int, spans: list[tuple[int, int]]) -> bool:
    return any(a < index < b for a, b in spans) or text.rfind("\\(", 0, index) > text.rfind("\\)", 0, index)


def worked_value(statement: str) -> str | None:
    """"35. (4 x 5 = 20, 3 x 5 = 15, 20 + 15 = 35" -> "35": the value of an answer sentence that has ended, followed
    by its working in parentheses whose last equation reaches that same value (the parenthesis closed, or the
    response cut off right after the value was reached: the answer sentence is whole). None when the working
    reaches another value, stops before a value, or says more than how the value was reached ("or", "not",
    "approximately", a question)."""
    match = _WORKED_RE.match(statement.strip())
    if match is None or "=" not in match["working"] or _WORKING_BLOCK_RE.search(match["working"]):
        return None
    stated = _PLAIN_NUMBER_RE.findall(match["value"])
    reached = _REACHED_RE.match(match["working"].rpartition("=")[2])
    if len(stated) != 1 or reached is None or _number(stated[0]) != _number(reached.group(1)):
        return None
    return match["value"].strip()


def _number(text: str) -> float:
    return float(text.replace(",", ""))
