"""Issue 24, batch 95 (kojima GSM8K CoT #608, a dev row): "Therefore, the answer (arabic numerals) is
35+28+14=77 sandwiches." for "How many sandwiches does this family eat in one week?" (reference 77). Up to three
words after a plain arithmetic chain's result name what it counts, as they do after a lone number ("77
sandwiches" was read, "35+28+14=77 sandwiches" was not). The first and third cases scored 0 before the fix; the
guards (a wrong result, a variable on the left, a number after the words, a second chain) score 0 on both."""

from __future__ import annotations

import pytest

from _math_reward import math_reward

QUESTION = ("A man eats 5 sandwiches per day, his wife eats 4 sandwiches per day, and their son eats 2 sandwiches "
            "per day. How many sandwiches does this family eat in one week?")


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        ("Therefore, the answer (arabic numerals) is 35+28+14=77 sandwiches.", "77", 1.0),  # the dev row
        ("Therefore, the answer is 35 + 28 + 14 = 77 sandwiches in all.", "77", 1.0),
        ("The answer is 11 \\times 7 = 77 sandwiches.", "77", 1.0),
        ("Therefore, the answer (arabic numerals) is 35+28+14=78 sandwiches.", "77", 0.0),  # a wrong sum
        ("Therefore, the answer (arabic numerals) is 35+28+14=77 sandwiches.", "78", 0.0),
        ("Therefore, the answer is 7s = 77 sandwiches.", "77", 0.0),  # a variable: 77 is not what was solved for
        ("Therefore, the answer is 35+28+14=77 sandwiches and 7 more.", "77", 0.0),  # a second number
        ("Therefore, the answer is 35+28=63 sandwiches and 14=14 more.", "63", 0.0),  # a second chain
    ],
)
def test_words_after_an_arithmetic_chain_name_what_its_result_counts(response, reference, reward):
    assert math_reward(response, reference, QUESTION) == reward, response
