"""Issue 24, batch 100 (kojima GSM8K CoT #679, a dev row): "Therefore, the answer (arabic numerals) is", a blank line,
three lines of working each an equation ("3 x 68 = 204", "2 x 80 = 160", "6 x 55 = 330"), then "The total cost was
$694." (reference 694). An answer phrase that ends its line before two or more equation lines introduces working,
not one answer, so it states none and the closing sentence after the working is read. The first case scored 0
before the fix (the first equation line was read as the answer); the guards score the same before and after."""

from __future__ import annotations

import pytest

from _math_reward import math_reward

QUESTION = "Toula bought 3 dozen donuts at $68, 2 dozen cupcakes at $80 and 6 dozen cheesecakes at $55. Total cost?"
WORKING = ("To find the total cost, we multiply.\nTherefore, the answer (arabic numerals) is \n\n"
           "3 x 68 = 204\n2 x 80 = 160\n6 x 55 = 330\n")


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        (WORKING + "\nThe total cost was $694.", "694", 1.0),  # the dev row's form
        (WORKING + "\nThe total cost was $694.", "204", 0.0),  # the first working line is no answer
        (WORKING + "\nThe total cost was $700.", "694", 0.0),  # a wrong closing value
        (WORKING, "694", 0.0),  # working with no conclusion states no answer
        (WORKING, "204", 0.0),
        ("Therefore, the answer is \n\n694\n\nThat is all.", "694", 1.0),  # one value on the next line
        ("Therefore, the answer is 3 x 68 = 204\n2 x 80 = 160\nSo 364.", "364", 0.0),  # the phrase's own line
    ],
)
def test_equation_lines_after_an_answer_phrase_are_working(response, reference, reward):
    assert math_reward(response, reference, QUESTION) == reward, response
