"""Builds benchmarks/data/math_dev.jsonl: hand-labelled math grading cases wrapped in realistic
chains of thought. Labels follow the policy of issue 2 §4 (a careful human grader's standard):
no final-answer anchor -> false; hedges -> false; think text never counts; retracted answers -> false;
relative tolerance; integers exact. Run: python benchmarks/data/build_math_dev.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

OUT = Path(__file__).with_name("math_dev.jsonl")
# Policy changes after the first labelling, each with its reason (the labels below follow them):
ISSUE_13 = ("relabelled for issue 13: a closing statement (the last math span ending the response, or a conclusion "
            "sentence ending in a number) is a final answer, as in OlmoRL's last-LaTeX fallback")
ISSUE_24_PERCENT = "percent answer vs a plain fraction reference: equal only where the item allows percent (issue 24)"

COT = [
    "Let me set up the problem carefully. We are told the total is 12 more than twice the first part, "
    "so I'll write the equation 2a + 12 = t and work from there.\n\nSubstituting the given values, we get "
    "a = 7 and so t = 26. Now we use this to finish the computation.\n\n",
    "We start by listing what we know. The first quantity is 15 and the second one is 3 less, so 12. "
    "Multiplying, 15 \\cdot 12 = 180, and then we divide by the 4 groups to get 45 per group.\n\n"
    "Checking the units and the constraints again, everything is consistent.\n\n",
    "Step 1: Simplify the expression. Expanding $(a+b)^2 = a^2 + 2ab + b^2$ with $a = 3$, $b = 1$ gives 16.\n"
    "Step 2: Apply the condition from the problem. Since $16 - 9 = 7$, the remaining term is fixed.\n"
    "Step 3: Combine.\n\n",
    "To solve this, I'll consider the cases separately.\n\nCase 1: $n$ is even. Then $n = 2k$ and the sum "
    "is $k(2k+1)$; for $k = 5$ this is 55.\nCase 2: $n$ is odd. Then the sum is 36 for the smallest case.\n\n"
    "Putting both cases together:\n\n",
    "First, compute the discriminant: $b^2 - 4ac = 25 - 24 = 1$. So the roots are real and distinct.\n\n"
    "Next, we evaluate the required expression at the roots, which gives 6 and then 8 after adding 2.\n\n",
    "We can use the formula for the area: $A = \\frac{1}{2}bh$. With base 10 and height 8, that's 40. "
    "But the question asks for something slightly different, so let's continue.\n\n",
]


def wrap(answer: str, style: str, i: int) -> str:
    cot = COT[i % len(COT)]
    if style == "boxed":
        return f"{cot}Therefore, the answer is $\\boxed{{{answer}}}$."
    if style == "boxed_display":
        return f"{cot}So we conclude\n\n\\[\n\\boxed{{{answer}}}\n\\]"
    if style == "final":
        return f"{cot}**Final Answer**\n\n$$\\boxed{{{answer}}}$$"
    if style == "minerva":
        return f"{cot}Final Answer: The final answer is ${answer}$. I hope it is correct."
    if style == "answer_colon":
        return f"{cot}Answer: ${answer}$"
    if style == "the_answer_is":
        return f"{cot}Thus the answer is ${answer}$."
    if style == "hash":
        return f"{cot}#### {answer}"
    if style == "tag":
        return f"<think>\n{cot}</think>\n<answer>{answer}</answer>"
    if style == "bold":
        return f"{cot}**Answer: ${answer}$**"
    if style == "fbox":
        return f"{cot}Hence $\\fbox{{{answer}}}$."
    raise ValueError(style)


STYLES = ["boxed", "final", "minerva", "answer_colon", "the_answer_is", "boxed_display", "tag", "bold"]

# (category, answer as the model writes it, ground truth, label, note)
CASES: list[tuple[str, str, str, bool, str]] = [
    # --- plain integers / anchors
    ("integer", "42", "42", True, ""), ("integer", "41", "42", False, ""),
    ("integer", "-7", "-7", True, ""), ("integer", "7", "-7", False, "sign"),
    ("integer", "0", "0", True, ""), ("integer", "100", "\\boxed{100}", True, "boxed reference"),
    ("integer", "17", "$17$", True, "dollar-delimited reference"), ("integer", "17.", "17", True, ""),
    ("integer", "2024", "2024", True, ""), ("integer", "2025", "2024", False, ""),
    ("integer", "123456789012345678901", "123456789012345678901", True, "big integer"),
    ("integer", "123456789012345678902", "123456789012345678901", False, "big integer off by one"),
    ("integer", "3.0", "3", True, ""), ("integer", "2.9999999", "3", False, "integer needs exact"),
    ("integer", "1.0000001", "1", False, "integer needs exact"),
    ("integer", "12", "12.", True, "reference with trailing period"),
    # --- thousands separators
    ("thousands", "1,000,000", "1000000", True, ""), ("thousands", "1{,}000", "1000", True, ""),
    ("thousands", "1\\,000\\,000", "1000000", True, "thin-space grouping"), ("thousands", "1 234", "1234", True, "space grouping"),
    ("thousands", "1\\,234", "1234", True, ""), ("thousands", "12,345", "12345", True, ""),
    ("thousands", "12,346", "12345", False, ""), ("thousands", "1000000", "1,000,000", True, ""),
    ("thousands", "1 000 000", "10^6", True, ""), ("thousands", "1,234.5", "1234.5", True, ""),
    ("thousands", "1 235", "1234", False, ""),
    # --- fractions
    ("fractions", "\\frac{1}{2}", "\\frac12", True, ""), ("fractions", "\\dfrac{3}{4}", "3/4", True, ""),
    ("fractions", "\\tfrac34", "0.75", True, ""), ("fractions", "6/8", "\\frac{3}{4}", True, "unsimplified"),
    ("fractions", "\\frac{2}{3}", "\\frac{3}{2}", False, "inverted"), ("fractions", "-\\frac{5}{7}", "\\frac{-5}{7}", True, ""),
    ("fractions", "\\frac{5}{7}", "-\\frac{5}{7}", False, "sign"), ("fractions", "2\\frac{1}{2}", "\\frac{5}{2}", True, "mixed number"),
    ("fractions", "\\frac{10}{4}", "2.5", True, ""), ("fractions", "\\frac{1}{3}", "\\frac{1}{4}", False, ""),
    ("fractions", "\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt3}{2}", True, ""), ("fractions", "7/3", "\\dfrac{7}{3}", True, ""),
    # --- decimals and repeating decimals
    ("decimals", "0.5", "\\frac{1}{2}", True, ""), ("decimals", "0.33", "\\frac{1}{3}", False, "0.33 is not 1/3"),
    ("decimals", "0.3333333", "\\frac{1}{3}", True, "within 1e-6 relative"), ("decimals", "0.\\overline{3}", "\\frac{1}{3}", True, "repeating"),
    ("decimals", "0.1\\overline{6}", "\\frac{1}{6}", True, "repeating"), ("decimals", "0.142857142857...", "\\frac17", True, "ellipsis"),
    ("decimals", "3.14", "3.14", True, "rounded reference"), ("decimals", "3.15", "3.14", False, ""),
    ("decimals", "2.50", "2.5", True, ""), ("decimals", ".75", "0.75", True, ""),
    ("decimals", "0.667", "\\frac{2}{3}", False, "too coarse"), ("decimals", "0.6666667", "\\frac{2}{3}", True, ""),
    ("decimals", "1.4142136", "\\sqrt{2}", True, ""), ("decimals", "1.41", "\\sqrt{2}", False, "too coarse"),
    ("decimals", "12.5", "12.50", True, ""), ("decimals", "0.05", "0.5", False, ""),
    # --- numeric policy: relative tolerance, tiny values
    ("numeric_policy", "\\frac{1}{3^{80}}", "\\frac{1}{3^{79}}", False, "tiny values differ relatively"),
    ("numeric_policy", "9.1\\times 10^{-31}", "9.1e-30", False, "absolute tolerance would pass"),
    ("numeric_policy", "9.1\\times 10^{-31}", "9.1e-31", True, ""),
    ("numeric_policy", "1.6 \\times 10^{-19}", "1.6\\times10^{-19}", True, ""),
    ("numeric_policy", "0.000001", "0.000002", False, "absolute 1e-6 would pass"),
    ("numeric_policy", "3^{-80}", "\\frac{1}{3^{80}}", True, ""),
    ("numeric_policy", "1000001", "1000000", False, "integer exact"),
    ("numeric_policy", "2^{64}", "18446744073709551616", True, ""),
    ("numeric_policy", "18446744073709551617", "2^{64}", False, ""),
    ("numeric_policy", "0.2857143", "\\frac{2}{7}", True, ""),
    # --- percent
    ("percent", "50\\%", "50", True, "percent as unit"), ("percent", "50", "50\\%", True, ""),
    ("percent", "25\\%", "0.25", False, ISSUE_24_PERCENT), ("percent", "40\\%", "50\\%", False, ""),
    ("percent", "12.5\\%", "12.5", True, ""), ("percent", "30 percent", "30\\%", True, ""),
    # --- scientific notation
    ("scientific", "6.02\\times 10^{23}", "6.02e23", True, ""), ("scientific", "6.02 \\cdot 10^{23}", "6.02\\times10^{23}", True, ""),
    ("scientific", "6.02e23", "602000000000000000000000", True, ""), ("scientific", "6.03\\times 10^{23}", "6.02e23", False, ""),
    ("scientific", "3 \\times 10^{8}", "300000000", True, ""), ("scientific", "3 \\times 10^{9}", "300000000", False, ""),
    ("scientific", "1.5\\times10^{-3}", "0.0015", True, ""),
    # --- radicals
    ("radicals", "2\\sqrt{2}", "\\sqrt{8}", True, "unsimplified radical"), ("radicals", "\\sqrt{12}", "2\\sqrt{3}", True, ""),
    ("radicals", "\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}", True, ""), ("radicals", "3\\sqrt{2}", "2\\sqrt{3}", False, ""),
    ("radicals", "\\sqrt{2}+\\sqrt{3}", "\\sqrt{3}+\\sqrt{2}", True, ""), ("radicals", "\\sqrt[3]{8}", "2", True, ""),
    ("radicals", "\\sqrt{5+2\\sqrt{6}}", "\\sqrt{2}+\\sqrt{3}", True, "nested radical"), ("radicals", "4\\sqrt{2}", "\\sqrt{32}", True, ""),
    ("radicals", "\\sqrt{7}", "\\sqrt{17}", False, ""),
    # --- pi and e
    ("pi_e", "\\frac{\\pi}{2}", "\\pi/2", True, ""), ("pi_e", "2\\pi", "\\pi", False, ""),
    ("pi_e", "\\mathrm{e}^{2}", "e^2", True, ""), ("pi_e", "\\exp(2)", "e^2", True, ""),
    ("pi_e", "π/4", "\\frac{\\pi}{4}", True, "unicode pi"), ("pi_e", "3.1415927", "\\pi", True, ""),
    ("pi_e", "3.14", "\\pi", False, "too coarse"), ("pi_e", "16\\pi", "16\\pi", True, ""),
    ("pi_e", "\\frac{4}{3}\\pi r^3", "\\frac{4\\pi r^3}{3}", True, ""), ("pi_e", "\\ln 2", "\\ln 2", True, ""),
    ("pi_e", "e^{-1}", "\\frac{1}{e}", True, ""), ("pi_e", "100\\pi", "10\\pi", False, ""),
    # --- complex numbers
    ("complex", "3+4i", "3+4i", True, ""), ("complex", "4i+3", "3+4i", True, ""),
    ("complex", "3+4\\mathrm{i}", "3+4i", True, ""), ("complex", "3-4i", "3+4i", False, ""),
    ("complex", "5e^{i\\pi/3}", "\\frac{5}{2}+\\frac{5\\sqrt{3}}{2}i", True, "exponential form"),
    ("complex", "5\\left(\\cos\\frac{\\pi}{3}+i\\sin\\frac{\\pi}{3}\\right)", "\\frac{5}{2}+\\frac{5\\sqrt{3}}{2}i", True, "polar form"),
    ("complex", "2e^{i\\pi/2}", "2i", True, ""), ("complex", "e^{i\\pi}", "-1", True, ""),
    ("complex", "\\sqrt{2}e^{i\\pi/4}", "1+i", True, ""), ("complex", "\\sqrt{2}e^{-i\\pi/4}", "1+i", False, "conjugate"),
    ("complex", "\\frac{1}{2}-\\frac{1}{2}i", "\\frac{1-i}{2}", True, ""), ("complex", "i", "-i", False, ""),
    ("complex", "2\\,\\mathrm{cis}(\\pi/2)", "2i", True, "cis"),
    # --- equations
    ("equations", "x = 3", "3", True, ""), ("equations", "3", "x=3", True, ""),
    ("equations", "x = 4", "3", False, ""), ("equations", "y = 2x + 1", "y=2x+1", True, ""),
    ("equations", "2x - y + 1 = 0", "y = 2x + 1", True, "same line"), ("equations", "y = 2x - 1", "y = 2x + 1", False, ""),
    ("equations", "x^2 + y^2 - 4 = 0", "x^2+y^2=4", True, "same circle"),
    ("equations", "(x-1)^2 + y^2 = 4", "x^2+y^2=4", False, "different circle"),
    ("equations", "y = -\\frac{1}{2}x + 3", "x + 2y = 6", True, ""), ("equations", "k = 5", "5", True, ""),
    ("equations", "x = \\frac{12}{4} = 3", "3", True, "chain of equalities"), ("equations", "4x + 2y = 12", "y = 6 - 2x", True, ""),
    # --- solution sets
    ("solution_sets", "x = 2, x = 3", "2, 3", True, ""), ("solution_sets", "3, 2", "2,3", True, "any order"),
    ("solution_sets", "\\{-1, 1\\}", "\\pm 1", True, ""), ("solution_sets", "2 \\pm \\sqrt{3}", "2+\\sqrt3, 2-\\sqrt3", True, ""),
    ("solution_sets", "2+\\sqrt{3}", "2 \\pm \\sqrt3", False, "only one root"), ("solution_sets", "x=1 \\text{ or } x=-4", "1, -4", True, "or-joined roots"),
    ("solution_sets", "1, 2, 3", "1, 2", False, "extra element"), ("solution_sets", "-4, 1", "\\{1,-4\\}", True, ""),
    ("solution_sets", "\\frac{-1\\pm\\sqrt{5}}{2}", "\\frac{-1+\\sqrt5}{2}, \\frac{-1-\\sqrt5}{2}", True, "pm inside fraction"),
    ("solution_sets", "1, 2", "1, 3", False, ""), ("solution_sets", "x = \\pm 3", "3, -3", True, ""),
    # --- intervals
    ("intervals", "[0, 1)", "[0,1)", True, ""), ("intervals", "(0, 1]", "[0,1)", False, "closedness"),
    ("intervals", "(-\\infty, 2] \\cup (3, \\infty)", "(-\\infty,2]\\cup(3,\\infty)", True, ""),
    ("intervals", "(3, \\infty) \\cup (-\\infty, 2]", "(-\\infty,2]\\cup(3,\\infty)", True, "union order"),
    ("intervals", "\\mathbb{R}", "(-\\infty, \\infty)", True, ""), ("intervals", "\\text{all real numbers}", "(-\\infty,\\infty)", True, ""),
    ("intervals", "x > 2", "(2, \\infty)", True, "inequality"), ("intervals", "x \\geq 2", "(2, \\infty)", False, ""),
    ("intervals", "-1 < x \\le 4", "(-1, 4]", True, ""), ("intervals", "x \\in [1, 5]", "[1,5]", True, ""),
    ("intervals", "[1, 5]", "(1, 5)", False, ""), ("intervals", "(-\\infty, 0)", "(-\\infty, 0]", False, ""),
    # --- tuples / points
    ("tuples", "(1, 2)", "(1,2)", True, ""), ("tuples", "(2, 1)", "(1,2)", False, "ordered"),
    ("tuples", "(3, -1, 2)", "(3,-1,2)", True, ""), ("tuples", "\\left(\\frac{1}{2}, 3\\right)", "(0.5, 3)", True, ""),
    ("tuples", "(1, 2, 3)", "(1,2)", False, ""), ("tuples", "(-2, 5)", "(-2,5)", True, ""),
    ("tuples", "(\\sqrt{2}, \\pi)", "(\\sqrt2,\\pi)", True, ""),
    # --- matrices
    ("matrices", "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", True, ""),
    ("matrices", "\\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}", "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", True, "bmatrix"),
    ("matrices", "\\begin{pmatrix} 1 & 3 \\\\ 2 & 4 \\end{pmatrix}", "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", False, "transposed"),
    ("matrices", "\\begin{pmatrix} 0.5 \\\\ -1 \\end{pmatrix}", "\\begin{pmatrix}\\frac12\\\\-1\\end{pmatrix}", True, ""),
    ("matrices", "\\left(\\begin{array}{cc} 2 & 0 \\\\ 0 & 2 \\end{array}\\right)", "\\begin{pmatrix}2&0\\\\0&2\\end{pmatrix}", True, "array"),
    ("matrices", "\\begin{pmatrix} 2 & 0 \\\\ 0 & 3 \\end{pmatrix}", "\\begin{pmatrix}2&0\\\\0&2\\end{pmatrix}", False, ""),
    # --- units, degrees, currency
    ("units", "5 \\text{ cm}", "5", True, ""), ("units", "5\\text{ cm}^2", "5", True, ""),
    ("units", "30^\\circ", "30", True, "degrees"), ("units", "30^{\\circ}", "30^\\circ", True, ""),
    ("units", "\\$5", "5", True, "currency"), ("units", "\\$5.00", "5", True, ""),
    ("units", "18 \\text{ dollars}", "\\$18", True, ""), ("units", "45 \\text{ mph}", "45", True, ""),
    ("units", "6 \\text{ cm}", "5", False, ""), ("units", "12 \\text{ inches}", "12", True, ""),
    ("units", "40°", "40", True, "unicode degree"), ("units", "60 \\text{ minutes}", "60", True, ""),
    # --- text answers
    ("text", "\\text{Monday}", "Monday", True, ""), ("text", "Tuesday", "Monday", False, ""),
    ("text", "\\text{blue}", "blue", True, ""), ("text", "\\text{Evelyn}", "\\text{Evelyn}", True, ""),
    ("text", "\\text{even}", "odd", False, ""), ("text", "\\text{the circle}", "circle", True, ""),
    # --- multiple choice
    ("multiple_choice", "B", "B", True, ""), ("multiple_choice", "(B)", "B", True, ""),
    ("multiple_choice", "\\textbf{(B)}\\ 12", "B", True, ""), ("multiple_choice", "C", "B", False, ""),
    ("multiple_choice", "\\text{(D)}", "(D)", True, ""), ("multiple_choice", "(A) 7", "A", True, ""),
    ("multiple_choice", "E", "\\textbf{(E)}", True, ""), ("multiple_choice", "(C)", "\\text{(B)}", False, ""),
    # --- yes/no
    ("yes_no", "\\text{Yes}", "yes", True, ""), ("yes_no", "No", "yes", False, ""),
    ("yes_no", "\\text{True}", "True", True, ""), ("yes_no", "false", "False", True, ""),
    ("yes_no", "yes", "no", False, ""),
    # --- unicode minus and dashes
    ("unicode_minus", "−5", "-5", True, "U+2212"), ("unicode_minus", "–3", "-3", True, "en dash"),
    ("unicode_minus", "－2", "-2", True, "full-width"), ("unicode_minus", "−5", "5", False, ""),
    ("unicode_minus", "x = −\\frac{1}{2}", "-\\frac12", True, ""), ("unicode_minus", "１２", "12", True, "full-width digits"),
    # --- expressions
    ("expressions", "x^2 + 2x + 1", "(x+1)^2", True, "expanded vs factored"), ("expressions", "(x-2)(x+3)", "x^2+x-6", True, ""),
    ("expressions", "(x-2)(x-3)", "x^2+x-6", False, ""), ("expressions", "2\\sin x \\cos x", "\\sin 2x", True, "trig identity"),
    ("expressions", "1 - 2\\sin^2 x", "\\cos 2x", True, ""), ("expressions", "\\sin^2 x", "\\cos^2 x", False, ""),
    ("expressions", "\\frac{x+1}{x}", "1 + \\frac{1}{x}", True, ""), ("expressions", "3a + 2b", "2b + 3a", True, ""),
    ("expressions", "3a + 2b", "3b + 2a", False, ""), ("expressions", "\\frac{n(n+1)}{2}", "\\frac{n^2+n}{2}", True, ""),
    ("expressions", "n^2", "n^3", False, ""), ("expressions", "\\log_2 8", "3", True, ""),
    # --- prefixes / delimiters / punctuation
    ("prefixes", "f(x) = 3x^2 - 2", "3x^2-2", True, "f(x)= prefix"), ("prefixes", "p(x) = x^3 - x", "x^3-x", True, ""),
    ("prefixes", "g(x)=2x", "3x", False, ""), ("prefixes", "\\left( 3, 4 \\right)", "(3,4)", True, "left/right"),
    ("prefixes", "\\displaystyle \\frac{7}{2}", "3.5", True, ""), ("prefixes", "a = 5", "5", True, ""),
    ("prefixes", "AB = 13", "13", True, "segment label"), ("prefixes", "m\\angle A = 40^\\circ", "40", True, ""),
]

# Whole responses where the anchor itself is the point (category, response, gt, label, note).
RAW: list[tuple[str, str, str, bool, str]] = [
    ("no_anchor", COT[0] + "Adding everything up we get 26 in total.", "26", False, "number only in reasoning"),
    ("no_anchor", COT[1] + "So each group has 45 items.", "45", True, ISSUE_13),
    ("no_anchor", "The sum is $3 + 4 = 7$, and multiplying by 2 gives $14$.", "14", True, ISSUE_13),
    ("no_anchor", COT[2] + "Let me now compute the final value. We have $7 \\times 3 = 21$, so", "21", False, "truncated"),
    ("no_anchor", "We need $x$ such that $2x = 10$. Dividing both sides by 2, $x = 5$.", "5", True, ISSUE_13),
    ("no_anchor", COT[3] + "which is 91.", "91", False, ""),
    ("no_anchor", "42", "42", True, "bare answer is the whole response"),
    ("no_anchor", "$\\frac{3}{4}$", "0.75", True, "bare answer"),
    ("no_anchor", COT[4] + "Thus the roots give 6 and 8, and their product is 48.", "48", True, ISSUE_13),
    ("no_anchor", "Let's think. 12 apples minus 5 is 7 apples.", "7", False, ""),
    ("think", "<think>The answer is 12.</think>", "12", False, "answer only inside think"),
    ("think", "<think>So the answer is \\boxed{12}.</think>\nI computed the total above.", "12", False, ""),
    ("think", "<think>Hmm, 5 + 7 = 12. The answer is \\boxed{12}.", "12", False, "unterminated think"),
    ("think", "<think>Maybe 11? The answer is \\boxed{11}. No: 5+7=12.</think>\nThe answer is $\\boxed{12}$.", "12", True, ""),
    ("think", "<think>Maybe 11? The answer is \\boxed{12}.</think>\nThe answer is $\\boxed{11}$.", "12", False, ""),
    ("think", "<think>" + COT[0] + "</think>\n\nFinal answer: 26", "26", True, ""),
    ("think", "<think>" + COT[1] + "I think it's 45</think>\n\nSo each group holds 45 items.", "45", True, ISSUE_13),
    ("retraction", COT[0] + "So the answer is \\boxed{26}.\n\nWait, that's wrong: I misread the problem, the total is smaller.", "26", False, "retracted"),
    ("retraction", COT[1] + "The answer is 45. Hmm, no, this is incorrect since the groups overlap.", "45", False, ""),
    ("retraction", COT[2] + "So the answer is \\boxed{7}. Wait, let me double-check: 16 - 9 = 7. Yes, that's correct.", "7", True, "confirmed, not retracted"),
    ("retraction", COT[3] + "The answer is \\boxed{55}. Actually, that's wrong; the odd case is smaller, so the answer is \\boxed{36}.", "36", True, "corrected answer counts"),
    ("retraction", COT[3] + "The answer is \\boxed{55}. Actually, that's wrong; the odd case is smaller, so the answer is \\boxed{36}.", "55", False, "corrected away"),
    ("retraction", COT[4] + "Answer: 8\n\nHold on, I made a mistake in the discriminant.", "8", False, ""),
    ("retraction", COT[5] + "The answer is $40$. Scratch that, the triangle is isosceles.", "40", False, ""),
    ("hedge", COT[4] + "The answer is 4 or 6.", "4", False, "hedge"),
    ("hedge", COT[4] + "The answer is $\\boxed{A}$ or $\\boxed{C}$.", "A", False, "two boxed letters"),
    ("hedge", COT[4] + "Possible answers: $\\boxed{6}$, $\\boxed{8}$, $\\boxed{10}$.", "8", False, "list of boxed candidates"),
    ("hedge", COT[4] + "So the roots are $\\boxed{6}$ and $\\boxed{8}$.", "6, 8", True, "two boxes for a two-part reference"),
    ("hedge", COT[4] + "The answer is either 6 or 8.", "6", False, ""),
    ("hedge", COT[4] + "Final answer: $\\boxed{8}$ (or possibly $\\boxed{6}$).", "8", False, ""),
    ("hedge", COT[2] + "Thus the answer is $\\boxed{7}$.\n\nTo summarize: \\boxed{7}", "7", True, "same answer repeated"),
    ("anchors", COT[1] + "#### 45", "45", True, "gsm8k anchor"),
    ("anchors", COT[1] + "**Final answer:** 45 items", "45", True, "bold answer"),
    ("anchors", COT[1] + "The final answer is 45.", "45", True, ""),
    ("anchors", COT[1] + "<answer>45</answer>", "45", True, ""),
    ("anchors", COT[1] + "Final Answer: The final answer is 45. I hope it is correct.", "45", True, "minerva"),
    ("anchors", COT[1] + "The answer is \\boxed 45.", "45", True, "boxed without braces"),
    ("anchors", COT[1] + "$\\boxed{\\boxed{45}}$", "45", True, "double box"),
    ("anchors", COT[1] + "Answer: 44", "45", False, ""),
    ("anchors", COT[0] + "The answer is \\boxed{26}.\n\nFor completeness, the other part equals 7.", "26", True, "trailing remark"),
    ("anchors", "The answer is \\boxed{7}.\n\nLet me verify: 3 + 4 = 7. " + COT[2], "7", True, "verification after answer"),
    ("anchors", COT[5] + "\\[\\boxed{x = 40}\\]", "40", True, ""),
    ("anchors", COT[5] + "Therefore, the correct option is (C).", "C", True, ""),
    ("anchors", COT[5] + "Answer: B", "B", True, "letter outside box"),
    ("anchors", COT[5] + "The answer is Monday.", "Monday", True, "text outside box"),
    ("anchors", COT[5] + "**Answer:** (D) 17", "D", True, ""),
    ("anchors", COT[5] + "The answer is $\\$12.50$.", "12.5", True, ""),
    ("anchors", COT[5] + "The answer is 12.50 dollars.", "12.5", True, ""),
    ("anchors", COT[1] + "In conclusion, the answer is: $\\frac{45}{1}$", "45", True, ""),
    ("anchors", COT[0] + "The final answer is $\\boxed{26}$\n\n\n", "26", True, "trailing whitespace"),
]


def adversarial() -> list[tuple[str, str, str, bool, str]]:
    long_ok = COT[0] * 400 + "The answer is $\\boxed{26}$."
    many_boxes = " ".join(f"\\boxed{{{i}}}" for i in range(3000))
    return [
        ("adversarial", "The answer is $\\boxed{10^{10^{10}}}$.", "1", False, "power tower"),
        ("adversarial", "The answer is $\\boxed{10**10**10}$.", "1", False, ""),
        ("adversarial", "The answer is $\\boxed{2^{2^{2^{2^{2^{2}}}}}}$.", "4", False, ""),
        ("adversarial", "The answer is $\\boxed{100000!}$.", "5", False, "huge factorial"),
        ("adversarial", "The answer is $\\boxed{9^{9^{9}}}$.", "9", False, ""),
        ("adversarial", long_ok, "26", True, "long valid response"),
        ("adversarial", "x " * 50_000, "3", False, "100 KB of junk"),
        ("adversarial", many_boxes, "2999", False, "thousands of boxes (list of candidates)"),
        ("adversarial", "Answer: \\boxed{" + "{" * 500 + "1" + "}" * 500 + "}", "1", True, "brace soup around a valid 1"),
        ("adversarial", "The answer is \\boxed{" + "{(" * 300, "1", False, "unbalanced brace soup"),
        ("adversarial", "The answer is \x00\x01\x02 \\boxed{4\x07}.", "4", True, "control chars"),
        ("adversarial", "The answer is $\\boxed{" + "(" * 40 + "1" + ")" * 40 + "}$", "1", True, "deep parens"),
        ("adversarial", "The answer is $\\boxed{e^{10^{8}}}$.", "1", False, ""),
        ("adversarial", "The answer is $\\boxed{\\frac{1}{10^{10^{10}}}}$.", "0", False, ""),
    ]


def rows() -> list[dict]:
    out = []
    for i, (category, answer, gt, label, note) in enumerate(CASES):
        style = STYLES[i % len(STYLES)]
        out.append(dict(category=category, response=wrap(answer, style, i), ground_truth=gt, label=label, note=note))
        # A second phrasing of each case with a different anchor style.
        style2 = STYLES[(i * 3 + 1) % len(STYLES)]
        if style2 != style:
            out.append(dict(category=category, response=wrap(answer, style2, i + 1), ground_truth=gt, label=label,
                            note=note))
    for category, response, gt, label, note in RAW + adversarial():
        out.append(dict(category=category, response=response, ground_truth=gt, label=label, note=note))
    for row in out:
        digest = hashlib.sha256((row["response"] + "|" + row["ground_truth"]).encode()).digest()
        row["split"] = "heldout" if digest[0] % 4 == 0 else "dev"
    return out


if __name__ == "__main__":
    data = rows()
    with OUT.open("w") as f:
        for row in data:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(data)} rows to {OUT}")
