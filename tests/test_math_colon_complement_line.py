"""Batch 82's dev miss (benchmarks/data/real_outputs.jsonl, pmemoli's hendrycks_math prealgebra doc 235): the closing
statement "The positive difference between them is:" ends in a colon and its complement stands alone on the last line,
after a blank line, as an equation ("5 - 2 = 3"), reference 3. The statement and its line read as the one sentence
"The positive difference between them is 5 - 2 = 3.", as a one-item bullet list already did. The accepted cases
scored 0 before the change; the guards (a wrong side, a hedge, an alternative, a denial, two lines, a retraction, no
value, a condition, a pronoun subject, a false equation) score 0 before and after."""

from __future__ import annotations

import pytest

from test_math_read_heldout_forms import score  # the math verifier's reward, given the prompt

QUESTION = "What is the positive difference between the greatest and least prime factors of 2000?"
FACTORS = "The greatest prime factor is 5, and the least prime factor is 2. "
STATEMENT = "The positive difference between them is:"


@pytest.mark.parametrize("line", ["\n\n5 - 2 = 3", "\n\n3", "\n3", "\n\n3.", "\n\n**3**", "\n\n5 - 2 = 3 units",
                                  "\n\n5 - 2 = 3\n"])
def test_the_complement_on_its_own_line_completes_the_statement(line: str) -> None:
    assert score(FACTORS + STATEMENT + line, "3", QUESTION) == 1.0
    assert score(FACTORS + STATEMENT + line, "4", QUESTION) == 0.0


@pytest.mark.parametrize("ending", [
    STATEMENT + "\n\n5 - 2 = 4", STATEMENT + "\n\nmaybe 3", STATEMENT + "\n\n3 or 4", STATEMENT + "\n\nnot 3",
    STATEMENT + "\n\n3\n4", STATEMENT + "\n\n3\n\nWait, that is wrong.", STATEMENT + "\n\n5 - 2",
    STATEMENT + "\n\nThe greatest minus the least.", "If the positive difference between them is:\n\n3",
    "The positive difference between them is not:\n\n3", "It is:\n\n3", STATEMENT + "\n\n3 - 2 = 1",
    STATEMENT + "\n\n3 = 4", STATEMENT + "\n\n3 if we count 1",
])
def test_guards(ending: str) -> None:
    assert score(FACTORS + ending, "3", QUESTION) == 0.0
