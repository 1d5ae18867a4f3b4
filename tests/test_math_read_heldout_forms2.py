"""Answer forms of batch 41's held-out false accept and batch 40's held-out false reject, then batch 48's held-out
false accept and false rejects, batch 52's held-out false reject and batch 56's held-out false accept and false
reject (benchmarks/data/real_outputs.jsonl), read on 2026-11-27 after each split's never-tuned number was recorded
(docs/fidelity.md, "Held-out misses read after their numbers were recorded"). The cases are written from the forms,
not copied from the rows. Each case marked "was 1.0" scored 1 before its fix and each marked "was 0.0" scored 0; the
unmarked cases are guards, the same on the code before and after."""

from __future__ import annotations

import pytest

from olmorl.rewards.math._requested_form import unrequested_form
from test_math_read_heldout_forms import score  # the math verifier's reward, given the prompt


BINOMIAL = "Problem: Compute $\\dbinom{25}{22}$."
SHELF = "In how many ways can 6 different books be arranged on a shelf?"
AS_FACTORIALS = "Write $\\dbinom{25}{22}$ as a quotient of factorials."
SCORE = ("Ana scores 6 points for each star she collects. She collected 4 stars on the first level and 3 on the "
         "second. What is her score?")


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        # A question that asks for a value is not answered by a count left as factorials or a binomial coefficient
        # of numbers (the computation asked for, not done), as it is not by a function left unevaluated.
        ("**5. FORMAT:**\n\n$$\\boxed{\\binom{25}{22} = \\dfrac{25!}{22!3!}}$$\n\nLet me know if you'd like help "
         "with the factorials!", "2300", BINOMIAL, 0.0),  # was 1.0
        ("$\\boxed{\\dfrac{25!}{22!\\,3!}}$", "2300", BINOMIAL, 0.0),  # was 1.0
        ("$\\boxed{\\binom{25}{22}}$", "2300", BINOMIAL, 0.0),  # was 1.0: the question restated
        ("$\\boxed{\\tbinom{25}{3}}$", "2300", BINOMIAL, 0.0),  # was 1.0
        ("The answer is $6!$.", "720", SHELF, 0.0),  # was 1.0
        # A chain that ends in the value has computed it; a reference that keeps a factorial, or no question,
        # leaves the value to decide; a wrong count stays wrong.
        ("$\\boxed{\\binom{25}{22} = \\dfrac{25!}{22!3!} = 2300}$", "2300", BINOMIAL, 1.0),
        ("$\\boxed{2300}$", "2300", BINOMIAL, 1.0),
        ("The answer is $6! = 720$.", "720", SHELF, 1.0),
        ("$\\boxed{\\dfrac{25!}{22!3!}}$", "\\frac{25!}{22!3!}", AS_FACTORIALS, 1.0),
        ("$\\boxed{\\binom{25}{22}}$", "2300", None, 1.0),
        ("$\\boxed{\\binom{25}{21}}$", "2300", BINOMIAL, 0.0),
        ("$\\boxed{1{,}000}$", "1000", "What is $10^3$?", 1.0),  # a thin space or a brace is no factorial
        # An answer sentence that has ended, then its working in parentheses that reaches the same value (closed,
        # or cut off right after the value): the value stated.
        ("The answer is 42. (6 x 4 = 24, 6 x 3 = 18, 24 + 18 = 42", "42", SCORE, 1.0),  # was 0.0
        ("The answer is 42. (6 x 4 = 24, 6 x 3 = 18, 24 + 18 = 42)", "42", SCORE, 1.0),  # was 0.0
        ("The answer is 42 points. (24 + 18 = 42 points)", "42", SCORE, 1.0),  # 1.0 before too (its last words)
        ("The answer is 4.5. (9 / 2 = 4.5)", "4.5", None, 1.0),  # was 0.0
        # Working that reaches another value, stops before a value or mid-way, offers an alternative, takes the
        # value back or hedges it; a value whose sentence has not ended.
        ("The answer is 42. (6 x 4 = 24, 6 x 3 = 18, 24 + 18 = 43)", "42", SCORE, 0.0),
        ("The answer is 42. (6 x 4 = 24, 6 x 3 = 18, 24 + 18 = 43)", "43", SCORE, 0.0),
        ("The answer is 42. (6 x 4 = 24, 6 x 3 = 18, 24 + 18 =", "42", SCORE, 0.0),
        ("The answer is 42. (6 x 4 = 24, 6 x 3", "42", SCORE, 0.0),
        ("The answer is 42. (24 + 18 = 42, or 43 with the bonus)", "42", SCORE, 0.0),
        ("The answer is 42. (24 + 18 = 42, wait, that is wrong)", "42", SCORE, 0.0),
        ("The answer is 42. (24 + 18 = approximately 42)", "42", SCORE, 0.0),
        ("The answer is 42. (not 24 + 18 = 42)", "42", SCORE, 0.0),
        ("The answer is 42 (24 + 18 = 42", "42", SCORE, 0.0),
    ],
)
def test_read_heldout_forms(response: str, reference: str, prompt: str | None, reward: float) -> None:
    assert score(response, reference, prompt) == reward


# Batch 48's held-out false accept, read on 2026-11-27 after both parts' numbers were recorded: a whole number, a
# space, then a fraction with a slash is a mixed number (the parser had read "2 5/4" as (2 + 5)/4); a whole before a
# fraction that is not proper is no mixed number and states no value.
@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        ("So the answer (arabic numerals) is 1 3/3 liters.", "1.3333333333333333", 0.0),  # was 1.0
        ("The answer is 2 5/4 cups.", "1.75", 0.0),  # was 1.0
        ("The answer is $2 1/2 + 1$.", "2.5", 0.0),  # was 1.0: (2 + 1)/2 + 1
        ("The answer is $2 1/2 + 1$.", "3.5", 1.0),  # was 0.0
        ("The answer is 1 1/3 + 1.", "7/3", 1.0),  # was 0.0
        # A proper mixed number keeps its value; the improper one is not read as the whole plus the fraction either;
        # a power or a decimal before the fraction is no whole number.
        ("The answer is 1 1/3 cups.", "4/3", 1.0),
        ("The answer is $x = 1 1/3$.", "4/3", 1.0),
        ("The answer is $x = 1 1/3$.", "2/3", 0.0),
        ("The answer is 1 3/3 cups.", "2", 0.0),
        ("The answer is 2 5/4 cups.", "3.25", 0.0),
        ("The answer is $10^2 1/2$.", "50", 1.0),
    ],
)
def test_whole_number_before_a_slash_fraction(response: str, reference: str, reward: float) -> None:
    assert score(response, reference, None) == reward


DIGITS = "Therefore, the answer (arabic numerals) is "


# Batch 48's held-out false reject SingleEq CoT #363: an answer in digits said again as a decimal in words, digit by
# digit after "point" (quoted, with a unit), is the same answer, as a whole number or a fraction in words was.
@pytest.mark.parametrize(
    ("digits", "words", "reference", "reward"),
    [
        ("4.6", '"four point six liters."', "4.6", 1.0),  # was 0.0
        ("0.25", "zero point two five.", "0.25", 1.0),  # was 0.0
        ("12.05", "twelve point zero five dollars.", "12.05", 1.0),  # was 0.0
        ("-3.5", "minus three point five.", "-3.5", 1.0),  # was 0.0
        # Another decimal in words, a decimal place that is not one digit, no whole number: the words are the
        # answer and are never graded against digits; a wrong answer in digits stays wrong.
        ("4.6", "four point seven liters.", "4.6", 0.0),
        ("4.6", "four point seven liters.", "4.7", 0.0),
        ("2.25", "two point twenty-five.", "2.25", 0.0),
        ("0.6", "point six.", "0.6", 0.0),
        ("4.6", "four point six liters.", "4.7", 0.0),
    ],
)
def test_decimal_restated_in_words(digits: str, words: str, reference: str, reward: float) -> None:
    assert score(f"{DIGITS}{digits}. \n\nThe answer (in words) is {words}", reference, None) == reward


FLOCK = "A farm has 3125 sheep and 1890 goats. How many more sheep live on the farm compared to goats?"
FLOCK_THAN = "A farm has 3125 sheep and 1890 goats. How many more sheep than goats does the farm have?"
FLOCK_SUM = "A farm has 3125 sheep and 1890 goats. How many animals does the farm have?"
FLOCK_FEWER = "A farm has 3125 sheep and 1890 goats. How many fewer goats are there compared to sheep?"
CHAIN = "The answer (arabic numerals) is 3125 - 1890 = 1235 "


# Batch 48's held-out false reject SVAMP plain #624: an answer phrase whose chain ends in the difference, then the
# question's own comparative and "compared to" (or "than"), states the difference the question asks, as batch 14's
# closing "$60.00 more ... than Grant." does; "compared to"/"compared with" ask a difference as "than" does.
@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        (CHAIN + "more sheep live on the farm compared to goats.", "1235", FLOCK, 1.0),  # was 0.0
        (CHAIN + "more sheep compared with the goats on the farm.", "1235", FLOCK, 1.0),  # was 0.0
        (CHAIN + "more sheep than goats.", "1235", FLOCK_THAN, 1.0),  # was 0.0
        # No question, a question that asks no difference or another comparative, another number or a condition
        # after the value, a sentence cut off before its end, a wrong value.
        (CHAIN + "more sheep live on the farm compared to goats.", "1235", None, 0.0),
        (CHAIN + "more sheep live on the farm compared to goats.", "1235", FLOCK_SUM, 0.0),
        (CHAIN + "more sheep live on the farm compared to goats.", "1235", FLOCK_FEWER, 0.0),
        (CHAIN + "more sheep compared to the 1890 goats.", "1235", FLOCK, 0.0),
        (CHAIN + "more sheep compared to goats if none were sold.", "1235", FLOCK, 0.0),
        (CHAIN + "more sheep live on the farm compared to goats", "1235", FLOCK, 0.0),
        (CHAIN + "more sheep live on the farm compared to goats.", "1234", FLOCK, 0.0),
    ],
)
def test_chain_then_the_asked_comparative(response: str, reference: str, prompt: str | None, reward: float) -> None:
    assert score(response, reference, prompt) == reward


# Batch 52's held-out false reject prealgebra doc 136, read on 2026-11-27 after both parts' numbers were recorded: a
# closing sentence that is the question's own sentence with its "what number" slot filled by one number (an "also"
# or "too" added, every other word copied) states that number; the question's other numbers are its givens.
CUBE = "The cube of 4 is 64. The cube of what other number is 64?"
CUBE_ANY = "The cube of what number is 64?"
CUBE_SOLVED = "Since 4 * 4 * 4 = 64, the cube of 4 is 64. The cube of 4 is also 64."


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        ("The cube of 4 is 64. The cube of 8/2 is also 64.", "4", CUBE, 1.0),  # was 0.0
        ("The cube of 4 is also 64.", "4", CUBE, 1.0),  # was 0.0
        ("Thus, the cube of 4 is 64 too.", "4", CUBE, 1.0),  # was 0.0
        ("4 * 4 * 4 = 64. The cube of 4 is 64.", "4", CUBE_ANY, 1.0),  # was 0.0: it had read 64
        # No question, a question with no slot, a word changed or added (a denial, an alternative, a hedge), a
        # changed given, a sentence cut off, a wrong number in the slot; the given is not the number asked.
        (CUBE_SOLVED, "4", None, 0.0),
        ("The cube of 4 is also 64.", "4", "What is the cube root of 64?", 0.0),
        ("The cube of 4 is not 64.", "4", CUBE, 0.0),
        ("The cube of 4 or 5 is also 64.", "4", CUBE, 0.0),
        ("The cube of 4 is probably also 64.", "4", CUBE, 0.0),
        ("The cube of 4 is 65.", "4", CUBE, 0.0),
        ("The cube of 4 is also 64", "4", CUBE, 0.0),
        ("The cube of 5 is also 64.", "4", CUBE, 0.0),
        ("The cube of 4 is 64.", "64", CUBE, 0.0),  # was 1.0: the given read as the answer
    ],
)
def test_question_sentence_with_its_slot_filled(response: str, reference: str, prompt: str | None,
                                                reward: float) -> None:
    assert score(response, reference, prompt) == reward


# Batch 56's held-out false accept gemma2-2b baseline math_00414, read on 2026-11-27 after its numbers were recorded:
# for a value asked, a sum of two roots left with their radicals, `(5 + √23.25) + (5 - √23.25)` (equal to 10 only once
# computed), has not computed it; a root is a function left unevaluated as log and sin are. A chain that ends in the
# value, a side that goes on to its decimal, a reference that keeps a radical, or a prompt that asks no value leave
# the value to decide.
ROOTS_SUM = "What is the sum of the values of $b$ that satisfy the equation $(b-4)^2 = 13$?"
ROOTS_PRODUCT = "Compute the product of the roots of $x^2 - 6x + 2 = 0$."
ROOT_DISTANCE = ("What is the distance between $(0,0)$ and $(5,5)$? Express your answer as a decimal to the nearest "
                 "tenth.")
ROOTS_PLAIN = "The values of $b$ that satisfy $(b-4)^2 = 13$ are added."


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        ("The sum of the values of 'b' is:  \\boxed{ (4 + √13) + (4 - √13) }", "8", ROOTS_SUM, 0.0),  # was 1.0
        ("$\\boxed{(4 + \\sqrt{13}) + (4 - \\sqrt{13})}$", "8", ROOTS_SUM, 0.0),  # was 1.0
        ("$\\boxed{(3 + \\sqrt{7})(3 - \\sqrt{7})}$", "2", ROOTS_PRODUCT, 0.0),  # was 1.0
        ("$\\boxed{\\sqrt{64}}$", "8", ROOTS_SUM, 0.0),  # was 1.0
        # Guards: computed, a chain ending in the value, a decimal after the radical, a radical reference, no value
        # asked, no prompt, a wrong value.
        ("$\\boxed{8}$", "8", ROOTS_SUM, 1.0),
        ("$\\boxed{(4 + \\sqrt{13}) + (4 - \\sqrt{13}) = 8}$", "8", ROOTS_SUM, 1.0),
        ("$\\boxed{(4 + \\sqrt{13}) + (4 - \\sqrt{13})}$", "8", ROOTS_PLAIN, 1.0),
        ("$\\boxed{(4 + \\sqrt{13}) + (4 - \\sqrt{13})}$", "8", None, 1.0),
        ("$\\boxed{4 + \\sqrt{13}}$", "4 + \\sqrt{13}", "What is the larger value of $b$ with $(b-4)^2 = 13$?",
         1.0),
        ("$\\boxed{(4 + \\sqrt{13}) + (5 - \\sqrt{13})}$", "8", ROOTS_SUM, 0.0),
    ],
)
def test_radical_left_for_a_value_asked(response: str, reference: str, prompt: str | None, reward: float) -> None:
    assert score(response, reference, prompt) == reward


def test_radical_then_its_decimal_is_evaluated() -> None:
    # A side that goes on to its decimal has given the value asked (the form check alone: the extraction reads
    # no `\\approx` answer today).
    assert unrequested_form(ROOT_DISTANCE, "7.1", ["5\\sqrt{2} \\approx 7.1"]) is None
    assert unrequested_form(ROOT_DISTANCE, "7.1", ["5\\sqrt{2}"]) == "evaluated"


# Batch 56's held-out false reject gemma2-2b baseline math_00420, read on 2026-11-27 after its numbers were recorded:
# a named operator with a letter subscript applied to one vector or letter (`\text{proj}_{\mathbf{b}} \mathbf{a}`)
# labels the value after "=" as `f(x)` and `\tan A` do; a function of analysis (`\log_b a = 3`) stays an equation.
PROJECTION = ("Find the projection of $\\mathbf{u}$ onto $\\mathbf{v} = "
              "\\begin{pmatrix} 1 \\\\ 2 \\\\ 2 \\end{pmatrix}$ if $\\mathbf{u} \\cdot \\mathbf{v} = 6.$")
PROJECTED = "\\begin{pmatrix} 2/3 \\\\ 4/3 \\\\ 4/3 \\end{pmatrix}"
PROJECTED_TEX = "\\begin{pmatrix} \\frac{2}{3} \\\\ \\frac{4}{3} \\\\ \\frac{4}{3} \\end{pmatrix}"


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        (f"$\\boxed{{\\text{{proj}}_{{\\mathbf{{v}}}} \\mathbf{{u}} = {PROJECTED_TEX}}}$", PROJECTED, PROJECTION,
         1.0),  # was 0.0
        (f"$\\boxed{{\\operatorname{{proj}}_{{\\mathbf{{v}}}} (\\mathbf{{u}}) = {PROJECTED_TEX}}}$", PROJECTED,
         PROJECTION, 1.0),  # was 0.0
        (f"$\\boxed{{\\mathrm{{proj}}_v u = {PROJECTED_TEX}}}$", PROJECTED, None, 1.0),  # was 0.0
        ("$\\boxed{\\text{comp}_{\\mathbf{v}} \\mathbf{u} = 2}$", "2", None, 1.0),  # was 0.0
        # Guards: another vector, more than one argument or an expression on the left, a function of analysis.
        (f"$\\boxed{{\\text{{proj}}_{{\\mathbf{{v}}}} \\mathbf{{u}} = {PROJECTED_TEX}}}$",
         "\\begin{pmatrix} 1 \\\\ 2 \\\\ 2 \\end{pmatrix}", PROJECTION, 0.0),
        ("$\\boxed{\\text{comp}_{\\mathbf{v}} \\mathbf{u} + 1 = 3}$", "3", None, 0.0),
        ("$\\boxed{\\text{comp}_{\\mathbf{v}} 2\\mathbf{u} = 4}$", "4", None, 0.0),
        ("$\\boxed{\\log_b a = 3}$", "3", None, 0.0),
    ],
)
def test_named_operator_labels_its_value(response: str, reference: str, prompt: str | None, reward: float) -> None:
    assert score(response, reference, prompt) == reward


# Batch 56's held-out false reject openmath gemma2-2b math_00185, read on 2026-11-27 after its numbers were recorded:
# "Let's check our answer:" leads a check of the answer (the question's own equation with the value put in), not the
# answer; the old code read the check's line `(2^2)^3 = 2^6` as the answer, over the closing that states it.
POWER = "Problem: Find $m$, if ${(2^m)}^3=2^6$."
CHECKED = ("**3. SOLVE:**\n\n3m = 6, so m = 2\n\n**4. VERIFY:**\n\nLet's check our answer:\n  [(2^2)]^3 = 2^6 \n"
           "   = 64\n\n\n**5. FORMAT:**\n\n")
REMAINDER = "Find the integer $n$ with $0 \\le n < 83$ such that $17n \\equiv 1 \\pmod{83}$."


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        (CHECKED + "The solution is **m = 2**.", "2", POWER, 1.0),  # was 0.0
        (CHECKED + "The solution is **m = 2**.", "64", POWER, 0.0),  # was 1.0: the check's value read as the answer
        ("The answer is 44. To verify the answer: 17 * 44 = 748 = 9 * 83 + 1.", "44", REMAINDER, 1.0),  # was 0.0
        ("The answer is 44. Let me double-check my answer: 17 * 44 = 748.", "748", REMAINDER, 0.0),  # was 1.0
        # Guards: an answer label that leads no check, at a line start or after words that check nothing.
        (CHECKED + "Answer: m = 2", "2", POWER, 1.0),
        ("So here is our answer: 44.", "44", REMAINDER, 1.0),
        ("We check the working. Final answer: 44", "44", REMAINDER, 1.0),
    ],
)
def test_check_of_the_answer_is_no_answer(response: str, reference: str, prompt: str | None, reward: float) -> None:
    assert score(response, reference, prompt) == reward
