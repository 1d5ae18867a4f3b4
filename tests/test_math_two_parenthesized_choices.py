"""Batch 81's dev miss (benchmarks/data/real_outputs.jsonl, kojima's CommonsenseQA CoT log #531): "Among A through
E, the answer is (A) and (B)." for a question with one answer, reference A. Two choices joined by "and" name no single
choice, as "A, B, and C." and "(B), (C), and (E)." do; the parenthesized first letter was read as the choice and the
rest as its text. The rejected cases scored 1 before the change; the kept cases (one choice, its option's text, the
pronoun I after "and") score 1 before and after."""

from __future__ import annotations

import pytest

from test_math_read_heldout_forms import score  # the math verifier's reward, given the prompt

VIOLIN = ("What are you playing if you're fiddling on a violin? Answer Choices: (A) bluegrass music (B) make music "
          "(C) drop (D) string instrument (E) troubles")
PREFIX = "Among A through E, the answer is "
# The dev row and its other wordings, reference A: a second choice after "and" or "&".
TWO_CHOICES = ["(A) and (B).", "(A) and (B)", "(A) & (B).", "(A) and (B) are both correct.", "(A) and B."]
# Kept, reference A: one choice, alone or with its option's text or a sentence about it.
ONE_CHOICE = ["(A).", "A.", "(A) bluegrass music.", "A, bluegrass music.", "(A) and I am sure of it."]


def reward(answer: str, reference: str = "A") -> float:
    return score(PREFIX + answer, reference, VIOLIN)


@pytest.mark.parametrize("answer", TWO_CHOICES)
def test_two_choices_joined_by_and_name_no_choice(answer: str) -> None:
    assert reward(answer) == 0.0
    assert reward(answer, reference="B") == 0.0


@pytest.mark.parametrize("answer", ONE_CHOICE)
def test_one_choice_is_still_read(answer: str) -> None:
    assert reward(answer) == 1.0
    assert reward(answer, reference="B") == 0.0
