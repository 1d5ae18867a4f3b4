"""Issue 24: a rate unit after the final value ("50 km/h", "12 m/s") is a unit like "square units": the closing
sentence states its value. Found on a dev row of Trinity-RFT's grader tests ("The speed is 50 km/h"; that row
itself has no full stop and stays a difference of conventions). The positive cases scored 0 before the fix; the
guards keep a wrong value, an unfinished sentence and a bound at 0."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIERS = load_verifiers()


def score(response: str, ground_truth: str) -> float:
    verifier = VERIFIERS["math"](Settings())
    return verifier.score(verifier.make_task(response, ground_truth, {}, None)).reward


@pytest.mark.parametrize(
    ("response", "reference"),
    [
        ("The speed is 50 km/h.", "50"),
        ("Therefore, the car travels at 60 km/h.", "60"),
        ("So the speed is $50$ km/h.", "50"),
        ("50 km/h.", "50"),
        ("Thus the rate is 12 m/s.", "12"),
    ],
)
def test_a_rate_unit_after_the_final_value_counts(response, reference):
    assert score(response, reference) == 1.0


@pytest.mark.parametrize(
    ("response", "reference"),
    [
        ("The speed is 50 km/h.", "60"),  # a wrong value
        ("So the speed is $50$ km/h.", "5"),
        ("The speed is 50 km/h", "50"),  # no full stop: the response may have been cut off
        ("Thus the total is 12 and/or more.", "12"),  # not a unit
        ("So he drove at 50 km/h for 3 hours.", "3"),  # a restated given after the value
    ],
)
def test_guards_stay_at_zero(response, reference):
    assert score(response, reference) == 0.0
