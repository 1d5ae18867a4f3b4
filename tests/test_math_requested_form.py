"""What a question asks for, from batch 13's and batch 15's held-out misses (benchmarks/data/real_outputs.jsonl),
read after their splits' never-tuned numbers were recorded (docs/fidelity.md, "Held-out misses read after their
numbers were recorded"). False accepts: a radical left in a denominator for "Simplify", a function left unevaluated
for "a common fraction", a multiple of the equation a normalized form asks for, an unreduced fraction for "a mixed number" (batch 23's); and from batch 19's dev split, a
function left unevaluated where a value is asked for (each 0.0 case with its question scored 1 before its fix; the
1.0 cases are guards: without such a question the value decides). False rejects: the
expression the question asks for labelling the value (each 1.0 case scored 0 before; the 0.0 cases are guards)."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())


def score(response: str, reference: str, prompt: str | None = None) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward


SIMPLIFY = "Simplify the following:$$\\frac{3}{\\sqrt{27}}$$"
RATIONAL = "\\frac{\\sqrt{3}}{3}"
POWER = "Problem: What power of 4 is equal to 8? Express your answer as a common fraction."
PLANE = ("Problem: Find the equation of the plane containing the points $(0,-1,-1),$ $(-4,4,4),$ and $(4,5,1).$  "
         "Enter your answer in the form\n\\[Ax + By + Cz + D = 0,\\]where $A,$ $B,$ $C,$ $D$ are integers such that "
         "$A > 0$ and $\\gcd(|A|,|B|,|C|,|D|) = 1.$")
PLANE_REF = "5x - 7y + 11z + 4 = 0"
INTERVAL = ("Problem: Find all $p$ which satisfy both the inequalities $0\\ge 54p-144$ and $0>12-20p$. Express your "
            "answer in interval notation, reducing any fractions in your answer.")
INTERVAL_REF = "\\left(\\frac{3}{5},\\frac{8}{3}\\right]"
MIXED = "Problem: Express $\\frac{6!+4!}{5!}$ as a mixed number."
CHANCE = "Problem: What is the probability that both are red? Express your answer as a common fraction."
ROOTS = ("Problem: Compute $a+b+c,$ given that $a,$ $b,$ and $c$ are the roots of "
         "\\[\\frac{1}{x} + 5x^2 = 6x - 24.\\]")
TRIG = ("Problem: Compute\n\\[\\frac{1}{\\cos^2 10^\\circ} + \\frac{1}{\\sin^2 20^\\circ} + "
        "\\frac{1}{\\sin^2 40^\\circ}.\\]")
ASYMPTOTES = ("Problem: The graph of $f(x)=\\frac{2x}{x^2-5x-14}$ has vertical asymptotes $x=a$ and $x=b$, and "
              "horizontal asymptote $y=c$.  Find $a+b+c$.")

CASES = {
    # batch 13 (Qwen2.5-Math-7B, math_00146): simplest radical form has no radical in a denominator.
    "radical in a denominator": [
        ("Thus, the simplified form is:\n\\[\n\\boxed{\\frac{1}{\\sqrt{3}}}\n\\]", RATIONAL, SIMPLIFY, 0.0),
        ("$\\boxed{1/\\sqrt{3}}$", RATIONAL, SIMPLIFY, 0.0),
        ("$\\boxed{\\dfrac{2}{3\\sqrt{3}}}$", "\\frac{2\\sqrt{3}}{9}", "Simplify $\\frac{2}{\\sqrt{27}}$.", 0.0),
        ("$\\boxed{\\frac{\\sqrt{3}}{3}}$", RATIONAL, SIMPLIFY, 1.0),
        ("$\\boxed{\\sqrt{3}/3}$", RATIONAL, SIMPLIFY, 1.0),
        ("$\\boxed{\\frac{3}{\\sqrt{27}} = \\frac{\\sqrt{3}}{3}}$", RATIONAL, SIMPLIFY, 1.0),
        ("$\\boxed{\\frac{1}{\\sqrt{3}}}$", RATIONAL, None, 1.0),
        ("$\\boxed{\\frac{1}{\\sqrt{3}}}$", RATIONAL, "Compute $\\frac{3}{\\sqrt{27}}$.", 1.0),
        ("$\\boxed{\\frac{1}{\\sqrt{3}}}$", "\\frac{1}{\\sqrt{3}}", SIMPLIFY, 1.0),
    ],
    # batch 15 (gemma2-9b openmath, math_00048): a common fraction is a ratio of integers, not a log of one.
    "common fraction": [
        ("**5. FORMAT:**\n\n\n\\boxed{x = 1 + \\log_4(2)}", "\\frac{3}{2}", POWER, 0.0),
        ("$\\boxed{\\log_4 8}$", "\\frac{3}{2}", POWER, 0.0),
        ("$\\boxed{\\frac{3}{2}}$", "\\frac{3}{2}", POWER, 1.0),
        ("$\\boxed{x = \\frac{3}{2}}$", "\\frac{3}{2}", POWER, 1.0),
        ("$\\boxed{x = 1 + \\log_4(2)}$", "\\frac{3}{2}", "What power of 4 is equal to 8?", 1.0),
    ],
    # batch 23's held-out false accept (Phi-3-mini, counting_and_prob doc 21), read after its number was recorded:
    # "a mixed number" / "a common fraction" / "Simplify" ask for the fraction reduced; without them the value decides.
    "reduced fraction": [
        ("So, the mixed number is $\\boxed{6 \\frac{24}{120}}$.", "6\\frac15", MIXED, 0.0),
        ("$\\boxed{\\frac{26}{221}}$", "\\frac{2}{17}", CHANCE, 0.0),
        ("$\\boxed{6/8}$", "\\frac{3}{4}", CHANCE, 0.0),
        ("$\\boxed{\\frac{-6}{8}}$", "-\\frac{3}{4}", CHANCE, 0.0),
        ("$\\boxed{\\frac{10}{4}}$", "\\frac{5}{2}", "Simplify $\\frac{20}{8}$.", 0.0),
        ("$\\boxed{\\frac{4}{6}}$", "\\frac{2}{3}", "Write it in lowest terms.", 0.0),
        ("So, the mixed number is $\\boxed{6 \\frac{1}{5}}$.", "6\\frac15", MIXED, 1.0),
        ("$\\boxed{\\frac{6}{8} = \\frac{3}{4}}$", "\\frac{3}{4}", CHANCE, 1.0),
        ("$\\boxed{\\dfrac34}$", "\\frac{3}{4}", CHANCE, 1.0),
        ("$\\boxed{2/17}$", "\\frac{2}{17}", CHANCE, 1.0),
        ("So, the mixed number is $\\boxed{6 \\frac{24}{120}}$.", "6\\frac15", "Compute $\\frac{6!+4!}{5!}$.", 1.0),
        ("$\\boxed{\\frac{26}{221}}$", "\\frac{2}{17}", "What is the probability?", 1.0),
        ("$\\boxed{\\frac{6}{8}}$", "\\frac{6}{8}", CHANCE, 1.0),
        ("$\\boxed{\\frac{3\\sqrt{2}}{2}}$", "\\frac{3\\sqrt{2}}{2}", "Simplify $\\sqrt{4.5}$.", 1.0),
    ],
    # batch 94 (gemma2-9b openmath, math_00293, a dev row): "reducing any fractions in your answer" asks for the
    # endpoints as fractions; `0.6` for `\frac{3}{5}` is its value, not the form asked. Fractions, no such words, a
    # reference with a decimal or with no fraction leave the value to decide.
    "fraction": [
        ("**5. FORMAT:**\n\n$\\boxed{(0.6, 8/3]}$", INTERVAL_REF, INTERVAL, 0.0),
        ("$\\boxed{(.6, \\frac{8}{3}]}$", INTERVAL_REF, INTERVAL, 0.0),
        ("$\\boxed{(3/5, 8/3]}$", INTERVAL_REF, INTERVAL, 1.0),
        ("$\\boxed{\\left(\\frac{3}{5},\\frac{8}{3}\\right]}$", INTERVAL_REF, INTERVAL, 1.0),
        ("$\\boxed{(0.6, 8/3]}$", INTERVAL_REF, "Find all $p$. Express your answer in interval notation.", 1.0),
        ("$\\boxed{(0.6, 2.5]}$", "(0.6, 2.5]", INTERVAL, 1.0),
        ("$\\boxed{(1.5, 3]}$", "\\left(\\frac{3}{2}, 3\\right]", "Find all $p$.", 1.0),
        ("$\\boxed{(1.0, 3]}$", "(1, 3]", INTERVAL, 1.0),
    ],
    # batch 13 (gemma2-9b, math_00179): "where A > 0 and gcd(...) = 1" fixes the equation's sign and scale.
    "normalized equation": [
        ("**5. FORMAT:**\n\n\n\\[\\boxed{-5x + 7y - 11z - 4 = 0}\\]", PLANE_REF, PLANE, 0.0),
        ("$\\boxed{10x - 14y + 22z + 8 = 0}$", PLANE_REF, PLANE, 0.0),
        ("$\\boxed{5x - 7y + 11z + 4 = 0}$", PLANE_REF, PLANE, 1.0),
        ("$\\boxed{5x - 7y + 11z = -4}$", PLANE_REF, PLANE, 1.0),
        ("$\\boxed{-5x + 7y - 11z - 4 = 0}$", PLANE_REF, None, 1.0),
        ("$\\boxed{-5x + 7y - 11z - 4 = 0}$", PLANE_REF,
         "Find the equation of the plane containing the points $(0,-1,-1),$ $(-4,4,4),$ and $(4,5,1).$", 1.0),
    ],
    # batch 19 (gemma2-9b, math_00236, a dev row): "Compute" answered by the question's sum rewritten in sec and csc
    # is not computed, though equal in value. A chain that ends in the value, a reference that keeps a function, a
    # question that asks for no value and no question at all leave the value to decide.
    "evaluated": [
        ("**5. FORMAT:**\n\nThe final answer, expressed in terms of trigonometric functions, is:\n\n"
         "\\[\\boxed{\\sec^2 10^\\circ + \\csc^2 20^\\circ + \\csc^2 40^\\circ}\\]", "12", TRIG, 0.0),
        ("$\\boxed{\\sec^2 10^\\circ + \\csc^2 20^\\circ + \\csc^2 40^\\circ \\approx 12}$", "12", TRIG, 0.0),
        ("$\\boxed{\\tan 45^\\circ}$", "1", "Compute $\\tan 225^\\circ$.", 0.0),
        ("$\\boxed{\\log_3 9}$", "2", "What is the value of $\\log_3 9$?", 0.0),
        ("$\\boxed{12}$", "12", TRIG, 1.0),
        ("$\\boxed{\\sec^2 10^\\circ + \\csc^2 20^\\circ + \\csc^2 40^\\circ = 12}$", "12", TRIG, 1.0),
        ("$\\boxed{\\log_2 64 = 6}$", "6", "Evaluate $\\log_2 64$.", 1.0),
        ("$\\boxed{\\sec^2 10^\\circ + \\csc^2 20^\\circ + \\csc^2 40^\\circ}$", "12", None, 1.0),
        ("$\\boxed{2\\sin 10^\\circ}$", "2 \\sin 10^\\circ", "Find $\\sin 10^\\circ + \\sin 10^\\circ$.", 1.0),
    ],
    # batch 13 (gemma2-2b, math_00157) and batch 15 (gemma2-2b openmath, math_00047): the asked expression labels
    # the value as `x =` does. Not another expression, one the question only mentions, nor without the question.
    "asked expression": [
        ("**5. FORMAT:**\n\n$\\boxed{a + b + c = \\frac{6}{5}}$ \n\n\n\nLet me know if you'd like to explore other "
         "challenging mathematical problems!", "\\frac65", ROOTS, 1.0),
        ("**Answer:**  *a + b + c = 5*", "5", ASYMPTOTES, 1.0),
        ("$\\boxed{a + b + c = 7 + (-2) + 0 = 5}$", "5", ASYMPTOTES, 1.0),  # a chain's last side: 1 before too
        ("$\\boxed{a+b+c = 5}$", "5", "What is the value of $a + b + c$?", 1.0),
        ("$\\boxed{a + b = \\frac{6}{5}}$", "\\frac65", ROOTS, 0.0),
        ("$\\boxed{a + b + c = 7}$", "5", ASYMPTOTES, 0.0),
        ("$\\boxed{a + b + c = \\frac{6}{5}}$", "\\frac65", None, 0.0),
        ("$\\boxed{a + b + c = 5}$", "5", "The roots $a,b,c$ have sum $a+b+c$. Find $abc$.", 0.0),
    ],
}


@pytest.mark.parametrize(("response", "reference", "prompt", "reward"),
                         [case for cases in CASES.values() for case in cases])
def test_the_form_the_question_asks_for(response, reference, prompt, reward):
    assert score(response, reference, prompt) == reward


# batch 26 (Phi-3-mini, a dev false accept): "Expand ..." answered with like terms left apart ("+ 6x^6 ... + 3x^6"):
# equal in value, but the expansion is not finished. A combined answer passes; without "Expand", or where the
# reference keeps like terms apart, the value decides.
EXPAND = "Expand $(2x^5 + 3x^2)(x^4 - 4x^2 + 3x - 8)$."
EXPANDED = "2x^9 - 8x^7 + 9x^6 - 16x^5 - 12x^4 + 9x^3 - 24x^2"


@pytest.mark.parametrize(
    ("response", "reference", "prompt", "reward"),
    [
        ("Simplifying each term:\n\n$= 2x^9 - 8x^7 + 6x^6 - 16x^5 + 3x^6 - 12x^4 + 9x^3 - 24x^2$\n\n", EXPANDED, EXPAND,
         0.0),
        ("The answer is $x^2 + x + x + 1$.", "x^2+2x+1", "Expand $(x+1)^2$.", 0.0),
        ("So the answer is $" + EXPANDED + "$.", EXPANDED, EXPAND, 1.0),
        ("The answer is $x^2 + 2x + 1$.", "x^2+2x+1", "Expand $(x+1)^2$.", 1.0),
        ("So the answer is $2x^9 - 8x^7 + 6x^6 - 16x^5 + 3x^6 - 12x^4 + 9x^3 - 24x^2$.", EXPANDED,
         "Simplify $(2x^5 + 3x^2)(x^4 - 4x^2 + 3x - 8)$.", 1.0),
    ],
)
def test_expand_asks_for_like_terms_combined(response, reference, prompt, reward):
    assert score(response, reference, prompt) == reward


# batch 59 (openmath gemma2-2b math_00192, a dev false accept): "Find the length of median $\overline{QM}$" answered
# `\boxed{QM = \sqrt{34^2 - (32/2)^2}}` (reference 30): equal in value, but the powers under the radical are left
# uncomputed. Computed, it passes; without a value asked, or where the reference keeps such a root, the value
# decides. A root of a plain number left standing (`\sqrt{900}`) has not been taken either: batch 56's held-out
# false accept made any radical left in a value asked for a radical-free reference unevaluated (merged beside this
# rule; `tests/test_math_read_heldout_forms2.py`).
MEDIAN = "Problem: In $\\triangle PQR$, we have $PQ = QR = 34$ and $PR = 32$.  Find the length of median $\\overline{QM}$."


@pytest.mark.parametrize(("response", "reference", "prompt", "reward"), [
    ("$\\boxed{QM = \\sqrt{34^2 - (32/2)^2}} $", "30", MEDIAN, 0.0),
    ("$\\boxed{\\sqrt{3^{2} + 4^2}}$", "5", "What is the length of the hypotenuse?", 0.0),
    ("$\\boxed{QM = \\sqrt{34^2 - 16^2} = \\sqrt{900} = 30}$", "30", MEDIAN, 1.0),
    ("$\\boxed{QM = \\sqrt{900}}$", "30", MEDIAN, 0.0),
    ("$\\boxed{\\sqrt{34^2 - 16^2}}$", "30", "Write the median's length as a root.", 1.0),
    ("$\\boxed{\\sqrt{2^2 + 1}}$", "\\sqrt{2^2 + 1}", "Find the distance.", 1.0),
    ("$\\boxed{2\\sqrt{x^2 + 1}}$", "2\\sqrt{x^2 + 1}", "Find the length in terms of $x$.", 1.0),
])
def test_a_value_asked_is_not_a_root_of_uncomputed_powers(response, reference, prompt, reward):
    assert score(response, reference, prompt) == reward
