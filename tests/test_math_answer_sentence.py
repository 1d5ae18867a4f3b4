"""Answer phrases whose statement is a sentence (benchmarks/data/real_outputs.jsonl, batch 17's dev split): the value
after the sentence's last copula may be followed by words that only qualify it, as a closing sentence's value may
(tests/test_math_closing_results.py). Each 1.0 case scored 0 before the fix; the 0.0 cases are guards."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())

# GPT-3's zero-shot-CoT answer trigger, as the kojima-takeshi188/zero_shot_cot logs print it.
TRIGGER = "Therefore, the answer (arabic numerals) is "
BUSES = TRIGGER + "8 buses carrying 45 students each equals "


def score(response: str, reference: str) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, None)).reward


# batch 17 (SingleEq, a dev false reject): the product's result, then its unit and where it was counted.
ACCEPTED = [
    BUSES + "360 students in total at the concert.",
    TRIGGER + "8 * 45 = 360 students in total at the concert.",
    BUSES + "360 students in total at the concert. I hope this helps!",
]
# Guards, each against the reference 360 but the first: an operand; a sentence cut off or without its full stop; a
# condition, a second number, a magnitude word, an alternative, a comparison or a retraction after the value.
GUARDS = [
    (BUSES + "360 students in total at the concert.", "8"),
    (BUSES + "360 students in total at the", "360"),
    (BUSES + "360 students in total at the concert", "360"),
    (BUSES + "360 students unless some stayed home.", "360"),
    (BUSES + "360 students in total at 2 concerts.", "360"),
    (BUSES + "36 dozen students in all.", "36"),
    (BUSES + "360 students or more in total.", "360"),
    (BUSES + "360 students fewer than last year.", "360"),
    (BUSES + "360 students in total, wait, that is wrong.", "360"),
]


@pytest.mark.parametrize(("response", "reference", "reward"),
                         [(r, "360", 1.0) for r in ACCEPTED] + [(r, ref, 0.0) for r, ref in GUARDS])
def test_a_value_after_the_last_copula_may_be_qualified(response, reference, reward):
    assert score(response, reference) == reward
