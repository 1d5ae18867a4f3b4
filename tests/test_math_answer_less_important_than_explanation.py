"""Batch 74's dev false reject (benchmarks/data/real_outputs.jsonl, kojima's plain zero-shot StrategyQA log): "The
answer (Yes or No) is not as important as the reasoning behind the answer." and then a paragraph that opens with the
answer, "Yes, ... broke the fifth commandment ...". An answer said to matter less than its explanation names the
explanation that follows as where the answer is, so it defers as "followed by an explanation." does, under the same
rule: the next paragraph opens with the word and a mark. The cases marked "was 0.0" scored 0 before the change; the
guards (a wrong reference, something else named as more important, a non-answer, no blank line, no yes/no opening,
"Yes or no", a hedge after the word, the phrase with nothing after it) score 0 before and after. Written from the form, not copied from
the row."""

from __future__ import annotations

import pytest

from test_math_read_heldout_forms import score  # the math verifier's reward, given the prompt

QUESTION = "Did the explorer break the harbour's rules?"
IS = "The answer (Yes or No) is "
REASONING = IS + "not as important as the reasoning behind the answer.\n\n"


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        (REASONING + "Yes, the explorer broke the harbour's rules. He sailed without", "yes", 1.0),  # was 0.0
        (IS + "not as important as the explanation.\n\nNo, he did not break them.", "no", 1.0),  # was 0.0
        (IS + "not as important as the reason for the answer.\n\nYes, he did.", "yes", 1.0),  # was 0.0
        (REASONING + "Yes, the explorer broke the harbour's rules.", "no", 0.0),
        (IS + "not as important as the quality of your question.\n\nYes, he did.", "yes", 0.0),
        (IS + "not known.\n\nYes, he did.", "yes", 0.0),
        (IS + "not as important as the reasoning behind the answer.\nYes, he did.", "yes", 0.0),
        (REASONING + "There is no definitive answer to this question.", "yes", 0.0),
        (REASONING + "Yes or no depends on which rules you mean.", "yes", 0.0),
        (REASONING + "Yes, probably, but maybe not.", "yes", 0.0),
        (IS + "not as important as the reasoning behind the answer.", "yes", 0.0),
    ],
)
def test_an_answer_said_to_matter_less_than_its_explanation_is_the_next_paragraphs_yes_or_no(
        response, reference, reward):
    assert score(response, reference, QUESTION) == reward, response
