"""A closing sentence that only rewrites the value stated just before it, the form batch 25's dev split (gemma2-2b's
MATH500 baseline report) showed the math verifier missing: "The fraction of 2 feet that equals 3 inches is
**3/24**. This can be simplified to **1/8**." Each accepted case scored 0 before the fix; the guards after them
must keep scoring 0: a different number, a denial, a condition, a hedge or a bound before it is no answer.
"""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())
QUESTION = "Problem: What fraction of 2 feet is 3 inches? Express your answer as a common fraction."
SIGN_OFF = " \n\n\n\nLet me know if you'd like to explore other mathematical problems! \n"


def score(response: str, reference: str, prompt: str | None = None) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward


@pytest.mark.parametrize(
    ("response", "reference"),
    [
        ("The fraction of 2 feet that equals 3 inches is **3/24**. This can be simplified to **1/8**." + SIGN_OFF,
         "\\frac{1}{8}"),
        ("The fraction is **3/24**. This can be simplified to **1/8**.", "\\frac{1}{8}"),
        ("The probability is 6/8. This simplifies to 3/4.", "\\frac34"),
        ("The probability is 0.5. This can be written as 1/2.", "\\frac12"),
        ("So the ratio is 10/4. It can also be expressed as 5/2.", "\\frac{5}{2}"),
    ],
)
def test_a_value_rewritten_in_the_last_sentence_is_the_answer(response, reference):
    assert score(response, reference, QUESTION) == 1.0
    assert score(response, reference) == 1.0


@pytest.mark.parametrize(
    ("response", "reference"),
    [
        ("The fraction is **3/24**. This can be simplified to **1/7**.", "\\frac{1}{8}"),
        ("The fraction is **3/24**. This can be simplified to **1/7**.", "\\frac{1}{7}"),  # two numbers: no answer
        ("The fraction is 3/24. This cannot be simplified to 1/8.", "\\frac{1}{8}"),
        ("Let x be 3/24. This can be simplified to 1/8.", "\\frac{1}{8}"),
        ("The fraction is 3/24 or 4/24. This can be simplified to 1/8.", "\\frac{1}{8}"),
        ("So the fraction is at least 3/24. This can be simplified to 1/8.", "\\frac{1}{8}"),
        ("The probability is 0.33. This can be written as 1/3.", "\\frac{1}{3}"),  # a rounding, not the same number
        ("The fraction is 3/24. This is 1/8.", "\\frac{1}{8}"),
    ],
)
def test_a_rewriting_that_is_not_of_the_stated_value_states_no_answer(response, reference):
    assert score(response, reference, QUESTION) == 0.0
