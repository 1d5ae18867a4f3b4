"""Closing sentences of batch 14's held-out false rejects (benchmarks/data/real_outputs.jsonl), read after the
split's never-tuned number was recorded (docs/fidelity.md, "Held-out misses read after their numbers were recorded"):
a plain-text arithmetic chain whose result ends the sentence, and a difference stated before the comparative the
question asks about; and closing forms of batch 16's dev rows. Each 1.0 case scored 0 before its fix; the 0.0
cases are guards."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())


def score(response: str, reference: str, prompt: str | None = None) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward


PICNIC = "Thus, Theo and Tia spent:\n\\[ 60 \\text{ dollars} \\]\non the entire contents of their picnic basket."

# Per form, (response, reference, reward): the 1.0 cases scored 0 before their fix, the 0.0 cases are guards.
CASES = {
    # batch 14 (Phi-3-mini, lm-eval gsm8k; four held-out false rejects read after their numbers were recorded): a
    # closing sentence that computes its value in a plain-text arithmetic chain and ends with the result, then a unit
    # or words that only qualify it, as a math span's chain gives its last side. Not an operand, a sentence with two
    # chains, a condition, a denial, a contrast, an unfinished sentence, nor a value with no chain (the pronoun guard).
    "chain": [
        ("She has 16 - 7 = <<16-7=9>>9 eggs.\n"
         "She makes 9 * $2 = $<<9*2=18>>18 per day at the farmers' market.", "18", 1.0),
        ("He made a profit of $200,000 - $130,000 = $<<200000-130000=70000>>70,000.", "70000", 1.0),
        ("Since he runs 3 times a week, he runs a total of 180 meters/session * 3 sessions/week = "
         "540 meters per week.", "540", 1.0),
        ("To meet the daily requirement of 60 cups, she needs to give her chickens 60 - 40 = 20 cups of feed "
         "in the final meal of the day.", "20", 1.0),
        ("She makes 9 * $2 = $18 per day.", "2", 0.0),
        ("She makes 9 * $2 = $18 per day and 3 * $2 = $6 per night.", "6", 0.0),
        ("She makes 9 * $2 = $18 per day and 3 * $2 = $6 per night.", "18", 0.0),
        ("If she sells 9 * $2 = $18 per day.", "18", 0.0),
        ("She does not make 9 * $2 = $18 per day.", "18", 0.0),
        ("She makes 9 * $2 = $18 per day, but she spends it.", "18", 0.0),
        ("She makes 9 * $2 = $18 per day at the", "18", 0.0),
        ("Check: 9 * 2 = 18.", "18", 0.0),
        ("She makes $18 per day.", "18", 0.0),
    ],
    # batch 16 (gpt-4o traces, a dev row): a conclusion sentence whose value is an inline math span, then words that
    # only qualify it, as after a plain value. Not another value, a condition or a contrast after it, an unfinished
    # sentence, a sentence with no conclusion word.
    "span tail": [
        ("Amoura: \\( 55 \\) minutes.\n\nThus, Ingrid was \\( 165 \\) minutes late to the party.", "165", 1.0),
        ("So the class gathered $1150$ dollars from all of its students.", "1150", 1.0),
        ("Thus, Ingrid was \\( 165 \\) minutes late to the party.", "55", 0.0),
        ("Thus, Ingrid was \\( 165 \\) minutes late if the party started at 8.", "165", 0.0),
        ("Thus, Ingrid was \\( 165 \\) minutes late, but Paul was on time.", "165", 0.0),
        ("Thus, Ingrid was \\( 165 \\) minutes late to the party", "165", 0.0),
        ("Ingrid was \\( 165 \\) minutes late to the party.", "165", 0.0),
    ],
    # batch 16 (gpt-4o traces, a dev row): a display equation inside a conclusion sentence that goes on in lower case
    # after it: one sentence, read with the display in its place. Not a next line that opens a new sentence, no
    # conclusion word, a contrast, an unfinished sentence.
    "display in sentence": [
        ("The snacks cost:\n\\[ 3 \\times 4 = 12 \\]\n\n" + PICNIC, "60", 1.0),
        ("Therefore, the total is:\n$$ 42 $$\nfor the whole trip.", "42", 1.0),
        (PICNIC, "12", 0.0),
        ("Thus, they spent:\n\\[ 60 \\]\nOn the next day they spent more.", "60", 0.0),
        ("We computed:\n\\[ 60 \\]\non the entire basket.", "60", 0.0),
        ("Thus, they spent:\n\\[ 60 \\text{ dollars} \\]\non the entire basket, but only on food.", "60", 0.0),
        (PICNIC[:-len(" picnic basket.")], "60", 0.0),
    ],
}


@pytest.mark.parametrize(("form", "response", "reference", "reward"),
                         [(form, *case) for form, cases in CASES.items() for case in cases])
def test_closing_forms(form, response, reference, reward):
    assert score(response, reference) == reward, form


# batch 14 (gpt-4o-mini traces, a held-out false reject read after its number was recorded): "How much more ... than
# Grant?" answered by a closing sentence whose value comes before the comparative the question asks about, then
# "than". Not without the question, a question that asks no difference, the other comparative, another value, a
# contrast or a condition after it, an unfinished sentence.
NEWSPAPER = ("Grant spends $200.00 a year to have the newspaper delivered daily to his house.  How much more money "
             "does Juanita spend buying the newspaper yearly than Grant?")
MORE = "Therefore, Juanita spends **$60.00** more annually on the newspaper than Grant."


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        (MORE, "60", NEWSPAPER, 1.0),
        ("Thus, Ingrid was 165 minutes later to the party than Paul.", "165",
         "How many minutes later than Paul did Ingrid arrive?", 1.0),
        (MORE, "60", None, 0.0),
        (MORE, "60", "How much money does Juanita spend buying the newspaper yearly?", 0.0),
        (MORE.replace("more", "less"), "60", NEWSPAPER, 0.0),
        (MORE, "260", NEWSPAPER, 0.0),
        (MORE[:-1] + ", but only in leap years.", "60", NEWSPAPER, 0.0),
        (MORE[:-1] + " if she buys it daily.", "60", NEWSPAPER, 0.0),
        (MORE[:-1], "60", NEWSPAPER, 0.0),
        ("Thus, Ingrid was 165 minutes later to the party than Paul.", "165", "How late was Ingrid?", 0.0),
        # Seen while testing the rule above: a short comparison ("$60 less than Grant.") fits the three-word unit
        # allowance and was read as its value whatever the question asks. It states the answer only to a question
        # that asks a difference with that comparative. The next three cases scored 1 before; the rest are guards.
        ("Juanita spends $60 less than Grant.", "60", NEWSPAPER, 0.0),
        ("Therefore, Juanita spends $60 less than Grant.", "60", NEWSPAPER, 0.0),
        ("Therefore, Juanita spends $60 more than Grant.", "60", None, 0.0),
        ("Therefore, Tom is 3 years older than Ann.", "3", "How old is Tom?", 0.0),
        ("Therefore, Juanita spends $60 more than Grant.", "60", NEWSPAPER, 1.0),
        ("Grant spends $60 less than Juanita.", "60",
         "How much less money does Grant spend buying the newspaper yearly than Juanita?", 1.0),
        ("Therefore, Tom is 3 years older than Ann.", "3", "How many years older is Tom than Ann?", 1.0),
        ("Therefore, Juanita spends $60 per year.", "60", NEWSPAPER, 1.0),
    ],
)
def test_a_value_before_the_asked_comparative_states_the_difference(response, reference, prompt, reward):
    assert score(response, reference, prompt) == reward, response


# Closing sentences batch 26's dev split (Phi-3-mini's hendrycks_math responses with no '$', ToRA's closings after a
# program's output) showed the math verifier missing, each accepted case scoring 0 before its fix; the guards after
# them must keep scoring 0.
#
# - A last sentence whose determiner is a name's possessive states its value as "The total ... is 7." does: "Mary's
#   average speed is 6 miles per hour." ("Let's" and "It's" are not names).
# - A count for "How many X ...?" that repeats X may go on with a phrase copied from the question, its numbers the
#   question's own: "There are 28 perfect squares between 10 and 1000." for "How many perfect squares have a value
#   between 10 and 1000?" (a changed number is a different claim).
# - A statement may open with its reason: "Since M must be an integer (...), the least possible number of muffins in
#   the original batch is 90." (not a condition: "If ..., the least ... is 90." states no answer).
# - A number after a position word and a determiner quantifies a restated given, as "the 3 friends" does: "5 cars drove
#   through the traffic jam in the first 15 minutes." states 5.
# - After a program's output, the closing may open with its count in words: "Four containers were imported on the
#   second day." (two to twenty, a plural noun after it; not "Four of the ...", "One ...", a hedge or a denial). The
#   plural may be irregular: "Ten men can stay upright on the wave." (batch 76's dev row, ToRA-70B GSM8K item 630).
SPEED = "Mary completes a 15-mile race in 2.5 hours. What is her average speed in miles per hour?"
SQUARES = "How many perfect squares have a value between 10 and 1000?"
WORKING = "So, the number of perfect squares between 10 and 1000 is (31 - 4) + 1 = 28.\n\n"


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        ("Average speed = 6 miles per hour\n\nMary's average speed is 6 miles per hour.", "6", 1.0),
        ("Mary’s average speed is 6 miles per hour.", "6", 1.0),
        ("Mary's average speed is 6 miles per hour.", "7", 0.0),
        ("Mary's average speed is not 6 miles per hour.", "6", 0.0),
        ("Mary's average speed is 6 or 7 miles per hour.", "6", 0.0),
        ("Mary's average speed is maybe 6 miles per hour.", "6", 0.0),
        ("Mary's average speed is 6 miles per hour if she runs.", "6", 0.0),
        ("Mary's speed is 15 miles over 2.5 hours.", "6", 0.0),
        ("Let's say the speed is 6 miles per hour.", "6", 0.0),
        ("It's speed is 6 miles per hour.", "6", 0.0),
    ],
)
def test_possessive_name_statement(response: str, reference: str, reward: float) -> None:
    assert score(response, reference, SPEED) == reward


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        (WORKING + "There are 28 perfect squares between 10 and 1000.", "28", SQUARES, 1.0),
        ("There are 28 perfect squares between 10 and 1000.", "29", SQUARES, 0.0),
        ("There are 28 perfect squares between 10 and 100.", "28", SQUARES, 0.0),  # not the question's phrase
        ("There are 28 or 29 perfect squares between 10 and 1000.", "28", SQUARES, 0.0),
        ("There are not 28 perfect squares between 10 and 1000.", "28", SQUARES, 0.0),
        ("There are 28 perfect squares between 10 and 1000, but I am not sure.", "28", SQUARES, 0.0),
        ("There are 28 perfect squares between 10 and 1000.", "28", None, 0.0),  # no question to echo
    ],
)
def test_count_with_the_questions_phrase(response: str, reference: str, prompt: str | None, reward: float) -> None:
    assert score(response, reference, prompt) == reward


# Batch 38's dev split (Phi-3-mini, hendrycks_math prealgebra docs 80 and 84): a count for "In how many ways ...?" or
# "How many of the following numbers ...?" after "So, there are", with "different" before the counted noun, then a
# clause that restates the question's condition partly in its own words; its numbers lie in runs of three or more words
# copied from the question, its "no"/"or" in copied runs ("no one", "factors of 34 or multiples of 7"), "either" right
# before such a copied "or". Not a changed number, a negation or an alternative of its own, a hedge, nor with no
# question.
OFFICERS = "In how many ways can a President, Vice-President, and Treasurer be chosen from a group of 8 people if no one " \
    "can serve two roles at the same time?"
CHOSEN = "So, there are 336 different ways to choose a President, Vice-President, and Treasurer from a group of 8 " \
    "people with no one serving two roles at the same time."
FACTORS = "How many of the following numbers are factors of 34 or multiples of 7?\n\n1, 2, 3, 4, 8, 14, 17, 29, 56, 91"
EITHER = "There are 6 numbers that are either factors of 34 or multiples of 7 among the given numbers."


# Batch 33's dev split (Phi-3-mini, hendrycks_math prealgebra doc 62): the count and the question's copied phrase may
# go on with a colon and the items counted, as a count right after the question's words may ("There are four possible
# numbers: 1, 2, 7 and 14."); the items' numbers are what was counted, not the answer. Not a changed phrase, a wrong
# count, an alternative among the items, a hedge, nor with no question.
CUBES = "How many positive even perfect cubes are less than 2008?"
SQUARE_ITEMS = "16, 25, 36, 49, 64, 81, 100, 121, 144, 169, 196, 225, 256, 289, 324, 361, 400, 441, 484, 529, 576, 625, 676, 729, 784, 841, 900 and 961"
LISTED = "There are 6 positive even perfect cubes less than 2008: 8, 64, 216, 512, 1000, and 1728."


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        ("12^3 = 1728\n14^3 = 2744 (greater than 2008, so we stop here)\n\n" + LISTED, "6", CUBES, 1.0),
        ("There are 28 perfect squares between 10 and 1000: " + SQUARE_ITEMS + ".", "28", SQUARES, 1.0),
        (LISTED, "7", CUBES, 0.0),
        (LISTED, "1728", CUBES, 0.0),
        (LISTED.replace("2008:", "2000:"), "6", CUBES, 0.0),  # not the question's phrase
        ("There are 6 positive even perfect cubes less than 2008: 8, 64 or 216.", "6", CUBES, 0.0),
        ("There are maybe 6 positive even perfect cubes less than 2008: 8, 64, 216.", "6", CUBES, 0.0),
        (LISTED, "6", None, 0.0),  # no question to echo
        # batch 38: a clause restating the question's condition (OFFICERS, FACTORS above)
        ("8 (choices for President) * 7 * 6 = 336 ways.\n\n" + CHOSEN, "336", OFFICERS, 1.0),
        ("Common numbers:\n1, 2, 14, 34, 56, 91\n\n" + EITHER, "6", FACTORS, 1.0),
        ("Therefore, there are 6 numbers that are factors of 34 or multiples of 7.", "6", FACTORS, 1.0),
        (CHOSEN, "8", OFFICERS, 0.0),  # a restated given is not the count
        (EITHER, "34", FACTORS, 0.0),
        (CHOSEN.replace("of 8 people", "of 9 people"), "336", OFFICERS, 0.0),  # a changed number
        ("There are 6 numbers that are not factors of 34 or multiples of 7.", "6", FACTORS, 0.0),
        ("There are 6 numbers that are either factors of 34 or 35.", "6", FACTORS, 0.0),
        ("There are 6 numbers or 7 numbers that are factors of 34 or multiples of 7.", "6", FACTORS, 0.0),
        ("There are 6 numbers that are factors of 34 or maybe multiples of 7.", "6", FACTORS, 0.0),
        ("So, there are 336 different ways to choose them, but not 8 people.", "336", OFFICERS, 0.0),
        (CHOSEN, "336", None, 0.0),  # no question to echo
    ],
)
def test_count_with_the_questions_phrase_and_its_items(response: str, reference: str, prompt: str | None,
                                                      reward: float) -> None:
    assert score(response, reference, prompt) == reward


OUTPUT = "```python\nprint(x)\n```\n```output\n4.0\n```\n"
CONTAINERS = "Calculate the number of containers that were imported on the second day."
JAM = "how many cars drove through the traffic jam in the first 15 minutes?"
MUFFINS = "what is the least possible number of muffins in the baker's original batch?"
REASON = "Since M must be an integer (you can't have a fraction of a muffin), the least possible number of muffins in " \
    "the original batch is 90."
CARS = "5 cars drove through the traffic jam in the first 15 minutes."


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        ("M ≥ 90\n\n" + REASON, "90", MUFFINS, 1.0),
        (REASON, "91", MUFFINS, 0.0),
        ("If M must be an integer, the least possible number of muffins in the original batch is 90.", "90", MUFFINS, 0.0),
        ("Since M is not an integer, the least possible number is not 90.", "90", MUFFINS, 0.0),
        ("Since M must be an integer, the least possible number of muffins is 90 or 91.", "90", MUFFINS, 0.0),
        ("Since we want the total, the total is maybe 90.", "90", MUFFINS, 0.0),
        (OUTPUT + CARS, "5", JAM, 1.0),
        ("So, " + CARS, "5", JAM, 1.0),
        (OUTPUT + CARS, "15", JAM, 0.0),
        (OUTPUT + CARS, "6", JAM, 0.0),
        (OUTPUT + "Four containers were imported on the second day.", "4", CONTAINERS, 1.0),
        (OUTPUT + "Four containers were imported on the second day.", "5", CONTAINERS, 0.0),
        (OUTPUT + "Maybe four containers were imported on the second day.", "4", CONTAINERS, 0.0),
        (OUTPUT + "Four containers were not imported on the second day.", "4", CONTAINERS, 0.0),
        (OUTPUT + "Four or five containers were imported on the second day.", "4", CONTAINERS, 0.0),
        (OUTPUT + "Four of the containers were imported on the second day.", "4", CONTAINERS, 0.0),
        (OUTPUT + "One container was imported.", "1", CONTAINERS, 0.0),
        ("Four containers were imported on the second day.", "4", CONTAINERS, 0.0),  # no program output before it
    ],
)
def test_reason_clause_position_word_and_worded_count(response: str, reference: str, prompt: str, reward: float) -> None:
    assert score(response, reference, prompt) == reward


SURFERS = "If there are 100 riders, how many men can stay upright on the wave?"
PRINTED_10 = "```python\nprint(men_upright)\n```\n```output\n10\n```\n"


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        (PRINTED_10 + "Ten men can stay upright on the wave.", "10", 1.0),
        (PRINTED_10 + "Ten women can stay upright on the wave.", "10", 1.0),
        (PRINTED_10 + "Ten people can stay upright on the wave.", "10", 1.0),
        (PRINTED_10 + "Ten men can stay upright on the wave.", "15", 0.0),
        (PRINTED_10 + "Ten men cannot stay upright on the wave.", "10", 0.0),
        (PRINTED_10 + "Maybe ten men can stay upright on the wave.", "10", 0.0),
        (PRINTED_10 + "Ten or fifteen men can stay upright on the wave.", "10", 0.0),
        (PRINTED_10 + "Ten of the men can stay upright on the wave.", "10", 0.0),
        (PRINTED_10 + "Ten men can stay upright if the wave is small.", "10", 0.0),
        (PRINTED_10 + "One man can stay upright on the wave.", "1", 0.0),
        ("Ten men can stay upright on the wave.", "10", 0.0),  # no program output before it
    ],
)
def test_worded_count_before_an_irregular_plural(response: str, reference: str, reward: float) -> None:
    assert score(response, reference, SURFERS) == reward
