"""Batch 87's dev miss (benchmarks/data/real_outputs.jsonl, the openmath gemma2-2b MATH500 report's math_00270):
`$$\\boxed{Pam \\text{ pays } \\$10 \\text{ more than Susan}} $$` for "How many more dollars does Pam pay than Susan?",
reference 10. A box holding a sentence in words was already read as that sentence closing the response (batch 73's
rule); this one writes its words in `\\text{...}` pieces around an escaped dollar sign and has no full stop. The fixed
cases scored 0 before the change; the guards score the same before and after."""

from __future__ import annotations

import pytest

from test_math_read_heldout_forms import score  # the math verifier's reward, given the prompt

TICKETS = ("Problem: One ticket to a show costs $\\$20$ at full price. Susan buys $4$ tickets using a coupon that gives "
           "her a $25\\%$ discount. Pam buys $5$ tickets using a coupon that gives her a $30\\%$ discount. How many "
           "more dollars does Pam pay than Susan?")
WORKING = "* **Difference:**\n    *  $C_p - C_s = $70 - $60 = $10\n\n**5. FORMAT:**\n\n"


@pytest.mark.parametrize(
    "box",
    [
        "$$\\boxed{Pam \\text{ pays } \\$10 \\text{ more than Susan}} $$",  # the dev row's closing; was 0.0
        "$\\boxed{\\text{Pam pays } \\$10 \\text{ more than Susan.}}$",  # was 0.0
        "\\boxed{\\text{Pam pays } 10 \\text{ dollars more than Susan}}",  # was 0.0
        "\\boxed{Pam \\mbox{ pays } \\$10 \\mbox{ more than Susan}}",  # was 0.0
    ],
)
def test_sentence_in_text_pieces_states_its_value(box: str) -> None:
    assert score(WORKING + box, "10", TICKETS) == 1.0


@pytest.mark.parametrize(
    ("box", "reference"),
    [
        # Another value; two numbers; a denial, a condition, a bound, a hedge, an "or": no value, as in plain words.
        ("\\boxed{Pam \\text{ pays } \\$12 \\text{ more than Susan}}", "10"),
        ("\\boxed{Pam \\text{ pays } \\$10 \\text{ less than Susan}}", "12"),
        ("\\boxed{Pam \\text{ pays } \\$70 \\text{ and Susan pays } \\$60}", "10"),
        ("\\boxed{Pam \\text{ does not pay } \\$10 \\text{ more than Susan}}", "10"),
        ("\\boxed{Pam \\text{ pays } \\$10 \\text{ more than Susan if she buys more}}", "10"),
        ("\\boxed{Pam \\text{ pays at least } \\$10 \\text{ more than Susan}}", "10"),
        ("\\boxed{Pam \\text{ pays } \\$10 \\text{ more than Susan, but I am not sure}}", "10"),
        ("\\boxed{Pam \\text{ pays } \\$10 \\text{ or } \\$20 \\text{ more than Susan}}", "10"),
        # Math among the pieces is no sentence in words: the box is read as before.
        ("\\boxed{Pam \\text{ pays } \\$10^2 \\text{ more than Susan}}", "10"),
        ("\\boxed{\\text{Pam pays } \\frac{20}{2} \\text{ more than Susan}}", "10"),
    ],
)
def test_guards_give_no_value(box: str, reference: str) -> None:
    assert score(WORKING + box, reference, TICKETS) == 0.0


@pytest.mark.parametrize(
    ("box", "reference", "reward"),
    [
        # Kept as before: a value with a unit in a piece, a labelled chain, a name, a plain sentence in words.
        ("\\boxed{10 \\text{ dollars}}", "10", 1.0),
        ("\\boxed{\\$10}", "10", 1.0),
        ("\\boxed{\\text{Probability} = \\frac{33}{100} = 0.33}", "\\dfrac{33}{100}", 1.0),
        ("\\boxed{\\text{Evelyn}}", "\\text{Evelyn}", 1.0),
        ("\\boxed{Pam pays 10 dollars more than Susan.}", "10", 1.0),
        ("\\boxed{\\text{Pam}}", "10", 0.0),
    ],
)
def test_other_boxes_with_text_pieces_unchanged(box: str, reference: str, reward: float) -> None:
    assert score(WORKING + box, reference, TICKETS) == reward


def test_comparison_the_question_does_not_ask_gives_no_value() -> None:
    question = TICKETS.replace("How many more dollars does Pam pay than Susan?", "How many dollars does Pam pay?")
    assert score(WORKING + "\\boxed{Pam \\text{ pays } \\$10 \\text{ more than Susan}}", "10", question) == 0.0
    assert score(WORKING + "\\boxed{Pam pays 10 dollars more than Susan.}", "10", question) == 0.0
