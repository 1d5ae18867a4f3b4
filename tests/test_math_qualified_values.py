"""Words around a stated value that change what it states (`olmorl.rewards.math._qualifiers`), through the `math` and
`gsm8k` verifiers: a bound is no answer ("360 students or more"), a magnitude word is part of the number ("3 hundred"
is 300, never 3); an answer that offers another after a contrast ("no, but it may be yes") is a hedge
(tests/test_math_choice_and_word_answers.py). Found by probing (no corpus row): each 0.0 case below scored 1.0
before (a false accept), and each 1.0 case marked "new" scored 0; the rest are guards for forms that must keep
scoring."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIERS = load_verifiers()
MATH = VERIFIERS["math"](Settings())
GSM8K = VERIFIERS["gsm8k"](Settings())

TRIGGER = "Therefore, the answer (arabic numerals) is "
HOW_MANY = "How many students are at the concert?"


def score(verifier, response: str, reference: str, prompt: str | None = None) -> float:
    return verifier.score(verifier.make_task(response, reference, {}, prompt)).reward


# (response, reference, question, reward)
BOUNDS = [
    ("The answer is 360 students or more in total.", "360", HOW_MANY, 0.0),
    ("The answer is 360 or fewer students.", "360", HOW_MANY, 0.0),
    ("The answer is at least 360 students.", "360", HOW_MANY, 0.0),
    ("The answer is at most 360 students.", "360", HOW_MANY, 0.0),
    ("The answer is up to 360 students.", "360", HOW_MANY, 0.0),
    ("The answer is more than 360 students.", "360", HOW_MANY, 0.0),
    ("The answer is less than 360 students.", "360", HOW_MANY, 0.0),
    ("The answer is 360 students at least.", "360", HOW_MANY, 0.0),
    ("The answer is a minimum of 360 students.", "360", HOW_MANY, 0.0),
    ("The answer is 360+.", "360", HOW_MANY, 0.0),
    (TRIGGER + "360 students or more in total.", "360", HOW_MANY, 0.0),
    ("#### at least 360", "360", HOW_MANY, 0.0),
    ("<answer>360 or more</answer>", "360", HOW_MANY, 0.0),
    ("\\boxed{\\text{at least } 360}", "360", HOW_MANY, 0.0),
    ("So there are at least 360 students.", "360", HOW_MANY, 0.0),
    ("So there are 360 students or more in total.", "360", HOW_MANY, 0.0),
    # a bound answers a question that asks for that bound; a strict bound never
    ("The answer is at least 5 boxes.", "5", "What is the least number of boxes he needs?", 1.0),
    ("So he needs at least 5 boxes.", "5", "What is the minimum number of boxes he needs?", 1.0),
    ("The answer is more than 7.", "7", "What is the largest possible value of n?", 0.0),
    ("The answer is at least 60.", "60", "How many sequences contain at least one T?", 0.0),  # not asked for
    # guards: the value itself, a bound inside the reasoning, a difference, a rounding
    ("The answer is 360 students.", "360", HOW_MANY, 1.0),
    ("The answer is 360 students in total.", "360", HOW_MANY, 1.0),
    ("At least 12 are needed for 3 groups of 4. The answer is 12.", "12", None, 1.0),
    ("The answer is 360 more students than last year.", "360", "How many more students came this year?", 1.0),
    ("The total is 359.6, so the answer is 360.", "360", HOW_MANY, 1.0),
    ("So the angles add up to 360 degrees.", "360", "What is the sum of the angles?", 1.0),
]
MAGNITUDES = [
    ("The answer is 3 hundred students in all.", "3", HOW_MANY, 0.0),
    ("The answer is 3 hundred students in all.", "300", HOW_MANY, 1.0),  # new
    ("The answer is 2.5 million.", "2.5", "How much did it cost?", 0.0),
    ("The answer is 2.5 million.", "2500000", "How much did it cost?", 1.0),  # new
    ("The answer is $3$ thousand.", "3", HOW_MANY, 0.0),
    ("\\boxed{3 \\text{ hundred}}", "3", HOW_MANY, 0.0),
    ("#### 3 hundred", "3", HOW_MANY, 0.0),
    ("Final Answer: The final answer is 3 hundred. I hope it is correct.", "3", HOW_MANY, 0.0),
    ("So there are 36 dozen eggs.", "36", "How many eggs did she buy?", 0.0),
    ("So there are 36 dozen eggs.", "432", "How many eggs did she buy?", 1.0),  # new
    (TRIGGER + "36 dozen.", "36", "How many eggs did she buy?", 0.0),
    ("The answer is 3 hundred and 20.", "20", HOW_MANY, 0.0),
    ("The answer is 3 hundred and 20.", "320", HOW_MANY, 1.0),  # new
    # where the question asks in that unit, the word is the unit
    ("The answer is 2.5 million.", "2.5", "How much did the company earn, in millions of dollars?", 1.0),
    ("The answer is 36 dozen.", "36", "How many dozen eggs did she buy?", 1.0),
    # guards: "hundredths" is no magnitude; a number restated in words beside its digits
    ("The answer is 3 hundredths.", "3", HOW_MANY, 1.0),
    ("The answer is 300 students.", "300", HOW_MANY, 1.0),
]


@pytest.mark.parametrize("verifier", [MATH, GSM8K], ids=["math", "gsm8k"])
@pytest.mark.parametrize(("response", "reference", "question", "reward"), BOUNDS + MAGNITUDES)
def test_bounds_and_magnitudes(verifier, response, reference, question, reward):
    assert score(verifier, response, reference, question) == reward
