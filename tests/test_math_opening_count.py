"""An answer-first response (benchmarks/data/real_outputs.jsonl, batch 49's dev split: Phi-3-mini's hendrycks_math
geometry doc 92): its opening sentence echoes the "How many X" question with its count, and what follows only explains
it. The first cases scored 0 before the fix; the guards keep a revised, concluded, cut or larger later count unread."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())
QUESTION = "How many edges does a hexagonal prism have?"
OPENING = "A hexagonal prism has 18 edges."
EXPLAINED = (" It has 12 edges along the sides (6 edges for the top hexagon and 6 edges for the bottom hexagon) and 6"
             " vertical edges connecting the corresponding vertices of the two hexagons.")


def score(response: str, reference: str, prompt: str | None = QUESTION) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward


@pytest.mark.parametrize("response", [OPENING + EXPLAINED, OPENING])
def test_an_opening_count_that_the_rest_only_explains_is_the_answer(response: str) -> None:
    assert score(response, "18") == 1.0


@pytest.mark.parametrize("response, reference, prompt", [
    (OPENING + EXPLAINED, "12", QUESTION),
    (OPENING + EXPLAINED, "18", None),  # no question to echo
    (OPENING + " Actually, it has 12 edges.", "18", QUESTION),
    (OPENING + " The prism has 12 edges.", "18", QUESTION),
    (OPENING + " It has 20 edges along the sides.", "18", QUESTION),
    (OPENING + " It has 12 edges along the sides and 6 vertical", "18", QUESTION),  # cut off
    (OPENING + " So it has 12 edges.", "18", QUESTION),
    (OPENING + " It has 12 edges in all.", "18", QUESTION),
    ("A hexagonal prism has 18 faces." + EXPLAINED, "18", QUESTION),  # not the question's words
    # later counts that are not the opening count's parts: another count stated, a different sum
    (OPENING + " It has 12 edges.", "18", QUESTION),
    (OPENING + " Each base has 6 edges, and there are 6 vertical edges, giving 12 edges.", "18", QUESTION),
    (OPENING + " It has 10 edges along the sides and 6 vertical edges.", "18", QUESTION),
])
def test_a_later_count_a_conclusion_or_a_cut_keeps_the_opening_unread(response: str, reference: str,
                                                                      prompt: str | None) -> None:
    assert score(response, reference, prompt) == 0.0


# batch 64's dev split (Phi-3-mini's hendrycks_math geometry doc 136): a count of the noun a "How many of the X ...?"
# question names, after the total of those X, its items named in parentheses, then the question's own condition
# (`Out of the 10 letters in "MATHCOUNTS," there are 3 letters (A, H, and O) that have ...`). The first cases scored
# 0 before the fix; the guards keep a total of another noun, an alternative or hedge among the items, a wrong count,
# the total as the answer and a missing question unread.
LETTERS = "Problem: How many of the letters in MATHCOUNTS have a horizontal line of symmetry?"
LISTED = ("M - No horizontal line of symmetry\nA - Yes, has a horizontal line of symmetry\nT - No horizontal line of "
          "symmetry\n\n")
CLOSING = ('Out of the 10 letters in "MATHCOUNTS," there are 3 letters (A, H, and O) that have a horizontal line of '
           "symmetry.")


@pytest.mark.parametrize("response", [
    LISTED + CLOSING,
    CLOSING,
    "Out of the 10 letters, there are 3 letters that have a horizontal line of symmetry.",
    "There are 3 letters (H, C and O) that have a horizontal line of symmetry.",
    "There are 3 letters that have a horizontal line of symmetry.",
])
def test_a_count_after_the_total_of_the_asked_noun_answers_how_many(response: str) -> None:
    assert score(response, "3", LETTERS) == 1.0


@pytest.mark.parametrize("response, reference, prompt", [
    (CLOSING, "10", LETTERS),  # the total is a given, not the count asked
    (CLOSING, "4", LETTERS),
    (CLOSING, "3", None),  # no question to echo
    ('Out of the 10 words in "MATHCOUNTS," there are 3 letters that have a horizontal line of symmetry.', "3",
     LETTERS),  # a total of another noun
    ("Out of the 10 letters, there are 3 letters (A, H, or O) that have a horizontal line of symmetry.", "3",
     LETTERS),  # an alternative among the items
    ("Out of the 10 letters, there are 3 letters (A, H, and maybe O) that have a horizontal line of symmetry.", "3",
     LETTERS),  # a hedge among the items
    ("Out of the 10 letters, there are 3 or 4 letters that have a horizontal line of symmetry.", "3", LETTERS),
    ("Out of the 10 letters, there are 3 letters that have a horizontal line of symmetry, but maybe 4.", "3",
     LETTERS),
])
def test_a_total_of_another_noun_or_a_hedged_count_stays_unread(response: str, reference: str,
                                                                 prompt: str | None) -> None:
    assert score(response, reference, prompt) == 0.0


# Batch 72's dev split (prealgebra doc 211): a closing count with thousands separators that echoes the question,
# its number included ("7 different colored hats"); both cases scored 0 before the fix.
HATS = "In how many ways can you order 7 different colored hats in a row?"
HATS_CLOSING = "So, there are 5,040 different ways to order 7 different colored hats in a row."


@pytest.mark.parametrize("response, reference", [
    ("7! = 7 × 6 × 5 × 4 × 3 × 2 × 1 = 5,040\n\n" + HATS_CLOSING, "5,\\!040"),
    (HATS_CLOSING, "5040"),
])
def test_an_echoed_count_with_thousands_separators_answers_how_many(response: str, reference: str) -> None:
    assert score(response, reference, HATS) == 1.0


@pytest.mark.parametrize("response", [
    HATS_CLOSING.replace("5,040", "5,041"),  # a wrong count
    HATS_CLOSING.replace("7 different", "8 different"),  # a changed number of the question
    HATS_CLOSING.replace("5,040", "5,040 or 720"),  # an alternative
    HATS_CLOSING.replace("5,040", "maybe 5,040"),  # a hedge
    HATS_CLOSING.replace("5,040", "5,04"),  # not a thousands separator
])
def test_a_wrong_changed_or_hedged_separated_count_stays_unread(response: str) -> None:
    assert score(response, "5,\\!040", HATS) == 0.0
