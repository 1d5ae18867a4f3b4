"""Issue 24: the math verifier on real model outputs. False accepts first (a word read as a product of
symbols, a percent read as another unit), then final answers that were not found and equivalences that
were missed; every case here scored wrong before the fix. The guards at the end must keep scoring 0."""

from __future__ import annotations

import pytest

from olmorl.rewards._models import ChatMessage
from olmorl.rewards.engine._registry import load_verifiers
from olmorl.rewards._settings import Settings
from olmorl.rewards.math import equivalent, normalize_answer

VERIFIERS = load_verifiers()


def score(response: str, ground_truth, prompt=None, **options) -> float:
    verifier = VERIFIERS["math"](Settings())
    return verifier.score(verifier.make_task(response, ground_truth, options, prompt)).reward


def same(reference: str, answer: str) -> bool:
    return equivalent(normalize_answer(reference), normalize_answer(answer), 1e-6).match


# -- false accepts ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("reference", "answer"), [("lnyl", "nlly"), ("cba", "abc"), ("ab", "ba"), ("tac", "cat")])
def test_a_letter_string_is_a_word_not_a_product(reference, answer):
    assert not same(reference, answer)
    assert same(reference, reference.lower())  # the same word in another case is still the same word


@pytest.mark.parametrize(("response", "reward"), [
    ('So the final answer is "y a a n". \nTherefore, the answer is "y a a n".', 1.0),  # batch 24 held-out #144
    ('Therefore, the answer is "Y A A N".', 1.0),
    ('Therefore, the answer is "yaan".', 1.0),
    ('Therefore, the answer is "y a n a".', 0.0),  # guards: other letters, another order, fewer
    ('Therefore, the answer is "y a a".', 0.0),
    ('Therefore, the answer is "ya an".', 0.0),
])
def test_a_word_spelled_letter_by_letter_is_the_word(response, reward):
    """Last-letter concatenation (kojima's logs, read after batch 24's held-out number was recorded): the letters
    spaced out are the word they spell, as the authors' grader and the careful labels read them."""
    assert score(response, "yaan") == reward


def test_letters_in_an_algebraic_answer_are_still_symbols():  # a guard: the word rule must stay this narrow
    assert same("2ab", "2ba") and same("a^2 b", "b a^2") and same("abc", "a \\cdot b \\cdot c")


@pytest.mark.parametrize(
    ("response", "truth", "reward"),
    [
        ("The answer is \\boxed{70\\%}.", "0.7", 0.0),  # a length of 0.7 is not 70%
        ("The answer is \\boxed{0.08\\%}.", "8\\%", 0.0),  # the percent sign is part of the value
        ("The answer is \\boxed{0.08}.", "8\\%", 1.0),  # a plain fraction for a percent reference
        # what stays (these passed before too): percent as a unit, the same percent
        ("The answer is \\boxed{8\\%}.", "8\\%", 1.0),
        ("The answer is \\boxed{8}.", "8\\%", 1.0),
        ("The answer is \\boxed{50\\%}.", "50", 1.0),
    ],
)
def test_percent_states_its_own_value(response, truth, reward):
    assert score(response, truth) == reward


def test_a_percent_answer_equals_a_fraction_only_where_the_item_allows_it():
    response = "The answer is \\boxed{70\\%}."
    assert score(response, "0.7", percent_as_fraction=True) == 1.0
    assert score(response, "0.7", prompt="What is the probability that it rains?") == 1.0
    assert score(response, "0.7", prompt=[ChatMessage(role="user", content="Give the answer in percent.")]) == 1.0
    assert score(response, "0.7", prompt="How long is the side, in metres?") == 0.0
    assert score(response, "0.75", percent_as_fraction=True) == 0.0


# -- final answers that were not found -------------------------------------------------------------------

@pytest.mark.parametrize(
    ("response", "truth"),
    [
        ("Q: Tom has 20 apples and eats 2. How many are left?\nA: 18", "18"),  # Q/A few-shot format
        ("She has 20 and gives away 2, so 18 remain.\nA: 18\n\nQ: What is 3 + 4?", "18"),
        ("So the answer (Yes or No) is No.", "No"),  # a parenthetical in the answer phrase
        ("The answer (arabic numerals) is 63.", "63"),
        ("We count 3 + 4 apples in all. The total number of apples is 7.", "7"),  # a stated quantity
        ("```python\nprint(20 - 2)\n```\n```output\n18\n```\nJanet has 18 apples left.", "18"),  # tool output
        ("Therefore, the distance is \\sqrt{17}.", "\\sqrt{17}"),  # a bare LaTeX value closes a sentence
        ("Therefore, the ratio is \\frac{3}{4}.", "0.75"),
        ("The answer is $\\sqrt{4} = 2$.", "2"),  # an arithmetic chain states its last side
        ("The answer is $\\binom{5}{2} = 10$.", "10"),
        ("The answer is (35 + 70 = 105).", "105"),
        ("$3 + 4 = 7$", "7"),
    ],
)
def test_final_answers_found(response, truth):
    assert score(response, truth) == 1.0


# -- equivalences ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("reference", "answer"),
    [
        ("yes", '"yes"'), ("no", "“no”"), ("no", "``no''"),  # quotes around a word answer
        ("y = 2x+3", "f(x) = 2x+3"), ("f(x) = x^2", "g(x) = x^2"),  # one function, another name
        ("\\frac12", "\\sin 30^\\circ"), ("\\frac{\\sqrt{2}}{2}", "\\cos(45^{\\circ})"),  # degrees inside trig
        ("(1, 2)", "(1; 2)"),  # a semicolon between coordinates
        ("V_1:V_2=11:21", "11:21"),  # a labelled ratio
        # batch 38 (a dev row's MATH reference olmorl could not parse): TeX reads an unbraced `\frac` argument as one
        # token, a Greek-letter symbol included
        ("\\frac \\pi4 + 2 - \\sqrt2", "\\frac{\\pi}{4} + 2 - \\sqrt{2}"), ("\\frac{\\pi}{6}", "\\frac\\pi6"),
        ("\\frac{\\pi}{6}", "\\frac\\pi{6}"), ("\\frac{2}{\\pi}", "\\frac2\\pi"), ("\\frac{\\theta}{2}", "\\frac \\theta 2"),
    ],
)
def test_equivalences(reference, answer):
    assert same(reference, answer)


# Near misses of the new equivalences (these were different before too; they keep the new rules narrow).
@pytest.mark.parametrize(
    ("reference", "answer"),
    [
        ("y = 2x+3", "f(x) = 3x+2"), ("y = 2x + 3", "x = 2y + 3"), ("\\frac12", "\\sin 60^\\circ"),
        ("(1, 2)", "(2; 1)"), ("105", "(35 + 70 = 106)"), ("7", "x + 3 = 7"), ("yes", '"no"'),
        ("\\frac \\pi4 + 2 - \\sqrt2", "\\frac{1}{2}+\\sqrt{2}"), ("\\frac{\\pi}{6}", "\\frac\\pi3"),
        ("\\frac{\\pi}{6}", "\\frac6\\pi"), ("\\frac{\\pi}{4}", "\\frac\\pi 4 5"),
    ],
)
def test_near_misses_stay_different(reference, answer):
    assert not same(reference, answer)


# -- still never an answer (guards: 0 before too; the new anchors must not take them) -------------------

@pytest.mark.parametrize(
    ("response", "truth"),
    [
        ("Maybe the total is 6.", "6"),  # hedge
        ("The total is 6. Wait, that's wrong: I misread the question.", "6"),  # retraction
        ("The first term is 6 and then we keep going with", "6"),  # truncated
        ("The answer: 18\nB: 20\nA: 18 or 20", "18"),  # "A:" line that hedges
        ("Options:\nA: 18\nB: 20\nWe now compare them carefully", "18"),  # "A:" not the last line
        ("```output\n7\n```\nWe now double the count and get", "7"),  # cut off after a tool output
        ("12 apples minus 5 is 7 apples.", "7"),  # arithmetic, not a stated result
    ],
)
def test_hedges_retractions_and_truncation_still_score_zero(response, truth):
    assert score(response, truth) == 0.0


# -- closing statements in other languages and scripts ---------------------------------------------------

@pytest.mark.parametrize(
    ("response", "truth"),
    [
        ("所以，小明一共有11个苹果。", "11"),  # a counter and its noun after the number
        ("إذن الإجابة هي 12.", "12"), ("الإجابة النهائية: 12", "12"), ("إذن الإجابة هي ١٢.", "12"),  # Arabic digits
        ("अतः उत्तर 12 है।", "12"), ("उत्तर: १२", "12"),  # Hindi, verb-final, Devanagari digits
    ],
)
def test_closing_statements_in_other_scripts(response, truth):
    assert score(response, truth) == 1.0


def test_a_hindi_answer_word_in_the_reasoning_is_not_an_anchor():  # a guard for the new Hindi anchor
    assert score("प्रश्न का उत्तर देने के लिए हम जोड़ते हैं: $\\boxed{5}$ और फिर उत्तर देने", "5") == 1.0


# -- huge exact values: compared digit for digit, never within a tolerance ---------------------------------

@pytest.mark.parametrize(
    ("reference", "answer", "equal"),
    [
        (str(2**1000), "2^{1000}+1", False),  # was accepted: a relative tolerance of 1e-20 on 302 digits
        (str(2**1000), "2^{1000}", True),
        (str(3**2000), "3^{2000}", True),  # past the parser's size guard: exact arithmetic as last resort
        (str(3**2000 + 1), "3^{2000}", False),
        ("2", "\\frac{2^{3000}}{2^{2999}}", True),
        ("1", "10^{10^{10}}", False),  # still too large to evaluate at all
    ],
    ids=["2^1000+1", "2^1000", "3^2000", "3^2000 vs 3^2000+1", "2^3000/2^2999", "tower"],
)
def test_huge_values_compare_exactly(reference, answer, equal):
    assert same(reference, answer) is equal


# -- bare percentages and a stated value on an unfinished last line ---------------------------------------

@pytest.mark.parametrize(
    ("response", "truth"),
    [("28 pct", "28\\%"), ("$28$ %", "28\\%"), ("The solution is $x \\neq 5$", "x \\neq 5"),
     ("The sum is $\\frac{3}{4}$", "0.75")],
)
def test_bare_percentages_and_stated_values(response, truth):
    assert score(response, truth) == 1.0


@pytest.mark.parametrize(
    ("response", "truth", "reward"),
    [
        ("Therefore, the total is 42 dollars. <|im_start|>user", "42", 1.0),  # a chat-template tail
        ("So we get $\\frac{1}{2}$.<|im_end|>", "0.5", 1.0),
        ("Therefore, there are 12 distinct sequences that meet the three given conditions.", "12", 1.0),  # a count
        ("Therefore, there are 12 sequences for each of the 3 cases.", "12", 0.0),  # two numbers: no count
        ("There are 12 sequences that meet the conditions, and then", "12", 0.0),  # unfinished
    ],
)
def test_template_tails_and_counts(response, truth, reward):
    assert score(response, truth) == reward


# A sentence that denies the value it ends with states no answer (main accepted all of these).
@pytest.mark.parametrize(
    "response",
    ["Therefore, the answer is not 5.", "The total is not 5.", "So the total isn't 5.", "The answer is not $5$.",
     "Thus the result cannot be 5.", "So $x$ is never 5.", "Therefore, the total is between 3 and 5.",
     "So the price is more than $5$.",
     "```output\n7\n```\nThat is wrong, let me fix the code: x = 5."],  # a tool closing that goes on working
)
def test_a_denied_value_is_not_an_answer(response):
    assert score(response, "5") == 0.0
    assert score("Therefore, the number of integers not divisible by 3 is 5.", "5") == 1.0  # a "not" elsewhere


def test_gsm8k_reads_qa_lines_and_the_percent_rule():
    verifier = VERIFIERS["gsm8k"](Settings())

    def gsm8k(response: str, truth: str) -> float:
        return verifier.score(verifier.make_task(response, truth, {}, None)).reward

    assert gsm8k("Q: Tom has 20 apples and eats 2. How many are left?\nA: 18", "18") == 1.0
    assert gsm8k("She gives 2 away.\nA: 20 - 2 = 18.\n\nQ: What is 3 + 4?", "18") == 1.0
    assert gsm8k("The answer is \\boxed{70\\%}.", "0.7") == 0.0
