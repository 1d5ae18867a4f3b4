"""Which number of a closing sentence states the answer, when the sentence holds several.

A closing sentence often restates the question's givens around its value: "So it will take Andy 227 minutes to
string all 12 racquets.", "So the 3 friends have 27 apples.", "So she got 18 out of 20.", "So he earns
600 dollars for 3 weeks." A number that quantifies a restated noun phrase is context, not the answer:

- after a quantifier or determiner and before its noun: "all 12 racquets", "all of the 4 cats", "the 3 friends",
  "these 5 boxes", "her 3 friends", "in the first 15 minutes", or before a hyphenated unit that modifies its noun: "the 1.835-liter
  container", "his 3-year-old son";
- after "all of", "both of", "out of": "all of the 5 boxes", "out of 40";
- a duration after "for", once a value has come before it: "600 dollars for 3 weeks";
- with the item's prompt, a range "from 12 feet to 36 feet" whose two ends, each number with the same unit word,
  the question states word for word ("A tree is now 12 feet tall ... will the tree be 36 feet tall?").

A distributive given ("for each of the 3 cases", "per 2 pounds") makes the other value a rate; whether the
question asks for the rate or the total is not in the sentence, so it states no answer. Otherwise the answer is
the one number left; with several left, the last one only when a copula or "=" marks it ("Thus
the roots give 6 and 8, and their product is 48."). Otherwise the sentence is ambiguous and states no answer:
"So he spent 20 minutes on 4 tasks." is never read as 4 (nor as 20): a guess could accept a restated given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from olmorl.rewards.math._question import question_text

_DETERMINER_BEFORE_RE = re.compile(
    r"\b(?:all(?:\s+of\s+(?:the|its|his|her|their|these|those))?|the|these|those|his|her|their|its)\s+"
    r"(?:(?:first|last|next|past)\s+)?\$?$",  # "in the first 15 minutes": a position word may come between
    re.IGNORECASE,
)
_OF_BEFORE_RE = re.compile(
    r"\b(?:(?:both|all|any)\s+of(?:\s+(?:the|its|his|her|their|these|those))?|out\s+of)\s+\$?$", re.IGNORECASE
)
# "12 sequences for each of the 3 cases", "5 dollars per 2 pounds": a distributive given makes the other value a
# rate, and whether the question asks for the rate or the total is not in the sentence.
_DISTRIBUTIVE_BEFORE_RE = re.compile(
    r"\b(?:(?:each|every(?:\s+one)?)(?:\s+of(?:\s+(?:the|its|his|her|their|these|those))?)?|per)\s+\$?$",
    re.IGNORECASE,
)
# A noun after the number ("12 racquets"), or a hyphenated unit then the noun it modifies ("1.835-liter container").
_NOUN_AFTER_RE = re.compile(r"^(?:\s+|-[A-Za-z]+(?:-[A-Za-z]+)*\s+)[A-Za-z]")
_DURATION_BEFORE_RE = re.compile(r"\bfor\s+(?:all\s+|the\s+(?:next\s+|last\s+)?)?$", re.IGNORECASE)
_DURATION_AFTER_RE = re.compile(
    r"^\s+(?:seconds?|minutes?|hours?|days?|nights?|weeks?|months?|years?|decades?)\b", re.IGNORECASE
)
# "from 12 feet to 36 feet": a range whose ends carry one unit word (`_restated_range` checks the question).
_RANGE_RE = re.compile(
    r"\bfrom\s+\$?(\d[\d,]*(?:\.\d+)?)\s+([A-Za-z]+)\s+to\s+\$?(\d[\d,]*(?:\.\d+)?)\s+([A-Za-z]+)\b",
    re.IGNORECASE,
)
_DENIAL_RE = re.compile(r"\b(?:not|never|no|cannot)\b|n't", re.IGNORECASE)
# What marks the last of several values as the answer: a copula or an equals sign right before it.
_MARKED_BEFORE_RE = re.compile(
    r"(?:\b(?:is|are|was|were|be|equals|comes\s+to|total\s+of)|=)\s*\$?$", re.IGNORECASE
)
# After the answer: its unit, then only restated givens ("minutes to string all 12 racquets."); a condition,
# a contrast or a denial there means the sentence goes on to say something else.
_TAIL_RE = re.compile(r"^[ \t]*[A-Za-z0-9 \t,'-]{0,120}[.!]\s*$")
_TAIL_BLOCK_RE = re.compile(
    r"\b(?:if|unless|when|whenever|but|not|no|never|or|than|instead|whereas|while|except|although|though|"
    r"because|plus|minus|times|remaining|left|more|less|fewer)\b|n't",
    re.IGNORECASE,
)


def _restated_range(sentence: str, question: str) -> set[int]:
    """Where the two numbers of "from 12 feet to 36 feet" start, when they carry one unit word and the question
    states each with it word for word (the question's own start and end, restated around the answer)."""
    starts: set[int] = set()
    if _DENIAL_RE.search(sentence):  # "it will not take 16 years ... from 12 feet to 36 feet": no value stated
        return starts
    text = question_text(question)
    for span in _RANGE_RE.finditer(sentence):
        if span.group(2).lower() != span.group(4).lower():
            continue
        unit = re.escape(span.group(2))
        if all(re.search(rf"(?<![\d.,]){re.escape(span.group(n))}\s+{unit}\b", text, re.IGNORECASE) for n in (1, 3)):
            starts.update((span.start(1), span.start(3)))
    return starts


def context_numbers(sentence: str, numbers: Sequence[re.Match[str]], question: str = "") -> list[bool]:
    """For each number of `sentence`, whether it quantifies a restated given (context, not the answer)."""
    flags: list[bool] = []
    ranged = _restated_range(sentence, question) if question else set()
    for number in numbers:
        before, after = sentence[:number.start()], sentence[number.end():]
        restated = restates_given(sentence, number.start(), number.end()) or number.start() in ranged
        duration = bool(_DURATION_BEFORE_RE.search(before)) and bool(_DURATION_AFTER_RE.match(after)) \
            and any(not flag for flag in flags)
        flags.append(restated or duration)
    return flags


def stated_value(sentence: str, numbers: Sequence[re.Match[str]], question: str = "") -> re.Match[str] | None:
    """The number of a closing sentence with several numbers that states its answer, or None when the sentence
    does not single one out (see the module docstring)."""
    if any(_DISTRIBUTIVE_BEFORE_RE.search(sentence[:number.start()]) for number in numbers):
        return None
    context = context_numbers(sentence, numbers, question)
    values = [number for number, restated in zip(numbers, context) if not restated]
    if not values:
        return None
    value = values[-1]
    if len(values) > 1 and not _MARKED_BEFORE_RE.search(sentence[:value.start()]):
        return None
    if value is numbers[-1]:
        return value
    return value if plain_tail(sentence[value.end():]) else None


def plain_tail(tail: str) -> bool:
    """Whether what follows a sentence's value only qualifies it and ends the sentence ("minutes late to the party.",
    "on the entire picnic basket."): words, no condition, contrast, denial, comparison or further arithmetic."""
    return bool(_TAIL_RE.match(tail)) and not _TAIL_BLOCK_RE.search(tail)


# A value at the head of an answer's last clause ("equals 360 students in total at the concert"): a plain number,
# with its currency sign or percent; a magnitude word after it is part of the number, not a qualifier (it is kept,
# and the verifier multiplies: `_qualifiers.scaled`).
_LEADING_VALUE_RE = re.compile(r"^\$?([-+]?\d[\d,]*(?:\.\d+)?(?:/\d+)?(?:\s*(?:%|percent\b))?)")
_MAGNITUDE_RE = re.compile(r"^\s*(hundred|thousand|million|billion|trillion|dozen|score)s?\b", re.IGNORECASE)


def qualified_value(tail: str) -> str | None:
    """The number heading `tail` (the rest of an ended answer sentence after its last copula) when all that follows
    it only qualifies it, as after a closing sentence's value: "360 students in total at the concert" -> "360".
    None when anything after it is another number, a condition, contrast, denial, comparison or further arithmetic
    (see `plain_tail`); a magnitude word stays with the number ("36 dozen students in all" -> "36 dozen")."""
    value = _LEADING_VALUE_RE.match(tail)
    if value is None:
        return None
    rest = tail[value.end():]
    stated = value.group(1)
    if magnitude := _MAGNITUDE_RE.match(rest):  # "36 dozen students in all": the magnitude is part of the number
        stated, rest = f"{stated} {magnitude.group(1).lower()}", rest[magnitude.end():]
    if not rest.strip() or any(ch.isdigit() for ch in rest):
        return None
    return stated if plain_tail(rest.rstrip(" .!") + ".") else None


def restates_given(sentence: str, value_start: int, value_end: int) -> bool:
    """Whether the value at sentence[value_start:value_end] quantifies a restated noun phrase ("all $12$
    racquets"), so that a sentence ending with it does not state it as the answer."""
    before, after = sentence[:value_start], sentence[value_end:]
    return bool(_OF_BEFORE_RE.search(before)) or (
        bool(_DETERMINER_BEFORE_RE.search(before)) and bool(_NOUN_AFTER_RE.match(after))
    )
