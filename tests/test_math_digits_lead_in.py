"""Batch 54's dev false accept (benchmarks/data/real_outputs.jsonl, kojima's MultiArith CoT log #406): working that
says "The answer is 37." and then "Therefore, the answer (arabic numerals) is thirty-seven." The statement that asks
for digits gives words, and the corpus grades number words after that lead-in wrong whatever their value; they were
read as the earlier digits said again. The rejected cases scored 1 before the change; the guards (words after a
lead-in that asks for words, digits after the digits lead-in, words alone, another value) score as before."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

QUESTION = ("In fourth grade there were 31 students at the start of the year. During the year 5 students left and 11 "
            "new students came to school. How many students were in fourth grade at the end?")
WORKING = "Let's think step by step.\n\n31 - 5 + 11 = 37 students.\n\n"
# The dev row's form and its other wordings: the digits lead-in gives words, after an earlier digits answer.
WORDS_IN_DIGITS_PLACE = [
    "The answer is 37. \nTherefore, the answer (arabic numerals) is thirty-seven.",
    "The answer is 37.\nTherefore, the answer (arabic numerals) is thirty-seven students.",
    "The final answer is 37.\nThe answer (in arabic numerals) is \"thirty-seven.\"",
]
# Guards, reference 37: words restating digits where the lead-in asks for words still count; digits count.
STILL_RIGHT = [
    "Therefore, the answer (arabic numerals) is 37.\n\nThe answer (words) is thirty-seven.",
    "The answer is 37. The answer (in words) is thirty-seven.",
    "The answer is 37.\nTherefore, the answer (arabic numerals) is 37.",
]
STILL_WRONG = [
    "Therefore, the answer (arabic numerals) is thirty-seven.",
    "The answer is 37.\nTherefore, the answer (arabic numerals) is thirty-eight.",
    "The answer is 36. The answer (words) is thirty-seven.",
]


def reward(answer: str, reference: str = "37") -> float:
    math = load_verifiers()["math"](Settings())
    return math.score(math.make_task(WORKING + answer, reference, {}, QUESTION)).reward


@pytest.mark.parametrize("answer", WORDS_IN_DIGITS_PLACE)
def test_words_where_digits_are_asked_are_not_a_restatement(answer: str) -> None:
    assert reward(answer) == 0.0


@pytest.mark.parametrize("answer", STILL_RIGHT)
def test_restatement_where_words_are_asked_still_counts(answer: str) -> None:
    assert reward(answer) == 1.0


@pytest.mark.parametrize("answer", STILL_WRONG)
def test_words_alone_or_another_value_stay_wrong(answer: str) -> None:
    assert reward(answer) == 0.0
