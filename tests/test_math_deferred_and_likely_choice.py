"""Batch 21's two dev misses (benchmarks/data/real_outputs.jsonl, kojima's plain zero-shot logs). "The answer (Yes or
No) is followed by an explanation." and then a paragraph that opens with the answer, "Yes, it is normal to find
parsley ...": an answer phrase that announces the answer comes next defers to the next paragraph's opening yes/no.
"the answer is likely to be D, a major city.": the choice named as the likely one is the choice, as "most likely D"
is. The accepted cases scored 0 before the change; the guards (a non-answer, a dismissal of the question, no blank
line, no yes/no word, "Yes or no", a hedge after the word; "probably D", "unlikely to be D", "not likely D", a second
choice after "likely") score 0 before and after."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())

PARSLEY = "Is it normal to find parsley in multiple sections of the grocery store?"
CLUBS = ("Where areas are there likely to be many nightclubs? Answer Choices: (A) manhattan (B) drink and dance "
         "(C) alcohol (D) major city (E) downtown area")
DEFERS = "The answer (Yes or No) is followed by an explanation.\n\n"
ANSWER = "Among A through E, the answer is "


def score(response: str, reference: str, prompt: str) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward


# (response to PARSLEY, reference, reward): the dev row, cut off in its explanation after the answer sentence, and
# the announcement's other wordings; then guards: only an announcement defers, and only to a paragraph that opens
# with the word and a mark
YES_NO = [
    (DEFERS + "Yes, it is normal to find parsley in multiple sections of the grocery store. Parsley is a versatile "
     "herb that can", "yes", 1.0),
    (DEFERS + "Yes, it is normal to find parsley in multiple sections of the grocery store.", "no", 0.0),
    ("The answer (Yes or No) is followed by a brief explanation.\n\nNo, it is not.", "no", 1.0),
    ("The answer is as follows:\n\nNo, they do not.", "no", 1.0),
    ("The answer (Yes or No) is not known.\n\nYes, some stores do.", "yes", 0.0),
    ("The answer (Yes or No) is not as important as the explanation.\n\nYes, it is normal.", "yes", 0.0),
    ("The answer (Yes or No) is followed by an explanation.\nYes, it is normal.", "yes", 0.0),
    (DEFERS + "It is normal to find it there.", "yes", 0.0),
    (DEFERS + "Yes or no depends on the store.", "yes", 0.0),
    (DEFERS + "Yes, probably, but maybe not.", "yes", 0.0),
]
# (the text after ANSWER for CLUBS, reference, reward): the choice named as the likely one, and guards
CHOICES = [
    ("likely to be D, a major city.", "D", 1.0),
    ("likely D.", "D", 1.0),
    ("likely to be D, a major city.", "A", 0.0),
    ("probably D.", "D", 0.0),
    ("unlikely to be D.", "D", 0.0),
    ("not likely D.", "D", 0.0),
    ("likely to be A, B, or D.", "D", 0.0),
    ("likely to be D or E.", "D", 0.0),
]


@pytest.mark.parametrize(("response", "reference", "reward"), YES_NO)
def test_an_announced_answer_is_the_next_paragraphs_yes_or_no(response, reference, reward):
    assert score(response, reference, PARSLEY) == reward


@pytest.mark.parametrize(("answer", "reference", "reward"), CHOICES)
def test_the_choice_named_as_likely_is_the_choice(answer, reference, reward):
    assert score(ANSWER + answer, reference, CLUBS) == reward
