"""A generated math-grading corpus: (category, reference, response, label) built from value families.

How it is built (nothing here was tuned to the verifier's output): every family is one mathematical
value written several ways (the spellings are the standard alternatives a textbook or a model uses:
`\\frac34`, `3/4`, `0.75`; `x > 2`, `2 < x`, `(2, \\infty)`; ...). Equivalent pairs are every
(reference spelling, answer spelling) pair inside a family; non-equivalent pairs take the answer
spellings of the family's designated near miss (a different value of the same shape: `(2, 1)` for
`(1, 2)`, `x < 5` for `x > 5`). Each answer is put into a response through one of several answer
templates (boxed, "The answer is", Minerva, a closing sentence, a last display equation), chosen by
position so every template meets every category. Extraction cases add responses whose only number sits
in the middle of the reasoning, hedges and retractions (label 0 whatever the value).
"""

from __future__ import annotations

from dataclasses import dataclass

# category -> list of (spellings of one value, spellings of its near miss)
FAMILIES: dict[str, list[tuple[list[str], list[str]]]] = {
    "integers": [
        (["42", "42.0", "+42"], ["24", "-42"]),
        (["1234567", "1,234,567", "1\\,234\\,567", "1{,}234{,}567", "1,\\!234,\\!567"], ["1234568", "1,234,576"]),
        (["1000", "1 000", "1,000"], ["100", "10000"]),
    ],
    "fractions": [
        (["\\frac{3}{4}", "\\dfrac{3}{4}", "\\frac34", "3/4", "\\tfrac{3}{4}", "\\frac{6}{8}"], ["\\frac{4}{3}", "\\frac{3}{5}"]),
        (["\\frac{5}{12}", "\\frac5{12}", "5/12"], ["\\frac{12}{5}", "\\frac{5}{13}"]),
        (["-\\frac{1}{3}", "\\frac{-1}{3}", "-1/3"], ["\\frac{1}{3}", "-3"]),
    ],
    "decimals": [
        (["0.5", "\\frac{1}{2}", "\\frac12", "1/2"], ["0.05", "5"]),
        (["2.25", "\\frac{9}{4}", "2\\frac{1}{4}"], ["2.52", "\\frac{4}{9}"]),
    ],
    "radicals": [
        (["2\\sqrt{2}", "\\sqrt{8}", "\\sqrt 8", "2^{3/2}"], ["\\sqrt{2}", "4\\sqrt{2}"]),
        (["\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}", "\\sqrt{3}/2"], ["\\frac{\\sqrt{2}}{2}", "\\sqrt{3}"]),
    ],
    "pi": [
        (["\\frac{\\pi}{2}", "\\pi/2", "\\frac{1}{2}\\pi"], ["2\\pi", "\\frac{\\pi}{3}"]),
        (["4\\pi", "4 \\pi"], ["4", "\\pi^4"]),
    ],
    "percent": [
        (["28\\%", "28", "28 percent"], ["29\\%", "2.8"]),
    ],
    "scientific": [
        (["6.02\\times 10^{23}", "6.02 \\cdot 10^{23}", "6.02e23"], ["6.02\\times 10^{22}", "6.2e23"]),
    ],
    "factorials": [
        (["120", "5!"], ["5", "24"]),
        (["720", "6!", "3!\\cdot 5!"], ["6", "120"]),
    ],
    "inequalities": [
        (["x \\geq 5", "x >= 5", "5 \\leq x", "-x \\leq -5", "x \\ge 5", "[5, \\infty)"], ["x > 5", "x \\leq 5"]),
        (["x < \\frac{1}{2}", "x < 0.5", "\\frac{1}{2} > x", "-x > -\\frac12", "(-\\infty, \\frac{1}{2})"],
         ["x > \\frac{1}{2}", "x \\leq \\frac{1}{2}"]),
    ],
    "intervals": [
        (["[-2, 7]", "x \\in [-2, 7]", "-2 \\le x \\le 7", "-2 \\leq x \\leq 7"], ["(-2, 7)", "[-2, 6]"]),
        (["(2, \\infty)", "(2, +\\infty)", "x > 2", "2 < x"], ["[2, \\infty)", "(-\\infty, 2)"]),
        (["(-\\infty, 3) \\cup (3, \\infty)", "\\mathbb{R} \\setminus \\{3\\}", "x \\neq 3"],
         ["(-\\infty, 3]", "(3, \\infty)"]),
    ],
    "plus_minus": [
        (["1 \\pm \\sqrt{2}", "1+\\sqrt{2}, 1-\\sqrt{2}", "1-\\sqrt{2}, 1+\\sqrt{2}"], ["1+\\sqrt{2}", "1 \\pm \\sqrt{3}"]),
        (["\\pm 3", "3, -3", "-3, 3"], ["3", "\\pm 9"]),
    ],
    "sets_lists": [
        (["\\{1, 2, 3\\}", "3, 2, 1", "\\{3, 1, 2\\}", "1, 2, 3"], ["1, 2", "\\{1, 2, 4\\}"]),
    ],
    "tuples": [
        (["(1, 2)", "\\left(1, 2\\right)", "(1,2)"], ["(2, 1)", "(1, 3)"]),
        (["\\left(\\frac{4}{5}, \\frac{1}{5}\\right)", "(0.8, 0.2)", "(\\frac45, \\frac15)"], ["(\\frac{1}{5}, \\frac{4}{5})"]),
    ],
    "matrices": [
        (["\\begin{pmatrix}2\\\\4\\end{pmatrix}", "2\\begin{pmatrix}1\\\\2\\end{pmatrix}", "\\begin{bmatrix}2\\\\4\\end{bmatrix}"],
         ["\\begin{pmatrix}4\\\\2\\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}"]),
        (["\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{bmatrix}1 & 2\\\\ 3 & 4\\end{bmatrix}"],
         ["\\begin{pmatrix}1&3\\\\2&4\\end{pmatrix}"]),
    ],
    "expressions": [
        (["x^2+2x+1", "(x+1)^2", "1+2x+x^2"], ["x^2+1", "(x-1)^2"]),
        (["\\sin 2x", "2\\sin x\\cos x", "2\\cos x \\sin x"], ["\\sin x", "2\\sin x"]),
        (["\\sec^2 y", "\\tan^2 y + 1"], ["\\tan^2 y"]),
        (["\\frac{x+2}{7}", "\\frac{x}{7}+\\frac{2}{7}"], ["\\frac{x+7}{2}"]),
    ],
    "equations": [
        (["y = 2x + 1", "2x - y + 1 = 0", "y - 1 = 2x"], ["y = 2x - 1", "y = x + 1"]),
        (["x = 3", "3"], ["x = -3", "4"]),
        (["\\frac{x^2}{4} + \\frac{y^2}{3} = 1", "3x^2 + 4y^2 = 12"], ["x^2 + y^2 = 12"]),
    ],
    "complex": [
        (["3+4i", "4i+3", "3 + 4\\mathrm{i}"], ["3-4i", "4+3i"]),
    ],
    "text": [
        (["\\text{Evelyn}", "Evelyn", "evelyn", "\\textbf{Evelyn}"], ["Carla", "Briana"]),
        (["\\text{(C)}", "C", "(C)"], ["B", "(D)"]),
        (["yes", "Yes", "\\text{yes}", "Yes, because 7 is prime"], ["no", "No"]),
    ],
    "units": [
        (["5", "5\\text{ cm}", "5 \\text{ m}", "5 \\mathrm{m/s}"], ["50", "0.5"]),
        (["9.8", "9.8 \\mathrm{m/s^2}", "9.8\\ \\text{m/s}^2"], ["98", "8.9"]),
        (["4\\pi", "4\\pi \\text{ cm}^2", "4\\pi\\text{ square units}"], ["4", "2\\pi"]),
        (["30", "30^\\circ", "30^{\\circ}"], ["60", "-30"]),
    ],
}

# How an answer is stated in a response; every template states it as the final answer.
TEMPLATES = [
    "We work through the problem step by step.\n\nTherefore, the answer is $\\boxed{{{a}}}$.",
    "Some algebra first.\nFinal Answer: The final answer is ${a}$. I hope it is correct.",
    "Let us simplify the expression.\n\nThe answer is ${a}$.",
    "Combining the two cases gives the result.\n\nThus, the value we want is ${a}$.",
    "Putting everything together we obtain\n\\[\n{a}\n\\]",
    "Reasoning goes here.\n\n**Final Answer**\n\\[ \\boxed{{{a}}} \\]",
    "We collect the terms.\n\n**Answer**\n\n$$ {a} $$",
    "Both conditions hold.\n\nResult = ${a}$",
    "On vérifie les deux cas.\n\nDonc, la réponse est ${a}$.",
]

# Responses that state no final answer, or hedge: label 0 whatever the value (the answer spelling is
# the reference itself, so only extraction can make them 0).
NO_ANSWER_TEMPLATES = [
    ("mid_reasoning", "First we find ${a}$, and then we use it to continue with the second part of the problem"),
    ("hedge", "The answer is ${a}$ or ${b}$."),
    ("hedge", "Maybe the answer is ${a}$, but I am not sure."),
    ("retraction", "The answer is $\\boxed{{{a}}}$. Wait, that is wrong: I misread the question."),
]


@dataclass(frozen=True)
class Case:
    category: str
    reference: str
    response: str
    label: bool


def build() -> list[Case]:
    cases: list[Case] = []
    k = 0
    for category, families in FAMILIES.items():
        for spellings, near in families:
            for ref in spellings:
                for ans in spellings:
                    cases.append(Case(category, ref, TEMPLATES[k % len(TEMPLATES)].format(a=ans), True))
                    k += 1
                for ans in near:
                    cases.append(Case(category, ref, TEMPLATES[k % len(TEMPLATES)].format(a=ans), False))
                    k += 1
            first, other = spellings[0], near[0]
            for kind, template in NO_ANSWER_TEMPLATES:
                cases.append(Case(f"extraction:{kind}", first, template.format(a=first, b=other), False))
    return cases
