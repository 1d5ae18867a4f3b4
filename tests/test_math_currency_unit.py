"""Issue 24, batch 98 (labrem gemma2-9b openmath math_00301, a held-out false accept read after its numbers were
recorded): `$\\boxed{\\$5.4}$` for "What was the average price, in cents, of his 70's stamps?" (reference
`5.4 \\text{ cents}`, the authors' verdict wrong). A dollar amount does not answer a question asked in cents, nor a
cents amount one asked in dollars, though the number is the reference's. The rejected cases scored 1 before the
fix; the accepted ones (the asked unit named, no unit, a question and reference that name none) score 1 on both."""

from __future__ import annotations

import pytest

from _math_reward import math_reward

STAMPS = ("What was the average price, in cents, of his $70\\text{'s}$ stamps? Round your answer to the nearest tenth "
          "of a cent.")
CENTS = "5.4 \\text{ cents}"


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        ("**5. FORMAT:**\n\n$\\boxed{\\$5.4}$", CENTS, STAMPS, 0.0),  # the held-out row's form
        ("$\\boxed{5.4 \\text{ dollars}}$", CENTS, STAMPS, 0.0),
        ("$\\boxed{\\$5.4}$", "5.4", "How many cents does each stamp cost on average?", 0.0),
        ("$\\boxed{45 \\text{ cents}}$", "45", "How many dollars did she spend in all?", 0.0),
        ("$\\boxed{5.4}$", CENTS, STAMPS, 1.0),
        ("$\\boxed{5.4 \\text{ cents}}$", CENTS, STAMPS, 1.0),
        ("$\\boxed{\\$45}$", "45", "How many dollars did she spend in all?", 1.0),
        ("$\\boxed{45}$", "45", "How many dollars did she spend in all?", 1.0),
        ("$\\boxed{\\$5.40}$", "5.40", "How much did the stamps cost on average?", 1.0),  # no unit asked
        ("$\\boxed{\\$5.4}$", CENTS, STAMPS.replace("in cents", "in dollars"), 1.0),  # the question's unit decides
        ("$\\boxed{\\$5.4}$", CENTS, STAMPS, 0.0),
    ],
)
def test_an_amount_in_the_other_currency_unit_is_not_the_answer(response, reference, prompt, reward):
    assert math_reward(response, reference, prompt) == reward, response
