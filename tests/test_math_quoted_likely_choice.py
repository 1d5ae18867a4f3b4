"""Batch 85's dev miss (benchmarks/data/real_outputs.jsonl, kojima's plain CommonsenseQA log #988): "Among A through
E, the answer is most likely "B: crowd."" for reference B. A choice named as the likely one is the choice ("most likely
B, a public place." was read before); quoted with its option's text, the quotes around all that follows "most likely"
are not part of it, as quotes around a whole answer are not. The read cases scored 0 before the change; the kept
cases (two choices in quotes, a second choice offered, "probably") score 0 before and after."""

from __future__ import annotations

import pytest

from test_math_read_heldout_forms import score  # the math verifier's reward, given the prompt

AUDITORIUM = ("Who watches a play in an auditorium? Answer Choices: (A) building (B) crowd (C) city (D) group "
              "(E) high school")
PREFIX = "Among A through E, the answer is "
# The dev row and its other wordings, reference B: one quoted choice after "most likely".
QUOTED_CHOICE = ['most likely "B: crowd."', 'most likely "B."', 'most likely "B".', "most likely \u201cB: crowd.\u201d",
                 'most likely "B, crowd."', 'likely to be "(B) crowd."']
# Kept at 0 for every reference: two choices, a second choice offered, a hedge.
NO_SINGLE_CHOICE = ['most likely "B" or "D."', 'most likely "B or D."', 'most likely "B, D."',
                    'most likely "B: crowd, but it could be D."', 'most likely "B: crowd" or "D: group."',
                    'probably "B: crowd."']


def reward(answer: str, reference: str) -> float:
    return score(PREFIX + answer, reference, AUDITORIUM)


@pytest.mark.parametrize("answer", QUOTED_CHOICE)
def test_quoted_likely_choice_is_read(answer: str) -> None:
    assert reward(answer, "B") == 1.0
    assert reward(answer, "D") == 0.0


@pytest.mark.parametrize("answer", NO_SINGLE_CHOICE)
def test_quoted_choices_that_name_no_single_choice_stay_rejected(answer: str) -> None:
    assert reward(answer, "B") == 0.0
    assert reward(answer, "D") == 0.0
