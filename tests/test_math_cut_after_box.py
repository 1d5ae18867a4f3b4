"""Batch 86's held-out false accept, read after its numbers were recorded (benchmarks/data/real_outputs.jsonl,
pmemoli's hendrycks_math intermediate_algebra doc 200): the working boxes 6 inside an `align*` block, goes on
("Equality occurs when $x^2 = 2y^2 = 4z^2,$ or $x =") and is cut at the generation limit inside that equation. A
response that never finished has no final answer (the extraction policy's "truncated"), as one cut in its answer line
("The answer") already had none. The rejected cases scored 1 before the change; the kept ones (a finished response,
an equation finished after the box, a phrase answer the working runs on after, an equals sign inside the box) score 1
before and after."""

from __future__ import annotations

import pytest

from test_math_read_heldout_forms import score  # the math verifier's reward, given the prompt

WORKING = "&= 3 \\cdot \\frac{2}{xyz} \\cdot y \\\\\n&= \\boxed{6}.\n\\end{align*}\n"


@pytest.mark.parametrize("response", [
    "\\begin{align*}\n" + WORKING + "Equality occurs when $x^2 = 2y^2 = 4z^2,$ or $x =",
    "So the minimum is $\\boxed{6}$. Check: $2 \\cdot 3 =",
    "So the minimum is $\\boxed{6}$. Check: 2 * 3 = ",
    "So the minimum is $\\boxed{6}$.\n\nEquality holds when x =\n",
])
def test_cut_inside_an_equation_after_the_box_is_no_answer(response: str) -> None:
    assert score(response, "6") == 0.0


@pytest.mark.parametrize("response", [
    "\\begin{align*}\n" + WORKING + "Equality occurs when $x^2 = 2y^2 = 4z^2$.",
    "So the minimum is $\\boxed{6}$. Check: $2 \\cdot 3 = 6$.",
    "So the minimum is $\\boxed{6}$.",
    "So the minimum is $\\boxed{x = 6}$",
    "Among A through E, the answer is 6.\n\n4! = 4 * 3 * 2 *",
])
def test_finished_responses_keep_their_answer(response: str) -> None:
    assert score(response, "6") == 1.0
