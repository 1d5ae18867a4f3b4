"""A response whose last line opens the closing answer statement and stops before its value ("The answer",
"The answer is:") was cut at the generation limit (benchmarks/data/real_outputs.jsonl, batch 49's dev split:
Phi-3-mini's hendrycks_math doc 122 boxes its answer, then its closing line is cut after "The answer"). A response
that never finished gives no answer, whatever it boxed before. The first case scored 1.0 before the fix; the
accepted cases are guards (a finished closing line, the value on the next line, a harness's own lead-in)."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())
BOXED = "Therefore, the coordinates of the other endpoint are $(x, y) = \\boxed{(15, -11)}$.\n"


def score(response: str, reference: str) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, None)).reward


@pytest.mark.parametrize("tail", ["The answer", "The answer is", "The answer is:", "The answer is: ",
                                  "So, the final answer is:", "Therefore, the answer"])
def test_a_closing_line_cut_before_its_value_gives_no_answer(tail: str) -> None:
    assert score(BOXED + tail, "(15,-11)") == 0.0


@pytest.mark.parametrize("response", [
    BOXED + "The answer is: (15,-11)",
    BOXED + "The answer is:\n(15, -11)",
    BOXED + "The answer is correct.",
    # kojima's zero-shot-CoT logs end on the harness's own answer prompt, after the model stated its answer
    "So the answer is $\\boxed{(15, -11)}$.\n\nTherefore, among A through E, the answer is",
])
def test_a_finished_closing_or_another_lead_in_is_read_as_before(response: str) -> None:
    assert score(response, "(15,-11)") == 1.0
