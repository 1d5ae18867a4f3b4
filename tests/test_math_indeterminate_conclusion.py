"""A final answer given right after the response concludes that the value is not determined ("... can be any real
number.\\nThe answer is: 0") contradicts that conclusion, so the response gives no answer (batch 55's dev false
accept, geometry doc 110); guards keep answers that do not contradict their last sentence."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())

Q = ("The point at $(a, b)$ on a Cartesian plane is reflected over the  $y$-axis to the point at $(j, k)$. If "
     "$a + j = 0$ and $b + k = 0$, what is the value of $b$?")
WORK = ("we can substitute $j = -a$ and $k = -b$ into these equations to get $a + (-a) = 0$ and $b + (-b) = 0$.\n"
        "Simplifying, we find that $0 = 0$ and $0 = 0$, which are true statements.\n")


def score(response: str, reference: str, prompt: str | None = Q) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward


@pytest.mark.parametrize("response", [
    WORK + "Therefore, the value of $b$ can be any real number.\nThe answer is: 0",
    WORK + "So $b$ cannot be determined.\nThe answer is: 0",
    WORK + "Hence $b$ can take any value.\n\nThe answer is $0$.",
    WORK + "Thus the value of $b$ is not uniquely determined.\nFinal Answer: The final answer is $0$.",
])
def test_an_answer_after_an_undetermined_conclusion_is_no_answer(response: str) -> None:
    assert score(response, "b=0") == 0.0


@pytest.mark.parametrize("response, reference", [
    (WORK + "Therefore, the value of $b$ is 0.\nThe answer is: 0", "b=0"),  # the sentence states the value
    ("$x$ can be any integer, so the least positive value is $1$.\nThe answer is: 1", "1"),  # claim not last
    ("Every $x$ works, so $x$ can be any real number.\nThe answer is: (-\\infty,\\infty)",
     "(-\\infty,\\infty)"),  # the answer is the range the sentence states
    ("The value of $b$ can be any real number, as we saw.\n\nLater: $b = 0$ from the second condition, so the value "
     "of $b$ is $0$.\nThe answer is: 0", "b=0"),  # an earlier sentence, not the one before the answer
])
def test_answers_that_do_not_contradict_their_last_sentence_stand(response: str, reference: str) -> None:
    assert score(response, reference) == 1.0
