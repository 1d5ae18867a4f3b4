"""Batch 21's two dev misses (benchmarks/data/real_outputs.jsonl, kojima's plain zero-shot logs). "The answer (Yes or
No) is followed by an explanation." and then a paragraph that opens with the answer, "Yes, it is normal to find
parsley ...": an answer phrase that announces the answer comes next defers to the next paragraph's opening yes/no.
"the answer is likely to be D, a major city.": the choice named as the likely one is the choice, as "most likely D"
is. The accepted cases scored 0 before the change; the guards (a non-answer, a dismissal of the question, no blank
line, no yes/no word, "Yes or no", a hedge after the word; "probably D", "unlikely to be D", "not likely D", a second
choice after "likely") score 0 before and after. Batch 42's two dev misses: "followed by a list of holidays." then
"Yes" alone on its line above the list, and "typically No, ..." for a question asked with "typically"."""

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
    # batch 74: an answer said to matter less than its explanation defers to it
    # (tests/test_math_answer_less_important_than_explanation.py)
    ("The answer (Yes or No) is not as important as the explanation.\n\nYes, it is normal.", "yes", 1.0),
    ("The answer (Yes or No) is followed by an explanation.\nYes, it is normal.", "yes", 0.0),
    (DEFERS + "It is normal to find it there.", "yes", 0.0),
    (DEFERS + "Yes or no depends on the store.", "yes", 0.0),
    (DEFERS + "Yes, probably, but maybe not.", "yes", 0.0),
]
HOLIDAYS = "Are there multiple American government holidays during winter?"
LISTS = "The answer (Yes or No) is followed by a list of holidays.\n\n"
# Batch 42's dev miss (plain StrategyQA #447): a list announced, then the word alone on its line above the list; the
# accepted cases scored 0 before the change; guards: the wrong reference, "Yes or no", both words on their lines,
# a non-answer above the same paragraphs, an announcement too long to be one, no blank line
LISTED = [
    (LISTS + "Yes\n\n-Christmas Day\n-New Year's Day\n-Martin Luther King, Jr. Day\n-", "yes", 1.0),
    ("The answer (Yes or No) is followed by a list.\n\nNo", "no", 1.0),
    ("The answer (Yes or No) is followed by an explanation.\n\nNo\n\nThere are few in winter.", "no", 1.0),
    (LISTS + "Yes\n\n-Christmas Day", "no", 0.0),
    (LISTS + "Yes or no depends on the state.", "yes", 0.0),
    (LISTS + "Yes\nNo\n", "yes", 0.0),
    (LISTS + "Yes\n\nNo\n", "no", 0.0),
    ("The answer (Yes or No) is not known.\n\nYes\n\n-Christmas Day", "yes", 0.0),
    ("The answer (Yes or No) is followed by a list of the ten largest federal holidays.\n\nYes\n\n- a", "yes", 0.0),
    ("The answer (Yes or No) is followed by a list of holidays.\nYes\n\n-Christmas Day", "yes", 0.0),
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


@pytest.mark.parametrize(("response", "reference", "reward"), LISTED)
def test_an_announced_list_follows_the_yes_or_no_alone_on_its_line(response, reference, reward):
    assert score(response, reference, HOLIDAYS) == reward


CEO = "Would a CEO typically clean the toilets in a company's building?"
YES_NO_IS = "The answer (Yes or No) is "
# Batch 42's other dev miss (plain StrategyQA #478): a frequency word the question asks with, before the verdict,
# restates the question's scope; the accepted cases scored 0 before the change; guards: the wrong reference, the word
# where the question does not use it, "probably" (a doubt), the other verdict after it
FREQUENCY = [
    ("typically No, the CEO would not clean the toilets in a company's building.", "no", CEO, 1.0),
    ("usually Yes.", "yes", "Do cats usually land on their feet?", 1.0),
    ("typically No.", "yes", CEO, 0.0),
    ("typically No.", "no", "Is it safe to drink week old chlorine water?", 0.0),
    ("usually Yes.", "yes", "Do cats land on their feet?", 0.0),
    ("probably No.", "no", "Would a CEO probably clean the toilets?", 0.0),
    ("typically no, but yes in small firms.", "no", CEO, 0.0),
    ("typically No, but it may be yes.", "no", CEO, 0.0),
]


@pytest.mark.parametrize(("answer", "reference", "question", "reward"), FREQUENCY)
def test_a_frequency_word_the_question_asks_with_is_no_hedge(answer, reference, question, reward):
    assert score(YES_NO_IS + answer, reference, question) == reward


@pytest.mark.parametrize(("answer", "reference", "reward"), CHOICES)
def test_the_choice_named_as_likely_is_the_choice(answer, reference, reward):
    assert score(ANSWER + answer, reference, CLUBS) == reward
