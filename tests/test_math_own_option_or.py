"""Batch 51's dev miss (benchmarks/data/real_outputs.jsonl, kojima's plain CommonsenseQA log #576): "Among A through
E, the answer is most likely B, city or town." where option B is "city or town". The "or" is inside the named
option's own text, as the prompt lists it, so the answer names one choice; it was read as the hedge "B, city" or
"town". The accepted cases scored 0 before the change; the guards (another option's text, part of the option's text,
a second choice or another alternative after it, a wrong letter, no option list) score 0 before and after."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

SUPERMARKET = ("Where are you likely to find a supermarket? Answer Choices: (A) buy food for family (B) city or town "
               "(C) get supplies (D) strip mall (E) vermont")
LINES = "Where are you likely to find a supermarket?\nA. buy food for family\nB. city or town\nC. get supplies"

PREFIX = "Among A through E, the answer is "
# The dev row and its other wordings, reference B: the letter with its own option's full text.
NAMED = [("most likely B, city or town.", SUPERMARKET), ("B, city or town.", SUPERMARKET),
         ("B, \"city or town.\"", SUPERMARKET), ("(B) City or Town.", SUPERMARKET), ("B, city or town.", LINES)]
# Guards, reference B unless named: the right letter is still needed, and the text must be the whole of that
# option's own text, with nothing offered after it.
HEDGED = [("B, city or suburb.", SUPERMARKET), ("B, city or town or D, strip mall.", SUPERMARKET),
          ("B, city or town, or D.", SUPERMARKET), ("B, city or D.", SUPERMARKET),
          ("B, strip mall or vermont.", SUPERMARKET), ("B, city or town.", "Where are you likely to find a supermarket?"),
          ("city or town.", SUPERMARKET)]


def reward(answer: str, prompt: str, reference: str = "B") -> float:
    math = load_verifiers()["math"](Settings())
    return math.score(math.make_task(PREFIX + answer, reference, {}, prompt)).reward


@pytest.mark.parametrize(("answer", "prompt"), NAMED)
def test_named_option_with_or_is_one_choice(answer: str, prompt: str) -> None:
    assert reward(answer, prompt) == 1.0
    assert reward(answer, prompt, reference="D") == 0.0


@pytest.mark.parametrize(("answer", "prompt"), HEDGED)
def test_other_text_or_alternatives_stay_hedged(answer: str, prompt: str) -> None:
    assert reward(answer, prompt) == 0.0
