"""Forms from batch 18's dev split (benchmarks/data/real_outputs.jsonl: GPT-3's zero-shot and zero-shot-CoT logs of
multiple-choice, yes/no and last-letter tasks). Part 1's dev rows were all graded as the careful grader does; these
cases pin their forms: a letter string is compared letter for letter (an anagram, an extra or a missing letter is
wrong), a hedge between choices or a non-answer to a yes/no question scores 0, and where two final statements differ
the last one is the answer. Part 2's one dev miss, "the answer (Yes or No) is most likely Yes.", is fixed: the yes/no
named as the likelier is the answer, as "most likely B" names a choice; anything after the word, another word, "or"
and "probably" keep it a hedge. Each 1.0 "most likely" case scored 0 before the fix."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())

LETTERS = 'Take the last letters of each words in "Andrés Miles Ronaldo Melinda" and concatenate them.'
CHOICES = "Where might he look for one? Answer Choices: (A) library (B) subway station (C) county engineer's office"
OSAMA = "Did Osama bin Laden likely abstain from alcohol?"
COIN = 'A coin is heads up. Gus does not flip the coin. Is the coin still heads up? Note that "flip" means "reverse".'


def score(response: str, reference: str, prompt: str) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward


# (prompt, response, reference, reward): the 1.0 cases are dev-split forms graded right; the 0.0 cases are guards.
CASES = [
    # a letter string: letter for letter; where two final statements differ, the last one is the answer
    (LETTERS, 'So the final answer is "ssoa". \nTherefore, the answer is "ssoa".', "ssoa", 1.0),
    (LETTERS, 'The answer is "ssoa."', "ssoa", 1.0),
    (LETTERS, 'So, the final answer is "sosa". \nTherefore, the answer is "ssoa".', "ssoa", 1.0),
    (LETTERS, 'So, the final answer is "sosa". \nTherefore, the answer is "sosa".', "ssoa", 0.0),  # an anagram
    (LETTERS, 'The answer is "aoss".', "ssoa", 0.0),  # the letters reversed
    (LETTERS, 'So the final answer is "laiia". \nTherefore, the answer is "laiia".', "laia", 0.0),  # one too many
    (LETTERS, 'The answer is "sso".', "ssoa", 0.0),  # a letter missing
    (LETTERS, 'So the final answer is "ssoa". \nTherefore, the answer is "sosa".', "ssoa", 0.0),  # the last is wrong
    (LETTERS, 'The answer is "ssoa" or "sosa".', "ssoa", 0.0),
    (LETTERS, 'The answer is "ssoa", I think.', "ssoa", 0.0),
    # a hedge between choices names no choice
    (CHOICES, "Therefore, among A through C, the answer is A.", "A", 1.0),
    (CHOICES, "Therefore, among A through C, the answer is probably A or C.", "A", 0.0),
    (CHOICES, "Therefore, among A through C, the answer is any of A, B or C.", "A", 0.0),
    (CHOICES, "Therefore, among A through C, the answer is most likely A) library or C) office.", "A", 0.0),
    (CHOICES, "Therefore, among A through C, the answer is closest to A.", "A", 0.0),
    # a yes/no question needs a yes or a no
    (COIN, "The answer (Yes or No) is Yes.", "yes", 1.0),
    (COIN, "Therefore, the answer (Yes or No) is YES, the coin is still heads up.", "yes", 1.0),
    (COIN, "The answer (Yes or No) is the same for all people.", "yes", 0.0),
    (COIN, "The answer (Yes or No) is not known.", "no", 0.0),
    (COIN, "The answer (Yes or No) is not found.", "no", 0.0),
    (COIN, "Therefore, the answer (Yes or No) is dependent on your personal preference.", "no", 0.0),
    (COIN, 'The answer (Yes or No) is the same as the answer to: "Is the coin still heads up?"', "yes", 0.0),
    # the yes/no named as the likelier is the answer; anything after it, "or" and "probably" keep it a hedge
    (OSAMA, "Therefore, the answer (Yes or No) is most likely Yes.", "yes", 1.0),
    (OSAMA, "Therefore, the answer (Yes or No) is most likely No.", "no", 1.0),
    (OSAMA, "Therefore, the answer (Yes or No) is most likely Yes.", "no", 0.0),
    (OSAMA, "Therefore, the answer (Yes or No) is most likely yes or no.", "yes", 0.0),
    (OSAMA, "Therefore, the answer (Yes or No) is most likely no, but it may be yes.", "no", 0.0),
    (OSAMA, "Therefore, the answer (Yes or No) is probably Yes.", "yes", 0.0),
    (OSAMA, "Therefore, the answer (Yes or No) is most likely Yesterday.", "yes", 0.0),
    # Found by probing (no corpus row): an answer followed by a second one after a contrast is a hedge; each 0.0
    # case scored 1.0 before (a false accept)
    (OSAMA, "Therefore, the answer (Yes or No) is no, but it may be yes.", "no", 0.0),
    (OSAMA, "Therefore, the answer (Yes or No) is no, although one could argue yes.", "no", 0.0),
    (OSAMA, "Therefore, the answer (Yes or No) is no (or yes, depending on the definition).", "no", 0.0),
    (OSAMA, "Therefore, the answer (Yes or No) is no, but yes if he was young.", "no", 0.0),
    (OSAMA, "So the answer is no, but it may be yes.", "no", 0.0),
    (OSAMA, "\\boxed{no}, but it may be yes.", "no", 0.0),
    (OSAMA, "<answer>no, but it may be yes</answer>", "no", 0.0),
    (CHOICES, "Therefore, among A through C, the answer is B, but it could be C.", "B", 0.0),
    (CHOICES, "Therefore, among A through C, the answer is B, but C is also possible.", "B", 0.0),
    (CHOICES, "\\boxed{B}, but it could be C.", "B", 0.0),
    (OSAMA, "Therefore, the answer (Yes or No) is no. Or yes.", "no", 0.0),
    (CHOICES, "Therefore, among A through C, the answer is B. Or maybe C.", "B", 0.0),
    (None, "The answer is 12, but it could be 13.", "13", 0.0),
    # guards: "no" as a determiner, a reason that names another choice, a denied choice, a restated form
    (OSAMA, "Therefore, the answer (Yes or No) is yes, because no other religion forbids it.", "yes", 1.0),
    (OSAMA, "Therefore, the answer (Yes or No) is yes, because there is no evidence he drank.", "yes", 1.0),
    (OSAMA, "Therefore, the answer (Yes or No) is no, he did not.", "no", 1.0),
    (OSAMA, "Therefore, the answer (Yes or No) is No, it is not true.", "no", 1.0),
    (CHOICES, "Therefore, among A through C, the answer is B, because C is too far.", "B", 1.0),
    (CHOICES, "Therefore, among A through C, the answer is B, not C.", "B", 1.0),
    (CHOICES, "Therefore, among A through C, the answer is B, but I am sure of it.", "B", 1.0),
    (None, "The answer is 1/2, but it could be written as 0.5.", "1/2", 1.0),
    (None, "The answer is 12. Or, in words, twelve.", "12", 1.0),
]


@pytest.mark.parametrize(("prompt", "response", "reference", "reward"), CASES)
def test_choice_yes_no_and_letter_string_answers(prompt, response, reference, reward):
    assert score(response, reference, prompt) == reward, response
