"""Answer forms of batch 55's held-out false accept and false reject and batch 54's held-out false reject
(benchmarks/data/real_outputs.jsonl), read on 2026-11-27 after each split's never-tuned number was recorded
(docs/fidelity.md, "Held-out misses read after their numbers were recorded"). The cases are written from the forms,
not copied from the rows. Each case marked "was 1.0" scored 1 before its fix and each marked "was 0.0" scored 0; the
unmarked cases are guards, the same on the code before and after."""

from __future__ import annotations

import pytest
from test_math_read_heldout_forms import score  # the math verifier's reward, given the prompt


INTEGER = "What integer $n$ satisfies $\\frac{1}{3}<\\frac{n}{9}<\\frac{1}{2}$?"


# Batch 55's held-out false accept: boxes mark final answers, so a sentence that offers two boxes joined by "or" is a
# hedge, and an answer line right after it that picks one of them takes no other back.
@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        ("So the integer $n$ is $\\boxed{4}$ or $\\boxed{5}$.\nThe answer is: 4", "4", 0.0),  # was 1.0
        ("So the integer $n$ is $\\boxed{4}$ or $\\boxed{5}$.\nThe answer is: 5", "4", 0.0),
        ("So $n = \\boxed{4}$ or $n = \\boxed{5}$.\n\nFinal Answer: The final answer is $4$. I hope it is correct.",
         "4", 0.0),  # was 1.0
        ("So $n$ is $\\boxed{4}$ or $\\boxed{5}$.\nThe answer is: 4 or 5", "4", 0.0),
        # One box, or the same value boxed twice, or boxes joined by "and" for a list answer, or a reason that
        # picks one in the answer's own sentence: the answer line stands.
        ("So the integer $n$ is $\\boxed{4}$.\nThe answer is: 4", "4", 1.0),
        ("So $n$ is $\\boxed{4}$ or $\\boxed{4}$.\nThe answer is: 4", "4", 1.0),
        ("The solutions are $\\boxed{4}$ and $\\boxed{5}$.\nThe answer is: 4, 5", "4, 5", 1.0),
        ("The roots are $\\boxed{4}$ or $\\boxed{-5}$. Only 4 is positive, so the answer is 4.", "4", 1.0),
    ],
)
def test_answer_line_after_boxed_alternatives(response: str, reference: str, reward: float) -> None:
    assert score(response, reference, INTEGER) == reward
