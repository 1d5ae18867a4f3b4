"""The form a question asks for besides the value: "Simplify ..." asks for the value in its simplest form.

An answer equal in value to the reference but with a decimal left under a radical sign (`2\\sqrt{60.5}` for
"Simplify $\\sqrt{242}$", `\\frac{\\sqrt{5.76}}{0.2}` for "Simplify: ...") has not done the simplification asked
for; nor has one that only restates the expression the question quotes (`\\sqrt{242}`, or `\\sqrt{242} \\approx
15.6`, for "Simplify $\\sqrt{242}$"; `\\sqrt{242} = 11\\sqrt{2}` states the simplified form and passes). Without
such a question, or where the reference itself keeps a decimal under a radical or is the quoted expression, the
value decides. Simplest radical form has no radical in a denominator: `\\frac{1}{\\sqrt{3}}` for "Simplify
$\\frac{3}{\\sqrt{27}}$" (reference `\\frac{\\sqrt{3}}{3}`) has not simplified (a reference that keeps one decides
by value).

"Express your answer as a common fraction" asks for a ratio of integers: an answer that leaves a function
unevaluated (`x = 1 + \\log_4(2)` for `\\frac{3}{2}`) has not given it, though its value is right. It, "a mixed
number", "lowest terms", "simplest form" and "Simplify" ask for the fraction reduced: `6\\frac{24}{120}` for "Express
your answer as a mixed number" (reference `6\\frac15`) has not reduced it. Without such words, or where the reference
itself is unreduced, the value decides (`\\frac{26}{221}` for `\\frac{2}{17}`).
"Express your answer in interval notation, reducing any fractions in your answer" asks for fractions: an answer
that gives an endpoint as a decimal (`(0.6, 8/3]` for `\\left(\\frac{3}{5},\\frac{8}{3}\\right]`) has not given
it as one, though its value is right. Without those words, or where the reference itself has a decimal or no
fraction, the value decides.

A question that asks for a value ("Compute", "Evaluate", "Find", "What is", "How many") is not answered by an
expression that still leaves a function unevaluated (`\\sec^2 10^\\circ + \\csc^2 20^\\circ +
\\csc^2 40^\\circ` for 12: the question's own sum rewritten), though its value is right; nor by a count left as
factorials or a binomial coefficient of numbers (`\\binom{31}{28} = \\dfrac{31!}{28!3!}` for "Compute
$\\dbinom{31}{28}$", reference 4495: the computation asked for, not done), nor by a root of numbers whose powers
are left uncomputed under the radical sign (`\\sqrt{34^2 - (32/2)^2}` for "Find the length of median", reference 30).
A chain ends in what it states (`\\log_2 64 = 6`, `\\binom{5}{2} = 10`, `\\sqrt{34^2 - 16^2} = 30` have evaluated),
and a reference that keeps a function, a factorial, a binomial coefficient or such a root decides by value. Any root
is such a function where the reference has none: `(5 + \\sqrt{23.25}) + (5 - \\sqrt{23.25})` for "What is the sum of
the values of $a$ ...?" (reference 10) leaves the two roots unadded, their radicals cancelling only once it is
computed; a reference that keeps a radical decides by value.

"Expand" asks for a sum of terms with like terms combined: `2x^9 - 8x^7 + 6x^6 + 3x^6 - 12x^4` (two terms in
`x^6`) has not finished, though its value is right; a reference that keeps like terms apart decides by value.

An equation asked for "in the form \\[Ax + By + Cz + D = 0\\], where ... $A > 0$ and $\\gcd(...) = 1$" has one right
writing: a multiple of the reference (`-5x + 7y - 11z - 4 = 0` for `5x - 7y + 11z + 4 = 0`, or twice it) is the same
plane but not the form asked. Without such conditions an equation still equals its multiples (`2x + 2y = 2`).
"""

from __future__ import annotations

import math
import re

from olmorl.rewards.math._normalize import matching_brace, normalize_answer
from olmorl.rewards.math._structure import is_simple_lhs, top_level_split
from olmorl.rewards.math._sympy import parse_latex, same_function

_SIMPLIFY_RE = re.compile(r"\bsimplif(?:y|ied)\b|\bsimplest\b", re.IGNORECASE)
_DECIMAL_RADICAND_RE = re.compile(r"\\sqrt(?:\[[^\]]*\])?\{[^{}]*\d\.\d")
_QUOTED_MATH_RE = re.compile(r"\$\$?(.+?)\$\$?|\\\((.+?)\\\)", re.DOTALL)
_APPROXIMATION_RE = re.compile(r"\\approx.*$", re.DOTALL)
_FRACTION_RE = re.compile(r"\\[dt]?frac\s*")
_SLASH_RADICAL_RE = re.compile(r"/\s*(?:\\sqrt|√|\([^()]*(?:\\sqrt|√)[^()]*\))")  # `1/\sqrt{3}`, `1/(2\sqrt{3})`
# "in the form ... where A > 0" / "... gcd(|A|,|B|) = 1": the form fixes the coefficients' sign and scale.
_NORMALIZED_FORM_RE = re.compile(r"\bin the form\b.*?(?:(?<![a-zA-Z])[A-Za-z]\$?\s*>\s*0|\\gcd)",
                                 re.IGNORECASE | re.DOTALL)
_COMMON_FRACTION_RE = re.compile(r"\bcommon fraction\b", re.IGNORECASE)
_REDUCED_ASKED_RE = re.compile(r"\b(?:common fraction|mixed number|lowest terms|simplest (?:form|terms)|reduced "
                               r"fraction|simplif(?:y|ied))\b", re.IGNORECASE)
# "reducing any fractions in your answer": the answer's numbers are to be written as fractions.
_FRACTIONS_ASKED_RE = re.compile(r"\breduc(?:e|ing)\s+(?:any|all)\s+fractions\b", re.IGNORECASE)
_DECIMAL_RE = re.compile(r"(?<![\w.])\d*\.\d+(?![\d.])")  # `0.6`, `.375`, `2.67` (not `8/3.` closing a sentence)
_ANY_FRACTION_RE = re.compile(r"\\[dt]?frac(?![a-zA-Z])|\d\s*/\s*\d")
# A fraction of two integers: `\frac{24}{120}`, `\dfrac{-6}{8}`, `\frac34`, `24/120` (not inside a longer number).
_INTEGER_FRACTION_RE = re.compile(r"\\[dt]?frac\s*(?:\{\s*(-?\d+)\s*\}|(\d))\s*(?:\{\s*(-?\d+)\s*\}|(\d))"
                                  r"|(?<![\d.])(-?\d+)\s*/\s*(\d+)(?![\d.])")
# A function left unevaluated: `\log_4(2)`, `log_4 2`, `\ln 3`, `\sin 30^\circ` (not a letter inside a word).
_FUNCTION_RE = re.compile(r"(?<![a-zA-Z])\\?(?:log|ln|lg|sin|cos|tan|cot|sec|csc|exp)(?![a-zA-Z])")
# A factorial or a binomial coefficient left unevaluated: `31!`, `28!3!`, `(n-1)!`'s closing `)!`, `\binom{31}{28}`,
# `\dbinom`, `{31 \choose 28}` (not `!=`, not LaTeX's `\!` thin space: a digit, brace or parenthesis comes first).
_COMBINATORIAL_RE = re.compile(r"\\[dt]?binom(?![a-zA-Z])|\\choose(?![a-zA-Z])|[\d)}]\s*!(?!=)")
# A radical sign: `\\sqrt{23.25}`, `\\sqrt[3]{8}`, `√23.25`, `sqrt(2)` (not a letter inside a word).
_RADICAL_RE = re.compile(r"\\sqrt(?![a-zA-Z])|√|(?<![a-zA-Z\\])sqrt\s*\(")
# A power of a number left uncomputed under a radical sign: `\sqrt{34^2 - (32/2)^2}`, `\sqrt[3]{2^{6}}` (not
# `\sqrt{x^2 + 1}`: a variable's power is no computation left undone).
_POWER_UNDER_RADICAL_RE = re.compile(r"\\sqrt(?:\[[^\]]*\])?\{[^{}]*\d\s*\^")
_EXPAND_RE = re.compile(r"\bexpand\b", re.IGNORECASE)
# A monomial term: a plain coefficient, then variables with whole-number powers (`6x^6`, `-3x^{2}y`, `12`).
_MONOMIAL_RE = re.compile(r"^\d*(?:\.\d+)?\s*((?:[a-z](?:\^\{?\d+\}?)?\s*)*)$")
_VALUE_ASKED_RE = re.compile(r"\b(?:compute|evaluate|calculate|find|determine|what is|what's|how (?:many|much))\b",
                             re.IGNORECASE)


def math_key(text: str) -> str:
    return re.sub(r"\s+", "", normalize_answer(text))


def _restates(prompt: str, reference: str, answer: str) -> bool:
    """Whether every exact side of the answer is an expression the prompt quotes (approximations after
    `\\approx` state no exact form)."""
    quoted = {math_key(a or b) for a, b in _QUOTED_MATH_RE.findall(prompt)}
    if not quoted or math_key(reference) in quoted:
        return False
    sides = [_APPROXIMATION_RE.sub("", side).strip() for side in top_level_split(answer, ("=",))]
    if len(sides) > 1 and is_simple_lhs(sides[0]):
        sides = sides[1:]  # `x = \sqrt{242}`: the label states nothing
    exact = [side for side in sides if side]
    return bool(exact) and all(math_key(side) in quoted for side in exact)


def _left_unevaluated(text: str) -> bool:
    """Whether the text leaves a function, a factorial, a binomial coefficient or a power under a radical
    unevaluated."""
    return bool(_FUNCTION_RE.search(text) or _COMBINATORIAL_RE.search(text) or _POWER_UNDER_RADICAL_RE.search(text))


def _unevaluated(answer: str) -> bool:
    """Whether the exact form the answer ends in leaves a function, a factorial or a binomial coefficient
    unevaluated (a chain's last side, without an approximation after `\\approx`)."""
    return _left_unevaluated(_APPROXIMATION_RE.sub("", top_level_split(answer, ("=",))[-1]))


def _radical_left(answer: str) -> bool:
    """Whether the exact form the answer ends in keeps a radical sign (a chain's last side; a side that goes on to
    an approximation, `5\\sqrt{2} \\approx 7.1`, has given its decimal too)."""
    last = top_level_split(answer, ("=",))[-1]
    return bool(_RADICAL_RE.search(last)) and "\\approx" not in last and "≈" not in last


def _radical_denominator(text: str) -> bool:
    """Whether a fraction in the text has a radical sign in its denominator."""
    if _SLASH_RADICAL_RE.search(text):
        return True
    for match in _FRACTION_RE.finditer(text):
        if not text.startswith("{", match.end()) or (numerator_end := matching_brace(text, match.end())) < 0:
            continue
        if text.startswith("{", numerator_end + 1) and (end := matching_brace(text, numerator_end + 1)) >= 0:
            denominator = text[numerator_end + 2:end]
            if "\\sqrt" in denominator or "√" in denominator:
                return True
    return False


def _unreduced(text: str) -> bool:
    """Whether a fraction of two integers in the text shares a factor between them (`\\frac{24}{120}`)."""
    for match in _INTEGER_FRACTION_RE.finditer(text):
        numerator = int(match.group(1) or match.group(2) or match.group(5))
        denominator = int(match.group(3) or match.group(4) or match.group(6))
        if numerator and denominator and math.gcd(numerator, denominator) > 1:
            return True
    return False


def _rescaled_equation(reference: str, answer: str) -> bool:
    """Whether the answer equation is a multiple of the reference equation other than itself (the same when the
    value comparison matched them: their `left - right` differ by a constant factor)."""
    ref_sides, ans_sides = top_level_split(reference, ("=",)), top_level_split(answer, ("=",))
    if len(ref_sides) != 2 or len(ans_sides) != 2:
        return False
    try:
        ref_diff = parse_latex(ref_sides[0]) - parse_latex(ref_sides[1])
        ans_diff = parse_latex(ans_sides[0]) - parse_latex(ans_sides[1])
        return not same_function(ref_diff, ans_diff, 1e-9)
    except Exception:  # noqa: BLE001  # a side that does not parse: the value comparison decided
        return False


def _uncombined_terms(text: str) -> bool:
    """Whether a polynomial written as a sum of monomials has two terms in the same power of its variables."""
    terms = [term.strip() for term in top_level_split(text.replace("\\cdot", ""), ("+", "-")) if term.strip()]
    shapes = [_MONOMIAL_RE.match(term) for term in terms]
    if len(terms) < 2 or not all(shapes):
        return False
    powers = [re.sub(r"[\s{}]", "", shape.group(1)) for shape in shapes if shape is not None]
    return len(set(powers)) < len(powers)


def unrequested_form(prompt: str, reference: str, compared: list[str]) -> str | None:
    """The form the prompt asks for that the matched answer, equal in value, does not give ("simplified": a
    decimal under a radical, a radical in a denominator, or only the quoted expression restated; "common
    fraction": a function left unevaluated; "fraction": a decimal where fractions are asked for; "expanded": like
    terms left uncombined; "evaluated": a function, a
    factorial, a binomial coefficient or a power under a radical left unevaluated where a value is asked for; "normalized equation": a
    multiple of the reference equation where the prompt fixes its coefficients' sign or scale), or None."""
    if _NORMALIZED_FORM_RE.search(prompt) and any(_rescaled_equation(reference, answer) for answer in compared):
        return "normalized equation"
    if _COMMON_FRACTION_RE.search(prompt) and not _FUNCTION_RE.search(reference) and any(
            _FUNCTION_RE.search(answer) for answer in compared):
        return "common fraction"
    if _EXPAND_RE.search(prompt) and not _uncombined_terms(reference) and any(
            _uncombined_terms(top_level_split(answer, ("=",))[-1]) for answer in compared):
        return "expanded"
    # A chain's last side is the form it ends in: `\frac{6}{8} = \frac{3}{4}` has reduced.
    if _REDUCED_ASKED_RE.search(prompt) and not _unreduced(reference) and any(
            _unreduced(_APPROXIMATION_RE.sub("", top_level_split(answer, ("=",))[-1])) for answer in compared):
        return "reduced fraction"
    # A decimal where fractions are asked for: `(0.6, 8/3]` for "reducing any fractions" (reference with fractions).
    if _FRACTIONS_ASKED_RE.search(prompt) and _ANY_FRACTION_RE.search(reference) and not _DECIMAL_RE.search(
            reference) and any(_DECIMAL_RE.search(_APPROXIMATION_RE.sub("", top_level_split(answer, ("=",))[-1]))
                                for answer in compared):
        return "fraction"
    if _VALUE_ASKED_RE.search(prompt) and not _left_unevaluated(reference) and any(
            _unevaluated(answer) for answer in compared):
        return "evaluated"
    # A root is a function too: against a reference with none, a radical left standing was never taken (the two
    # roots' sum `(5 + \\sqrt{23.25}) + (5 - \\sqrt{23.25})` for 10: its radicals cancel only once it is computed).
    if _VALUE_ASKED_RE.search(prompt) and not _RADICAL_RE.search(reference) and any(
            _radical_left(answer) for answer in compared):
        return "evaluated"
    if not _SIMPLIFY_RE.search(prompt):
        return None
    if any(_restates(prompt, reference, answer) for answer in compared):
        return "simplified"
    if not _DECIMAL_RADICAND_RE.search(reference) and any(_DECIMAL_RADICAND_RE.search(answer) for answer in compared):
        return "simplified"
    # A chain's last side is the form it ends in: `\frac{3}{\sqrt{27}} = \frac{\sqrt{3}}{3}` has simplified.
    if not _radical_denominator(reference) and any(
            _radical_denominator(top_level_split(answer, ("=",))[-1]) for answer in compared):
        return "simplified"
    return None
