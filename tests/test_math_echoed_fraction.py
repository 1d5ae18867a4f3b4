"""A closing sentence that states a fraction followed by the question's own "of a X" answers "What fraction of a X
...?" (batch 52's dev false reject, prealgebra doc 141); guards keep other sentences unread."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())

Q = "Catherine has 6 gallons of milk and uses 26/5 gallons to make cookies. What fraction of a gallon does she have left?"
WORK = "30/5 gallons - 26/5 gallons = (30 - 26) / 5 gallons\n= 4/5 gallons\n\n"


def score(response: str, reference: str, prompt: str | None) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward


@pytest.mark.parametrize("response", [
    WORK + "Catherine has 4/5 of a gallon of milk left after making cookies.",
    "Catherine has 4/5 of a gallon left.",
])
def test_a_fraction_of_the_asked_unit_answers(response: str) -> None:
    assert score(response, "\\frac{4}{5}", Q) == 1.0


@pytest.mark.parametrize("response, prompt", [
    ("Catherine has 3/5 of a gallon of milk left.", Q),  # another value
    ("Catherine has 4/5 of a gallon of milk left.", "Catherine has milk. How much is left?"),  # not asked
    ("Catherine has 4/5 of a cup of milk left.", Q),  # another unit
    ("Catherine has 4/5 of a gallon or 1/5 of a gallon left.", Q),  # an alternative
    ("Maybe Catherine has 4/5 of a gallon left.", Q),  # a hedge
    ("Catherine does not have 4/5 of a gallon left.", Q),  # a denial
    ("Catherine has 4/5 of a gallon of milk left after using 2 cups.", Q),  # another number
    ("Catherine has 4/5 of a gallon of milk left after", Q),  # cut
])
def test_other_sentences_are_not_read(response: str, prompt: str) -> None:
    assert score(response, "\\frac{4}{5}", prompt) == 0.0
