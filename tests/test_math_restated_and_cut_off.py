"""Batch 48's four dev misses (benchmarks/data/real_outputs.jsonl, kojima's zero-shot-CoT logs). An answer in digits
restated in quoted words ('"twenty-seven."'), or in words with a unit after an equation ("323 / 19 = 17" then
"seventeen dollars"), is that answer said again; a sentence of working in the answer's place, then the response
cut off as it begins to conclude ("Therefore, the"), has no answer; a closing sentence whose subject is a name may
name a second person before its value ("Mandy should give Benedict $106."). Each 1.0 case scored 0 before the
change, and the 0.0 case after "cut off" scored 1; the guards score the same before and after."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())
DIGITS = "Therefore, the answer (arabic numerals) is "
CUT = ("We also know that she had 23 post- \nTherefore, the answer (arabic numerals) is \n\nit notes remaining overall, "
       "so we can say that she started with 23 + 140 = 163 post-it notes.")
INTEREST = "We can calculate this using the formula for simple interest: \n\nI = Prt \n" + DIGITS[:-1] + ": \n\n" \
    "I = 100 * 0.02 * 3 \nI = $6 \n\n"


def score(response: str, reference: str) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, None)).reward


# (digits, the answer in words, reference, reward): quoted, with a unit, after an equation; the guards are other
# words, another value, a number word as the unit, a decimal in words of another value, the equation's first side
RESTATED = [("27", '"twenty-seven."', "27", 1.0), ("12", "\u201ctwelve.\u201d", "12", 1.0),
            ("17", "seventeen dollars.", "17", 1.0), ("2/3", "two-thirds of a cup.", "2/3", 1.0),
            ("323 / 19 = 17", "seventeen dollars.", "17", 1.0), ("27", '"twenty-six."', "27", 0.0),
            ("17", "eighteen dollars.", "17", 0.0), ("5", "five apples and three pears.", "5", 0.0),
            ("9.8", "nine point seven gallons.", "9.8", 0.0), ("323 / 19 = 17", "seventeen dollars.", "323", 0.0)]
# (response, reference, reward): cut off as it begins to conclude (the dev row; "So the answer is"); the guards
# are a short answer before more working, a finished sentence and a cut in the working
CUT_OFF = [(CUT + " \n\nTherefore, the", "163", 0.0), (CUT + " \n\nSo the answer is", "163", 0.0),
           ("Among A through E, the answer is E. \n\nThe selling price is Rs. 960. \n\nTherefore,", "E", 1.0),
           (CUT, "163", 1.0), (CUT + " \n\nThen she bought", "163", 1.0)]
# (response, reference, reward): a second name before the value; the guards are other values
SECOND_NAME = [(INTEREST + "Mandy should give Benedict $106.", "106", 1.0), ("Tom gave Sara 5 apples.", "5", 1.0),
               (INTEREST + "Mandy should give Benedict $106.", "100", 0.0), ("Tom gave Sara 5 apples.", "6", 0.0)]
CASES = [*((f"{DIGITS}{digits}. \n\nThe answer (in words) is {words}", reference, reward)
           for digits, words, reference, reward in RESTATED), *CUT_OFF, *SECOND_NAME]


@pytest.mark.parametrize(("response", "reference", "reward"), CASES)
def test_batch_48_dev_forms(response, reference, reward):
    assert score(response, reference) == reward
