"""Answer forms batch 22's dev split (GPT-3's zero-shot-CoT AddSub and GSM8K logs) showed the math verifier
missing, each accepted case scoring 0 before its fix; the guards after them must keep scoring 0.

- A reference printed to a float's full precision (AddSub's `0.16666666666666666`) is the value whose nearest float
  it is: the exact `1/6`.
- One value written twice, a fraction and then its decimal, joined by "or" ("1/6, or 0.166666666666667"): the
  decimal is the fraction rounded to the places shown, so it is one answer, not a hedge.
- A duration in hours and minutes (`3:45`) answers a "how long" question whose reference counts minutes (225) or
  hours (3.75).
"""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())
TRIGGER = "Therefore, the answer (arabic numerals) is "
SIXTH = "0.16666666666666666"
HOW_LONG = "If every group uses their full 45 minutes, how long will it take for everyone to try the escape room?"


def score(response: str, reference: str, prompt: str | None = None) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward


@pytest.mark.parametrize(
    ("answer", "reference", "reward"),
    [
        ("1/6.", SIXTH, 1.0),
        ("$\\frac{1}{6}$.", SIXTH, 1.0),
        ("2/3.", "0.6666666666666666", 1.0),
        ("1/6.", "0.1666666666666668", 0.0),  # not the float of 1/6
        ("1/6.", "0.1666666666666666", 0.0),
        ("1/7.", SIXTH, 0.0),
        ("1/6.", "0.17", 1.0),  # a rounded reference accepts the exact value, as before
        ("0.166666666666667.", SIXTH, 0.0),  # fewer places than the reference: a rounding, as before
    ],
)
def test_a_float_printed_reference_is_the_exact_value_it_prints(answer, reference, reward):
    assert score(TRIGGER + answer, reference) == reward


@pytest.mark.parametrize(
    ("answer", "reference", "reward"),
    [
        ("1/6, or 0.166666666666667.", SIXTH, 1.0),
        ("1/6 or 0.1667.", SIXTH, 1.0),
        ("2/3 or 0.67.", "0.67", 1.0),
        ("3/8 or 0.375.", "0.375", 1.0),
        ("0.375 or 3/8.", "3/8", 1.0),
        ("1/6 or 0.2.", SIXTH, 0.0),  # one decimal place: too coarse to be only a restatement
        ("1/2 or 1.", "0.5", 0.0),
        ("1/6 or 1/3.", SIXTH, 0.0),
        ("2/3 or 0.6.", "0.6666666666666666", 0.0),
        ("1/6 or 0.1666.", "0.1666", 0.0),  # cut, not rounded: two values
        ("5 or 6.", "5", 0.0),
        ("1/6, or 0.166666666666667.", "0.25", 0.0),
    ],
)
def test_a_fraction_and_its_decimal_joined_by_or_are_one_value(answer, reference, reward):
    assert score(TRIGGER + answer, reference) == reward


HOURS_AND_MINUTES = "225 minutes is equal to 3 hours and 45 minutes. \n" + TRIGGER


@pytest.mark.parametrize(
    ("answer", "reference", "prompt"),
    [("3:45.", "225", HOW_LONG), ("3:45.", "3.75", HOW_LONG), ("1:05.", "65", "How much time does the trip take?")],
)
def test_hours_and_minutes_answer_how_long(answer, reference, prompt):
    assert score(HOURS_AND_MINUTES + answer, reference, prompt) == 1.0


@pytest.mark.parametrize(
    ("answer", "reference", "prompt"),
    [("3:45.", "225", None), ("3:45.", "225", "What time will they finish?"), ("3:45.", "345", HOW_LONG),
     ("3:46.", "225", HOW_LONG), ("3:45 PM.", "225", HOW_LONG), ("3:45 or 4:00.", "225", HOW_LONG),
     ("3:75.", "255", HOW_LONG)],
)
def test_hours_and_minutes_need_a_how_long_question_and_the_same_duration(answer, reference, prompt):
    assert score(HOURS_AND_MINUTES + answer, reference, prompt) == 0.0
