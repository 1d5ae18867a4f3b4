"""An answer restated in words: "The answer (arabic numerals) is 99. The answer (words) is ninety-nine."

A whole number written in words ("ninety-nine", "one hundred and forty", "two thousand and five"), or a fraction
written as a cardinal and an ordinal ("three-tenths", "one half", "two thirds"), or a decimal read out digit by digit
after "point" ("nine point eight", "zero point two five"), that follows an answer stated in digits and has the same
value says that answer again; the answer in digits stands. The words may be quoted
('"twenty-seven."') or followed by up to three words of a unit ("seventeen dollars"), and an answer stated as an
equation ("323 / 19 = 17") has the value of its last side. A number in words that differs from the answer before it,
or that is none of these ("two point twenty-five", "a half", "three tenth"), is read as the response's last answer, as before (a
number in words is never graded against digits).
"""

from __future__ import annotations

import re
from fractions import Fraction

from olmorl.rewards.math._numbers import parse_number

_UNITS = {word: value for value, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
_TENS = {word: 10 * (index + 2) for index, word in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9}
# The denominator of a fraction in words: singular after "one" ("one-third"), plural after more ("two-thirds").
_ORDINALS = {"half": 2, "third": 3, "quarter": 4, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
             "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "twentieth": 20, "hundredth": 100,
             "thousandth": 1000}
_PLURALS = {"halves": "half", **{word + "s": word for word in _ORDINALS if word != "half"}}
_WORD_RE = re.compile(r"[a-z]+")
_WORDS_ONLY_RE = re.compile(r"^(?:minus\s+|negative\s+)?[a-z]+(?:(?:\s+|-)[a-z]+)*$")
_QUOTES = "\"'\u201c\u201d\u2018\u2019"
# Words that are part of a number, never its unit.
_NUMBER_WORDS = {*_UNITS, *_TENS, *_SCALES, *_ORDINALS, *_PLURALS, "hundred", "and", "minus", "negative", "point"}


def _group(words: list[str]) -> int | None:
    """The value of the words below a scale word ("three hundred and forty-two" -> 342), else None."""
    value, rest = 0, words
    if len(words) >= 2 and words[1] == "hundred":
        if not 1 <= _UNITS.get(words[0], 0) <= 9:
            return None
        value, rest = 100 * _UNITS[words[0]], words[2:]
    if not rest:
        return value or None
    if rest[0] in _TENS and len(rest) <= 2:
        if len(rest) == 2 and not 1 <= _UNITS.get(rest[1], 0) <= 9:
            return None
        return value + _TENS[rest[0]] + (_UNITS[rest[1]] if len(rest) == 2 else 0)
    if len(rest) == 1 and rest[0] in _UNITS:
        return value + _UNITS[rest[0]]
    return None


def words_value(text: str) -> int | None:
    """The whole number a cardinal written in words states ("ninety-nine" -> 99, "one hundred and forty" -> 140,
    "minus seven" -> -7), else None (any other word, a fraction or decimal in words, words out of order)."""
    text = text.strip().rstrip(".!").strip().lower()
    if not _WORDS_ONLY_RE.match(text):
        return None
    words = [w for w in _WORD_RE.findall(text) if w != "and"]
    sign = -1 if words and words[0] in ("minus", "negative") else 1
    words = words[1:] if sign < 0 else words
    if "zero" in words:
        return 0 if words == ["zero"] else None
    total, current, last_scale = 0, [], None
    for word in words:
        if word not in _SCALES:
            current.append(word)
            continue
        group = _group(current)
        if group is None or (last_scale is not None and _SCALES[word] >= last_scale):
            return None  # "thousand" with nothing before it, "two thousand three thousand"
        total, current, last_scale = total + group * _SCALES[word], [], _SCALES[word]
    if current:
        group = _group(current)
        if group is None:
            return None
        total += group
    elif last_scale is None:
        return None
    return sign * total


def fraction_words_value(text: str) -> Fraction | None:
    """The fraction a cardinal and an ordinal state ("three-tenths" -> 3/10, "one half" -> 1/2), else None: the
    ordinal is plural after a numerator above one and singular after "one" ("three tenth", "one thirds": None)."""
    text = text.strip().rstrip(".!").strip().lower()
    if not _WORDS_ONLY_RE.match(text):
        return None
    *numerator_words, last = re.split(r"[\s-]+", text)
    denominator = _ORDINALS.get(_PLURALS.get(last, last))
    numerator = words_value(" ".join(numerator_words)) if numerator_words and denominator else None
    if numerator is None or numerator < 1 or (last in _PLURALS) != (numerator > 1):
        return None
    return Fraction(numerator, denominator)


def decimal_words_value(text: str) -> Fraction | None:
    """The decimal a whole number in words, "point" and one digit word per decimal place state ("nine point eight"
    -> 9.8, "minus zero point two five" -> -0.25), else None ("point eight" with no whole number, "two point
    twenty-five": a decimal place is one digit)."""
    text = text.strip().rstrip(".!").strip().lower()
    sign = -1 if text.startswith(("minus ", "negative ")) else 1
    whole_text, point, places = text.split(" ", 1)[1].partition(" point ") if sign < 0 else text.partition(" point ")
    digits = places.split()
    if not point or not digits or any(_UNITS.get(word, 10) > 9 for word in digits):
        return None
    whole = words_value(whole_text)
    if whole is None or whole < 0:
        return None
    return sign * (whole + Fraction(int("".join(str(_UNITS[word]) for word in digits)), 10 ** len(digits)))


def _number_in_words(text: str) -> Fraction | None:
    """The whole number, fraction or decimal `text` writes in words, else None."""
    whole = words_value(text)
    if whole is not None:
        return Fraction(whole)
    return fraction_words_value(text) or decimal_words_value(text)


def _words_and_unit(text: str) -> Fraction | None:
    """The number in words before up to three words of a unit ("seventeen dollars" -> 17), else None; a word that
    belongs to a number ("point", "thousand", "tenths") is never a unit."""
    words = text.rstrip(".!").split()
    unit = 0
    while unit < min(3, len(words) - 1) and words[-1 - unit].isalpha() \
            and words[-1 - unit].lower() not in _NUMBER_WORDS:
        unit += 1
    return _number_in_words(" ".join(words[:-unit])) if unit else None


# "The answer (arabic numerals) is thirty-seven.": an answer statement whose own lead-in names digits as its form.
_DIGITS_LEAD_IN_RE = re.compile(
    r"the (?:correct |final )?answer\s*\(\s*(?:in\s+)?(?:arabic\s+)?(?:numerals?|digits?)\s*\)", re.IGNORECASE)


def asks_for_digits(text: str, start: int) -> bool:
    """Whether the answer statement at `start` says it gives its answer in digits ("The answer (arabic numerals) is").
    Words there are the answer it gives in that place, not a digits answer said again, so they stay its answer."""
    return _DIGITS_LEAD_IN_RE.match(text, start) is not None


def restated_in_words(previous_value: str, statement: str) -> bool:
    """Whether `statement`, a number written in words, has the value of the answer stated before it
    (`previous_value`, a number in digits, or an equation whose last side is one)."""
    text = statement.strip().strip(_QUOTES).strip()  # '"twenty-seven."': quotes around the words
    value = _number_in_words(text)
    if value is None:
        value = _words_and_unit(text)
    if value is None:
        return False
    previous = previous_value.strip().rstrip(".").strip()
    number = parse_number(previous)
    if number is None and "=" in previous:
        number = parse_number(previous.rsplit("=", 1)[1].strip())  # "323 / 19 = 17" states 17
    return number is not None and number.value == value
