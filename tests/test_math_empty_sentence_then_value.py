"""Batch 85's dev miss (benchmarks/data/real_outputs.jsonl, kojima's GSM8K CoT log #488): the working ends on an open
sum, "Therefore, the answer (arabic numerals) is  . " gives only a lone period, and the response's last line completes
the sum, "15 + 30 + 60 = 105 pounds", reference 105. An answer phrase that ends its line already took the value alone
on the response's last line ("is" then "105"); a lone period before the line's end is an empty sentence, not an
answer, and no longer hides that line. The read cases scored 0 before the change; the kept cases (no value, a value
offered with another, a wrong result, a hedge, a value stated before the period) score 0 before and after."""

from __future__ import annotations

import pytest

from test_math_read_heldout_forms import score  # the math verifier's reward, given the prompt

DOGS = ("Elijah has one dog that is one-fourth the weight of Kory's dog and another dog that is half the weight of "
        "Kory's dog. If Kory's dog is 60 pounds, how much do Elijah and Kory's dogs weigh altogether, in pounds?")
WORKING = ("Let's think step by step. \n\nElijah's first dog is 60/4 = 15 pounds. \nElijah's other dog is 60/2 = 30 "
           "pounds. \n\nElijah's first dog + Elijah's second dog + Kory's dog = \n"
           "Therefore, the answer (arabic numerals) is")
# The dev row and its other wordings, reference 105: a lone period, then the value alone on the last line.
PERIOD_THEN_VALUE = ["  . \n\n15 + 30 + 60 = 105 pounds", " .\n\n105 pounds", "  . \n\n105", ".\n105"]
# Kept at 0 against 105: no value, two values, a wrong result, a hedge, and 15 stated before the period.
NOT_READ = ["  .", "  . \n\n105 or 110", "  . \n\n15 + 30 + 60 = 100 pounds", " . \n\nprobably 105", " 15. \n\n105"]


@pytest.mark.parametrize("tail", PERIOD_THEN_VALUE)
def test_value_after_an_empty_sentence_is_read(tail: str) -> None:
    assert score(WORKING + tail, "105", DOGS) == 1.0
    assert score(WORKING + tail, "15", DOGS) == 0.0


@pytest.mark.parametrize("tail", NOT_READ)
def test_no_single_value_after_the_period_stays_rejected(tail: str) -> None:
    assert score(WORKING + tail, "105", DOGS) == 0.0
