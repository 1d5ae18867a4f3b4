"""An ordinal naming the item a "which <noun>" question asks for, the form batch 35's dev split (gemma2-9b's
MATH500 baseline report) showed the math verifier missing: "For which grade is the number of its male bus riders
closest to 135% of ...?" answered `\\boxed{12^{\\mathrm{th}} \\text{ grade}}`, reference 12. Each accepted case
scored 0 before the fix; the guards must keep scoring 0: a question that asks for a value or a count, another noun,
a wrong ordinal suffix, a different number.
"""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())
WHICH_GRADE = ("Problem: The data in the table below shows the percent of bus riders in a survey of Central H.S. "
               "students. For which grade is the number of its male bus riders closest to $135\\%$ of the number "
               "of its female bus riders?")


def score(response: str, reference: str, prompt: str | None = None) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward


@pytest.mark.parametrize(
    ("response", "reference", "prompt"),
    [
        ("The smallest difference is in the **12th grade**.\n\n**5. FORMAT:**\n\n"
         "\\boxed{12^{\\mathrm{th}} \\text{ grade}}", "12", WHICH_GRADE),
        ("\\boxed{12^{th}}", "12", WHICH_GRADE),
        ("The answer is \\boxed{\\text{12th grade}}.", "12", WHICH_GRADE),
        ("\\boxed{21^{\\text{st}} \\text{ century}}", "21", "In which century was the bridge built?"),
        ("\\boxed{3rd floor}", "3", "On which floor does Ann live?"),
        ("\\boxed{2^{nd} rows}", "2", "Which row has the largest sum?"),
    ],
)
def test_an_ordinal_names_the_item_a_which_question_asks_for(response, reference, prompt):
    assert score(response, reference, prompt) == 1.0


@pytest.mark.parametrize(
    ("response", "reference", "prompt"),
    [
        ("\\boxed{12^{th} \\text{ grade}}", "12", None),  # no question: the ordinal is not a number
        ("\\boxed{12^{th} \\text{ grade}}", "12", "How many students are in the grade?"),  # a count is asked
        ("\\boxed{2003^{rd} \\text{ term}}", "2003", "What is the 2003rd term of the sequence?"),  # a value
        ("\\boxed{12^{th} \\text{ term}}", "12", WHICH_GRADE),  # another noun than the one asked about
        ("\\boxed{12^{st} \\text{ grade}}", "12", WHICH_GRADE),  # not the English ordinal of 12
        ("\\boxed{11^{th} \\text{ grade}}", "12", WHICH_GRADE),  # a different grade
        ("\\boxed{12^{th} \\text{ or } 11^{th} \\text{ grade}}", "12", WHICH_GRADE),  # a hedge
    ],
)
def test_other_ordinals_are_not_read_as_the_number(response, reference, prompt):
    assert score(response, reference, prompt) == 0.0
