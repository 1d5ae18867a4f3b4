"""Batch 71's dev false reject (benchmarks/data/real_outputs.jsonl, kojima's plain zero-shot SVAMP log): "The answer
(arabic numerals) is _____." and then one last line that states the value, "The tree had to begin with 8 ripe
apples.". The blank is the answer template's, not a value; the line after it, when it ends the response, is the
answer. The case marked "was 0.0" scored 0 before the change; the guards (a blank alone, a wrong value, two values,
a hedge in the line, a line that is not the last, a non-answer) score 0 before and after. Written from the form,
not copied from the row."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())

APPLES = ("Rachel picked 2 ripe apples from her tree. Now the tree has 7 apples still on it. If 6 of those are ripe "
          "and the rest are unripe How many ripe apples did the tree have to begin with?")
BLANK = "The answer (arabic numerals) is _____."


def score(response: str, reference: str, prompt: str) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward


@pytest.mark.parametrize(
    ("response", "reward"),
    [
        (f"{BLANK}\n\nThe tree had to begin with 8 ripe apples.", 1.0),  # was 0.0
        (f"{BLANK}\n\nThe tree had to begin with 9 ripe apples.", 0.0),
        (BLANK, 0.0),
        (f"{BLANK}\n\nThe tree had 8 or 9 ripe apples.", 0.0),
        (f"{BLANK}\n\nThe tree had 8 ripe apples. Or maybe 9.", 0.0),
        (f"{BLANK}\n\nIt had 8 ripe apples, or perhaps 9.", 0.0),
        (f"{BLANK}\n\nThe tree had to begin with 8 ripe apples.\n\nOr 9.", 0.0),
        (f"{BLANK}\n\nWe cannot tell how many apples there were.", 0.0),
        (f"{BLANK} The tree had to begin with 8 ripe apples.", 0.0),
    ],
)
def test_a_blank_answer_template_is_answered_by_the_last_line_after_it(response, reward):
    assert score(response, "8", APPLES) == reward, response
