"""Answer forms of batch 55's held-out false accept and false reject, batch 54's held-out false reject, batch 59's
held-out false reject, batch 61's held-out false rejects, batch 64's held-out false reject,
batch 68's held-out false reject and batch 75's held-out false reject
(benchmarks/data/real_outputs.jsonl), read on 2026-11-27
after each split's never-tuned number was recorded (docs/fidelity.md, "Held-out misses read after their numbers were
recorded"). The cases are written from the forms, not copied from the rows. Each case marked "was 1.0" scored 1
before its fix and each marked "was 0.0" scored 0; the unmarked cases are guards, the same on the code before and
after."""

from __future__ import annotations

import pytest
from test_math_read_heldout_forms import score  # the math verifier's reward, given the prompt


INTEGER = "What integer $n$ satisfies $\\frac{1}{3}<\\frac{n}{9}<\\frac{1}{2}$?"
BALANCE = ("Mia borrowed $500 and must repay it with 20% more. She pays $50 a month for 10 months. What is her "
           "remaining balance?")
FACTORS = "How many positive factors does 48 have?"


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        # Batch 55's held-out false accept: boxes mark final answers, so a sentence that offers two boxes joined by
        # "or" is a hedge, and an answer line right after it that picks one of them takes no other back.
        ("So the integer $n$ is $\\boxed{4}$ or $\\boxed{5}$.\nThe answer is: 4", "4", INTEGER, 0.0),  # was 1.0
        ("So the integer $n$ is $\\boxed{4}$ or $\\boxed{5}$.\nThe answer is: 5", "4", INTEGER, 0.0),
        ("So $n = \\boxed{4}$ or $n = \\boxed{5}$.\n\nFinal Answer: The final answer is $4$. I hope it is correct.",
         "4", INTEGER, 0.0),  # was 1.0
        ("So $n$ is $\\boxed{4}$ or $\\boxed{5}$.\nThe answer is: 4 or 5", "4", INTEGER, 0.0),
        # One box, or the same value boxed twice, or boxes joined by "and" for a list answer, or a reason that
        # picks one in the answer's own sentence: the answer line stands.
        ("So the integer $n$ is $\\boxed{4}$.\nThe answer is: 4", "4", INTEGER, 1.0),
        ("So $n$ is $\\boxed{4}$ or $\\boxed{4}$.\nThe answer is: 4", "4", INTEGER, 1.0),
        ("The solutions are $\\boxed{4}$ and $\\boxed{5}$.\nThe answer is: 4, 5", "4, 5", INTEGER, 1.0),
        ("The roots are $\\boxed{4}$ or $\\boxed{-5}$. Only 4 is positive, so the answer is 4.", "4", INTEGER, 1.0),
        # Batch 54's held-out false reject: an inline `$...$` does not close right before a digit (as in Pandoc), so
        # the dollar signs of an answer phrase's currency chain open no math span, and the chain gives its last side.
        ("Therefore, the answer (arabic numerals) is $600 - $500 = $100. \n\n\nI hope this helps!", "100", BALANCE,
         1.0),  # was 0.0
        ("The answer is $600 - $500 = $100.", "100", BALANCE, 1.0),  # was 0.0
        ("The answer is $600 - $500 = $100.", "600", BALANCE, 0.0),  # was 1.0: the minuend, read as `600 -`
        ("The answer is $600 - $500 = $100 or more.", "100", BALANCE, 0.0),  # a bound stays no answer
        ("The answer is $600 - $500 = $90.", "100", BALANCE, 0.0),
        ("The answer is $100$.", "100", BALANCE, 1.0),  # a math span closed before no digit is read as before
        ("The answer is $100.", "100", BALANCE, 1.0),
        # Batch 55's held-out false reject: for "How many X does S have?", a closing sentence that opens with the
        # question's own subject S, then "has" and a count followed by X, states the count, as "The number 48 has
        # 10 positive factors." (a determiner's subject) did.
        ("48 = 2^4 * 3^1, so the count is (4 + 1) * (1 + 1) = 10\n\nSo, 48 has 10 positive factors.", "10", FACTORS,
         1.0),  # was 0.0
        ("48 has ten positive factors.", "10", FACTORS, 1.0),  # was 0.0
        ("So, 48 has 12 positive factors.", "10", FACTORS, 0.0),
        # Another subject, an alternative, a hedge, a second count, or no question: no answer, as before.
        ("So, 24 has 10 positive factors.", "10", FACTORS, 0.0),
        ("So, 48 has 10 or 12 positive factors.", "10", FACTORS, 0.0),
        ("So, 48 has probably 10 positive factors.", "10", FACTORS, 0.0),
        ("So, 48 has 10 positive factors and 2 prime factors.", "10", FACTORS, 0.0),
        ("So, 48 has 10 positive factors.", "10", "How many positive factors does 36 have?", 0.0),
        ("So, 48 has 10 positive factors.", "10", None, 0.0),
    ],
)
def test_read_heldout_forms3(response: str, reference: str, prompt: str | None, reward: float) -> None:
    assert score(response, reference, prompt) == reward


QUOTIENT = "Find the quotient when $x^9 + 1$ is divided by $x - 1.$"
FULL = "x^8 + x^7 + x^6 + x^5 + x^4 + x^3 + x^2 + x + 1"
ALTERNATING = "x^8 - x^7 + x^6 - x^5 + x^4 - x^3 + x^2 - x + 1"
TWICE = "2x^8 + 2x^7 + 2x^6 + 2x^5 + 2x^4 + 2x^3 + 2x^2 + 2x + 2"


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        # Batch 59's held-out false reject: a polynomial written with its middle terms elided stands for every term
        # of the pattern its written terms fix (one variable, one coefficient or alternating signs, even steps).
        ("So the quotient is $$\\boxed{x^8 + x^7 + x^6 + ... + x + 1}$$", FULL, 1.0),  # was 0.0
        ("The quotient is $\\boxed{x^8 + x^7 + \\cdots + x + 1}$.", FULL, 1.0),  # was 0.0
        ("The quotient is $\\boxed{x^8 + x^7 + x^6 + \\dots + x^2 + x + 1}$.", FULL, 1.0),  # was 0.0
        ("The quotient is $\\boxed{x^8 - x^7 + x^6 - \\cdots - x + 1}$.", ALTERNATING, 1.0),  # was 0.0
        ("The quotient is $\\boxed{2x^8 + 2x^7 + \\ldots + 2x + 2}$.", TWICE, 1.0),  # was 0.0
        # Never a wrong polynomial: a term dropped or added, another step or sign pattern, a written term off the
        # pattern, nothing elided, or numbers alone stay wrong or unread.
        ("The quotient is $\\boxed{x^8 + x^7 + x^6 + ... + x}$.", FULL, 0.0),
        ("The quotient is $\\boxed{x^9 + x^8 + x^7 + ... + x + 1}$.", FULL, 0.0),
        ("The quotient is $\\boxed{x^8 + x^6 + ... + x^2 + 1}$.", FULL, 0.0),
        ("The quotient is $\\boxed{x^8 - x^7 + x^6 - ... - x + 1}$.", FULL, 0.0),
        ("The quotient is $\\boxed{x^8 + x^7 + x^6 + ... + x}$.", ALTERNATING, 0.0),
        ("The quotient is $\\boxed{x^8 + x^7 + x^6 + ... + x^2 + 1}$.", FULL, 0.0),
        ("The quotient is $\\boxed{x^8 + x^7 + ... - x + 1}$.", FULL, 0.0),
        ("The quotient is $\\boxed{x^8 + 2x^7 + ... + x + 1}$.", FULL, 0.0),
        ("The quotient is $\\boxed{x^8 + y^7 + ... + x + 1}$.", FULL, 0.0),
        ("The quotient is $\\boxed{x^8 + ... + x + 1}$.", FULL, 0.0),
        # Compared as words an ellipsis had vanished, so a sum that elides nothing, or elides terms the reference
        # lacks, had matched the written terms.
        ("The quotient is $\\boxed{x^2 + x + ... + 1}$.", "x^2 + x + 1", 0.0),  # was 1.0
        ("The quotient is $\\boxed{x^8 + x^7 + ... + 1}$.", "x^8 + x^7 + 1", 0.0),  # was 1.0
        ("The quotient is $\\boxed{x^8 + x^7 + ... + x^2 + 1}$.", "x^8 + x^7 + x^2 + 1", 0.0),  # was 1.0
        ("The sum is $\\boxed{1 + 2 + ... + 10}$.", "55", 0.0),
        ("The quotient is $\\boxed{x^8 + x^7 + x^6 + x^5 + x^4 + x^3 + x^2 + x + 1}$.", FULL, 1.0),
        ("The value is $\\boxed{0.333...}$.", "\\frac{1}{3}", 1.0),
    ],
)
def test_elided_polynomial(response: str, reference: str, reward: float) -> None:
    assert score(response, reference, QUOTIENT) == reward


PYRAMID = "A pyramid has 6 vertices and 6 faces. How many edges does it have?"


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        # Batch 61's held-out false reject (part 2's): `\;`, `\:` and `\>` are spaces in LaTeX, wider than `\,`, so a
        # word after one is a word after a value (`10\;\text{edges}` is 10 edges), not glued to it (`10edges`).
        ("So, the total number of edges is 6 + 4 = 10 edges.", "10\\;\\text{edges}", 1.0),  # was 0.0
        ("The answer is $\\boxed{10}$.", "10\\;\\text{edges}", 1.0),  # was 0.0
        ("The answer is $\\boxed{10}$.", "10\\:\\text{edges}", 1.0),  # was 0.0
        ("The answer is $\\boxed{10}$.", "10\\>\\text{edges}", 1.0),  # was 0.0
        ("The pyramid has $\\boxed{10\\;\\text{edges}}$.", "10", 1.0),  # was 0.0
        ("The answer is $\\boxed{10\\;\\text{edges}}$.", "10\\text{ edges}", 1.0),  # was 0.0
        # Another count stays wrong; between digits a wide space still groups them, as before.
        ("The answer is $\\boxed{12}$.", "10\\;\\text{edges}", 0.0),
        ("So, the total number of edges is 6 + 6 = 12 edges.", "10\\;\\text{edges}", 0.0),
        ("The pyramid has $\\boxed{10\\;\\text{edges}}$.", "100", 0.0),
        ("The answer is $\\boxed{2\\;\\text{or}\\;3}$.", "2", 0.0),
        ("The answer is $\\boxed{1000}$.", "1\\;000", 1.0),
    ],
)
def test_wide_latex_space_before_a_word(response: str, reference: str, reward: float) -> None:
    assert score(response, reference, PYRAMID) == reward


TREE = "A tree is now 12 feet tall and grows 18 inches a year. In how many years will the tree be 36 feet tall?"
GROWS = "Therefore, it will take {} years for the tree to grow from {} feet to {} {} tall."


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        # Batch 61's held-out false reject (part 1's, algebra): a range "from 12 feet to 36 feet" whose ends, each
        # number with one unit word, the question states word for word restates its givens around the answer.
        (GROWS.format(16, 12, 36, "feet"), "16", TREE, 1.0),  # was 0.0
        ("So it takes 16 years to grow from 12 feet to 36 feet.", "16", TREE, 1.0),  # was 0.0
        (GROWS.format(24, 12, 36, "feet"), "16", TREE, 0.0),
        # An end the question does not state, two unit words, no question, a hedge, a denial, a second value, a
        # condition, or a sentence with no other value: no answer, as before.
        (GROWS.format(16, 10, 36, "feet"), "16", TREE, 0.0),
        (GROWS.format(16, 12, 36, "inches"), "16", TREE, 0.0),
        (GROWS.format(16, 12, 36, "feet"), "16", None, 0.0),
        (GROWS.format("16 or 17", 12, 36, "feet"), "16", TREE, 0.0),
        ("Therefore, it will not take 16 years for the tree to grow from 12 feet to 36 feet tall.", "16", TREE, 0.0),
        ("Therefore, it will take 16 years and 3 months for the tree to grow from 12 feet to 36 feet tall.", "16",
         TREE, 0.0),
        ("Therefore, it will take 16 years for the tree to grow from 12 feet to 36 feet tall if it grows 18 inches a "
         "year.", "16", TREE, 0.0),
        ("Therefore, the tree grows from 12 feet to 36 feet.", "36", TREE, 0.0),
    ],
)
def test_restated_range_of_givens(response: str, reference: str, prompt: str | None, reward: float) -> None:
    assert score(response, reference, prompt) == reward


MEALS = ("Anna has 7 peaches and Dana has 9 peaches. Anna divides hers into 20 meals of equal size; Dana divides his "
         "into meals of 0.36 peaches each. Who has larger meals?")


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        # Batch 61's held-out false reject (part 1's, prealgebra): for "Who has larger meals?", a closing sentence
        # that puts a name the question holds in the possessive before the question's noun, then a copula and the
        # question's comparative, names the answer, after a reason or none.
        ("Since 0.36 is greater than 0.35, Dana's meals are larger.", "\\text{Dana}", MEALS, 1.0),  # was 0.0
        ("Dana's meals are larger.", "Dana", MEALS, 1.0),  # was 0.0
        ("Because 0.36 > 0.35, Dana's meals are larger than Anna's.", "Dana", MEALS, 1.0),  # was 0.0
        ("Since 0.36 is greater than 0.35, Anna's meals are larger.", "Dana", MEALS, 0.0),
        ("Dana has larger meals.", "Dana", MEALS, 1.0),  # the question's own predicate, read before
        # Another adjective or noun, a name the question lacks, a denial, a hedge, an alternative, a contrast in the
        # reason, or no question: no answer.
        ("Since 0.36 is greater than 0.35, Dana's meals are smaller.", "Dana", MEALS, 0.0),
        ("Since 0.36 is greater than 0.35, Dana's peaches are larger.", "Dana", MEALS, 0.0),
        ("Since 0.36 is greater than 0.35, Bob's meals are larger.", "Bob", MEALS, 0.0),
        ("Since 0.36 is greater than 0.35, Dana's meals are not larger.", "Dana", MEALS, 0.0),
        ("Since 0.36 is greater than 0.35, Dana's meals are probably larger.", "Dana", MEALS, 0.0),
        ("Since 0.36 is greater than 0.35, Dana's meals are larger or the same.", "Dana", MEALS, 0.0),
        ("Since 0.36 is not greater than 0.35, Dana's meals are larger.", "Dana", MEALS, 0.0),
        ("Since 0.36 is greater than 0.35, Dana's meals are larger.", "Dana", None, 0.0),
    ],
)
def test_possessive_named_answer(response: str, reference: str, prompt: str | None, reward: float) -> None:
    assert score(response, reference, prompt) == reward


TREE = "A tree is 12 feet tall and grows 18 inches a year. How many years will it take to be 36 feet tall?"


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        # Found while batch 61's range was read (not a row of the corpus): a closing sentence whose value is the
        # object of a denied verb does not state it.
        ("It grows 1.5 feet a year.\nTherefore, it will not take 16 years.", "16", 0.0),  # was 1.0
        ("So she does not have 16 apples.", "16", 0.0),  # was 1.0
        ("Thus he won't need 16 boxes.", "16", 0.0),  # was 1.0
        ("So he will not need to buy 16 boxes.", "16", 0.0),  # was 1.0
        # The value stated: no denial, a denial in another clause, or one inside the subject before a copula.
        ("It grows 1.5 feet a year.\nTherefore, it will take 16 years.", "16", 1.0),
        ("It grows 1.5 feet a year.\nSo it is not possible sooner; it will take 16 years.", "16", 1.0),
        ("So the number of students who do not play sports is 16.", "16", 1.0),
        ("Therefore, the number of eggs not used is 16.", "16", 1.0),
        ("So the people who did not come are 16.", "16", 1.0),
    ],
)
def test_value_of_a_denied_verb(response: str, reference: str, reward: float) -> None:
    assert score(response, reference, TREE) == reward


CYCLISTS = ("Two runners pass the start of a circular track at 9:20 AM. One takes $10$ minutes per lap, the other "
            "$15$ minutes. When do they next pass the start together?  Your answer should be in the form $h:m_1m_2,$ "
            "like 3:45.")
CLOCK = "A film starts at 11:40 PM and runs 50 minutes. When does it end? Give the time in the form hh:mm."
MERIDIEM_ASKED = "A film starts at 11:40 AM and runs 50 minutes. When does it end? Answer in the form h:mm a.m. or p.m."
NO_FORM = "Two runners pass the start together at 9:20 AM and every 30 minutes after. When do they next?"


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        # Batch 64's held-out false reject: a question that asks for the bare clock reading ("in the form
        # $h:m_1m_2,$ like 3:45") is answered by `9:50` though its reference says p.m. or a.m. as well.
        ("The next time is $\\boxed{9:50}$ AM.\nThe answer is: 9:50", "\\text{9:50 AM}", CYCLISTS, 1.0),  # was 0.0
        ("The answer is $\\boxed{9:50}$", "\\text{9:50 a.m.}", CYCLISTS, 1.0),  # was 0.0
        ("It ends at $\\boxed{12:30}$.", "\\text{12:30 AM}", CLOCK, 1.0),  # was 0.0
        ("It ends at $\\boxed{12:30}$ a.m.", "\\text{12:30 a.m.}", CLOCK, 1.0),  # was 0.0
        # The same time with its half of the day, or a 24-hour reading, passed before and still does.
        ("The answer is $\\boxed{9:50 AM}$", "\\text{9:50 AM}", CYCLISTS, 1.0),
        ("It ends at $\\boxed{00:30}$.", "\\text{12:30 AM}", CLOCK, 1.0),
        # Another time, one equal only as a ratio, the other half of the day named, a form that asks for a.m. or
        # p.m., a question that asks for no form, or no prompt: as before, no match.
        ("The answer is $\\boxed{9:55}$", "\\text{9:50 AM}", CYCLISTS, 0.0),
        ("The answer is $\\boxed{10:50}$", "\\text{9:50 AM}", CYCLISTS, 0.0),
        ("The answer is $\\boxed{1:05}$", "\\text{2:10 PM}", CYCLISTS, 0.0),
        ("The answer is $\\boxed{9:50 PM}$", "\\text{9:50 AM}", CYCLISTS, 0.0),
        ("It ends at $\\boxed{12:30}$.", "\\text{12:30 PM}", MERIDIEM_ASKED, 0.0),
        ("The answer is $\\boxed{9:50}$", "\\text{9:50 AM}", NO_FORM, 0.0),
        ("The answer is $\\boxed{9:50}$", "\\text{9:50 AM}", None, 0.0),
    ],
)
def test_bare_clock_reading_asked(response: str, reference: str, prompt: str | None, reward: float) -> None:
    assert score(response, reference, prompt) == reward


GLOBO = "Would it be typical for a Rede Globo anchor to say Konnichiwa to the viewers?"
BASIS = "The answer (Yes or No) is based on the following information:\n\nRede Globo is a Brazilian television network.\n\n"


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        # Batch 67's held-out false reject: an answer said to rest on the information that follows, the facts, then
        # the unhedged answer opening a later paragraph (cut at the log's token limit after it).
        (BASIS + "No, it would not be typical for a Rede Gl", "no", 1.0),  # was 0.0
        ("The answer (Yes or No) is based on the following:\n\nFact one.\n\nFact two.\n\nYes.", "yes", 1.0),  # was 0.0
        # The answer word decides: another reference, or the other word, is no match.
        (BASIS + "No, it would not be typical for a Rede Gl", "yes", 0.0),
        (BASIS + "Yes, it would.", "no", 0.0),
        # No answer: the basis alone (batch 43's #486, cut before any answer), a verdict word with no answer mark,
        # both words opening paragraphs, a hedge, or a statement that announces no basis to follow.
        ("The answer (Yes or No) is based on the following: \n\nBandy is a team sport played on ice, in which", "no",
         0.0),
        (BASIS + "Yes or no depends on the anchor.\n\nNo, it would not.", "no", 0.0),
        (BASIS + "No, it would not.\n\nYes, it could be.", "no", 0.0),
        (BASIS + "Maybe, it depends on the anchor.", "no", 0.0),
        ("The answer (Yes or No) is based on your opinion.\n\nNo, it would not.", "no", 0.0),
        ("The answer (Yes or No) is based on the following information.\n\nRede Globo is Brazilian.\n\nNo.", "no", 0.0),
        # "followed by an explanation" still defers only to the next paragraph.
        ("The answer (Yes or No) is followed by an explanation.\n\nRede Globo is Brazilian.\n\nNo, it would not.", "no",
         0.0),
    ],
)
def test_answer_after_its_announced_basis(response: str, reference: str, reward: float) -> None:
    assert score(response, reference, GLOBO) == reward


INVERSE = ("If $\\mathbf{M}^{-1} = \\begin{pmatrix} 3 & 5 \\\\ -1 & 7 \\end{pmatrix},$ and $\\mathbf{N} = \\frac{1}{3} "
           "\\mathbf{M},$ then find $\\mathbf{N}^{-1}.$")
NINV = "\\begin{pmatrix} 9 & 15 \\\\ -3 & 21 \\end{pmatrix}"
COLUMN = "\\begin{pmatrix} 4 \\\\ -9 \\end{pmatrix}"


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        # Batch 68's held-out false reject: an answer line that writes a matrix's row break as one backslash before
        # a number (`9&15\-3&21`) gives the same entries as the boxed matrix, since `\-` and `\0` are no LaTeX there.
        ("So $\\mathbf{N}^{-1} = \\boxed{\\begin{pmatrix} 9 & 15 \\\\ -3 & 21 \\end{pmatrix}}.$\n"
         "The answer is: \\begin{pmatrix}9&15\\-3&21\\end{pmatrix}", NINV, 1.0),  # was 0.0
        ("The answer is: \\begin{pmatrix}9&15\\-3&21\\end{pmatrix}", NINV, 1.0),  # was 0.0
        ("The answer is: \\begin{pmatrix}4\\-9\\end{pmatrix}", COLUMN, 1.0),  # was 0.0
        ("The answer is: \\begin{pmatrix}9&15\\\\-3&21\\end{pmatrix}", NINV, 1.0),
        # Other entries, a ragged or flattened matrix, rows mixing both breaks, or the cells with no matrix around
        # them: as before, no match.
        ("The answer is: \\begin{pmatrix}-4\\9\\end{pmatrix}", COLUMN, 0.0),
        ("The answer is: \\begin{pmatrix}9&15\\3&21\\end{pmatrix}", NINV, 0.0),
        ("The answer is: \\begin{pmatrix}9&15\\-3\\end{pmatrix}", NINV, 0.0),
        ("The answer is: \\begin{pmatrix}9&15&-3&21\\end{pmatrix}", NINV, 0.0),
        ("The answer is: \\begin{pmatrix}9&15\\-3&21\\\\1&2\\end{pmatrix}", NINV, 0.0),
        ("The answer is: \\begin{pmatrix}915\\-321\\end{pmatrix}", NINV, 0.0),
        ("The answer is: 9&15\\-3&21", NINV, 0.0),
        ("The answer is: \\begin{pmatrix}9&15\\-3&21\\end{pmatrix}",
         "\\begin{pmatrix} 9 & 15 & -3 & 21 \\end{pmatrix}", 0.0),
    ],
)
def test_matrix_row_break_as_one_backslash(response: str, reference: str, reward: float) -> None:
    assert score(response, reference, INVERSE) == reward


FIELD = ("Jim and Martha stand at a corner of a field 300 feet wide and 400 feet long. Jim walks diagonally across it; "
         "Martha walks along its length and width. How many feet less than Martha does Jim walk?")


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        # Batch 73's dev false reject (and batch 19's kept held-out one): a box holding a sentence in words with one
        # number is read as that sentence closing the response.
        ("So the difference is 200 feet.\n\n\\boxed{Jim walks 200 feet less than Martha.}", "200", 1.0),  # was 0.0
        ("Working.\n\n\\boxed{Jim walks 200 feet.}", "200", 1.0),  # was 0.0
        ("Working.\n\n\\boxed{Jim walks 300 feet less than Martha.}", "200", 0.0),
        # A denial, a condition, a comparison not asked, a retraction, an "or", a hedge or a bound: no value.
        ("Working.\n\n\\boxed{Jim does not walk 200 feet.}", "200", 0.0),
        ("Working.\n\n\\boxed{Jim walks 200 feet if Martha waits.}", "200", 0.0),
        ("Working.\n\n\\boxed{Jim walks 200 feet more than Martha.}", "200", 0.0),
        ("Working.\n\n\\boxed{Jim walks 200 feet. Wait, that is wrong.}", "200", 0.0),
        ("Working.\n\n\\boxed{Jim walks 200 feet less than Martha, or 300.}", "200", 0.0),
        ("Working.\n\n\\boxed{Jim walks 200 feet, but I am not sure.}", "200", 0.0),
        ("Working.\n\n\\boxed{Jim walks more than 200 feet.}", "200", 0.0),
    ],
)
def test_sentence_in_words_in_a_box(response: str, reference: str, reward: float) -> None:
    assert score(response, reference, FIELD) == reward


DOMAIN = "What real values of $x$ are not in the domain of $f(x)=\\frac{1}{|x^2+3x-4|+|x^2+9x+20|}$?"


@pytest.mark.parametrize(
    ("response", "reference", "reward"),
    [
        # Batch 75's held-out false reject: a set of one value states that value, as a set of two states both
        # (`\{-4, 2\}` already matched "-4, 2"); either side may be the set.
        ("Therefore, the real values of $x$ not in the domain are $\\boxed{\\{-4\\}}$.", "-4", 1.0),  # was 0.0
        ("So $x \\in \\boxed{\\{-4\\}}$.", "-4", 1.0),  # was 0.0
        ("The answer is $\\boxed{-4}$.", "\\{-4\\}", 1.0),  # was 0.0
        ("The answer is $\\boxed{\\{-4, 2\\}}$.", "-4, 2", 1.0),
        # Another value, a second member, a union of sets or an empty set: no match.
        ("The answer is $\\boxed{\\{4\\}}$.", "-4", 0.0),
        ("The answer is $\\boxed{\\{-4, 1\\}}$.", "-4", 0.0),
        ("The answer is $\\boxed{\\{-4\\} \\cup \\{1\\}}$.", "-4", 0.0),
        ("The answer is $\\boxed{\\{\\}}$.", "-4", 0.0),
        ("The answer is $\\boxed{\\{-4\\}}$.", "-4, 1", 0.0),
    ],
)
def test_set_of_one_value(response: str, reference: str, reward: float) -> None:
    assert score(response, reference, DOMAIN) == reward
