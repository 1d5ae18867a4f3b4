"""Issue 24: a closing sentence with several numbers is not read by its last one. A number that quantifies a
restated given ("all 12 racquets", "out of 20", "for 3 weeks") is context, not the answer; when several values
are left and nothing marks one, the sentence states no answer (never a guess). Every case scored wrong before
the fix except those marked "guard" (and the last test's, which score the same on both); the hyphenated-unit cases
(batch 23) scored 0 before their fix except their guards."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIERS = load_verifiers()
ANDY = "45 + 110 + 72 = 227 minutes. \nSo, it will take Andy 227 minutes to string all 12 racquets."


def score(response: str, ground_truth: str) -> float:
    verifier = VERIFIERS["math"](Settings())
    return verifier.score(verifier.make_task(response, ground_truth, {}, None)).reward


@pytest.mark.parametrize(
    ("response", "reference"),
    [
        (ANDY, "12"),  # the dev row: the restated count was read as the answer
        ("Work it out: 3 * 9 = 27.\nSo the 3 friends have 27 apples.", "3"),  # guard
        ("Thus, she answered 18 questions correctly out of 40.", "40"),
        ("So he earns 600 dollars for 3 weeks.", "3"),
        ("So it takes $227$ minutes to string all $12$ racquets.", "12"),  # math spans
        ("So he spent 20 minutes on 4 tasks.", "4"),  # two values, neither marked: no guess
        ("So he spent 20 minutes on 4 tasks.", "20"),  # guard
        ("So he needs to work for 5 weeks to save 200 dollars.", "200"),  # the duration comes first: no context
        ("Therefore, he paid 15 dollars for 3 shirts.", "3"),
        ("So it will take 227 minutes if he strings all 12 racquets.", "12"),  # a condition follows the value
        ("So each of the 5 boxes holds 12 apples.", "12"),  # a rate (a distributive given): 12 or 60?
    ],
)
def test_a_restated_given_or_an_unmarked_value_is_never_accepted(response, reference):
    assert score(response, reference) == 0.0


@pytest.mark.parametrize(
    ("response", "reference"),
    [
        (ANDY, "227"),
        ("So, all 12 racquets take 227 minutes.", "227"),
        ("Thus, she answered 18 questions correctly out of 40.", "18"),
        ("So he earns 600 dollars for 3 weeks.", "600"),
        ("Therefore, the 3 friends have 27 apples in total.", "27"),
        ("In total, they collected 56 shells from all of the 4 beaches.", "56"),
    ],
)
def test_the_value_before_a_restated_given_is_the_answer(response, reference):
    assert score(response, reference) == 1.0


# Batch 23 (Phi-3-mini on hendrycks_math, a dev row): a restated given whose number carries a hyphenated unit
# before its noun ("the 1.835-liter container") is context too, so the sentence's value is its answer.
PRESSURE = ("P2 = (4 kPa * 3.67 L) / 1.835 L\n\nP2 \u2248 8 kPa\n\n"
            "So, the new pressure in the 1.835-liter container will be approximately 8 kPa.")


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        (PRESSURE, "8", 1.0),  # the dev row
        ("Therefore, the 12-inch pizza costs 15 dollars.", "15", 1.0),
        ("So his 3-year-old son ate 4 apples.", "4", 1.0),
        # guards: the restated given is never the answer; without a determiner the number is a value of its own
        (PRESSURE, "1.835", 0.0),
        ("Therefore, the 12-inch pizza costs 15 dollars.", "12", 0.0),
        ("So, Tom filled 3-liter bottles for 8 dollars.", "8", 0.0),  # two unmarked values: no guess
        ("So, Tom filled 3-liter bottles for 8 dollars.", "3", 0.0),
        ("So the pressure in the 1.835-liter container is 8 kPa if the gas stays cold.", "8", 0.0),  # a condition
    ],
)
def test_a_hyphenated_unit_before_a_restated_noun_is_context(response, reference, reward):
    assert score(response, reference) == reward


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        # guards: the same on the old code
        ("Thus the roots give 6 and 8, and their product is 48.", "48", 1.0),  # marked by "is"
        ("Therefore, Janet makes 9 * 2 = 18 dollars.", "18", 1.0),  # marked by "="
        ("Therefore, there are 12 sequences for each of the 3 cases.", "12", 0.0),  # a rate: 12 or 36?
        ("So the answer is 4 or 6.", "4", 0.0),  # a hedge
        ("Jojo scored 54 points.", "54", 1.0),
        ("She earns 18 dollars a day.", "18", 0.0),
    ],
)
def test_marked_values_rates_and_hedges(response, reference, reward):
    assert score(response, reference) == reward
