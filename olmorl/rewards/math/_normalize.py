"""Answer-string normalization: from a messy LaTeX/plain-text answer to a canonical LaTeX-ish string.

Everything here is cheap string work (no SymPy), so both references and model answers go through it
before the exact-number fast path or the parser.
"""

from __future__ import annotations

import math
import re
import unicodedata
from functools import lru_cache

from olmorl.rewards.math._time_of_day import canonical_time

_UNICODE = {
    "\u2212": "-", "\u2013": "-", "\u2014": "-", "\u2012": "-", "\u2010": "-", "\u2011": "-", "\ufe63": "-",
    "\uff0d": "-", "\u00d7": r"\times ", "\u22c5": r"\cdot ", "\u00b7": r"\cdot ", "\u03c0": r"\pi ",
    "\u221e": r"\infty ", "\u2264": r"\le ", "\u2265": r"\ge ", "\u2260": r"\ne ", "\u00b0": r"^\circ",
    "\u221a": r"\sqrt ", "\u222a": r"\cup ", "\u2229": r"\cap ", "\u2208": r"\in ", "\u00b1": r"\pm ",
    "\u2205": r"\emptyset ", "\u211d": r"\mathbb{R}", "\u03b8": r"\theta ", "\u2009": " ", "\u202f": " ",
    "\u00a0": " ", "\u2007": " ", "\u2061": "", "\u200b": "",
}
_UNICODE_RE = re.compile("|".join(map(re.escape, _UNICODE)))
# Arabic-Indic, Persian and Devanagari digits (NFKC keeps them) as ASCII digits; the Arabic decimal separator.
_NATIVE_DIGITS = str.maketrans({**{chr(base + k): str(k) for base in (0x0660, 0x06F0, 0x0966) for k in range(10)},
                                "\u066b": "."})
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

# Wrappers whose content is kept as is.
_UNWRAP_RE = re.compile(
    r"\\(?:text|textbf|textit|textrm|texttt|mathrm|mathbf|mathit|mathsf|mbox|operatorname|boldsymbol|bm|"
    r"emph|textup|textnormal|displaystyle|hbox)\s*\{([^{}]*)\}"
)
_DROP_RE = re.compile(
    r"\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big|bigg|Bigg|displaystyle|textstyle|scriptstyle|limits|nolimits)"
    r"(?![a-zA-Z])|\\[!;:>]|\\quad|\\qquad|\\phantom\{[^{}]*\}|\\hspace\{[^{}]*\}|\\mathstrut"
)
_WIDE_SPACE_RE = re.compile(r"(?<!\d)\\[:;>]|\\[:;>](?!\d)")
_DEGREE_RE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree|\^\s*\{\s*\\text\{\s*o\s*\}\s*\}")
# A degree sign inside a trig function is an angle unit, not decoration: `\sin 30^\circ` is sin(pi/6).
_TRIG_RE = re.compile(r"\\(?:sin|cos|tan|cot|sec|csc)(?![a-zA-Z])")
_TRIG_DEGREES_RE = re.compile(
    r"(\\(?:sin|cos|tan|cot|sec|csc)(?:\^\s*\{?-?\d\}?)?\s*)\(?\s*(\d+(?:\.\d+)?)\s*"
    r"(?:\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree)\s*\)?"
)
# `"yes"`, `'Monday'`, ``` ``no'' ```: quotes around a whole answer are not part of it.
_QUOTED_RE = re.compile(r"^(?:\"|“|”|``|`|'|‘|’)([^\"“”`'‘’]+)(?:\"|“|”|''|`|'|‘|’)$")
_CURRENCY_RE = re.compile(r"\\\$|\$|\\euro|€|£|¥|\\pounds|\b(?:USD|EUR|GBP|Rs\.?)\b")
_PERCENT_RE = re.compile(r"\s*(?:\\%|%|\\percent|\bpercent\b|\bper cent\b|\bpct\b)")
_FRAC_SHORT_RE = re.compile(r"\\[dt]?frac\s*(\d)\s*(\d)")
_FRAC_HALF_RE = re.compile(r"\\[dt]?frac\s*(\{[^{}]*\}|\d)\s*(\d)")
_FRAC_BARE_NUM_RE = re.compile(r"\\frac\s*(\d)\s*\{")  # `\frac5{12}`: bare-digit numerator, braced denominator
# `\frac \pi4`, `\frac\pi{6}`, `\frac2\pi` (MATH writes such references): TeX reads an unbraced argument as one token,
# here a Greek-letter symbol; a command that takes arguments (`\sqrt`) is never one.
_GREEK_SYMBOL = r"\\(?:pi|tau|theta|alpha|beta|gamma|delta|phi|omega|lambda|mu|sigma)(?![a-zA-Z])"
_FRAC_SYMBOL_RE = re.compile(rf"\\frac\s*({_GREEK_SYMBOL}|\d|\{{[^{{}}]*\}})\s*({_GREEK_SYMBOL}|\d|\{{[^{{}}]*\}})")
_SQRT_SHORT_RE = re.compile(r"\\sqrt\s*(\d+|[a-zA-Z])")
_DFRAC_RE = re.compile(r"\\[dt]frac(?![a-zA-Z])")
_CONST_E_RE = re.compile(r"\\mathrm\{e\}|\\mathrm e\b|\\operatorname\{e\}")
_CONST_I_RE = re.compile(r"\\mathrm\{i\}|\\mathrm i\b|\\imath")
_LEADING_LABEL_RE = re.compile(
    r"^(?:the\s+)?(?:final\s+)?(?:answer|result|solution|value)s?\s*(?:is|are|:|=)\s*", re.IGNORECASE
)
# "The answer is approximately 49.": a word of approximation before the value states that value (as `\approx` does);
# not "almost" or "nearly" (less than it) nor "at least" (a bound), and the value is then compared as written.
_APPROXIMATELY_RE = re.compile(r"^(?:approximately|approx\.|about|roughly|around)\s+(?=[-+$\\\d.])", re.IGNORECASE)
# `!` right after a digit or a bracket is a factorial (`5!`), never punctuation.
# `7!!` is the double factorial 7*5*3*1 (the parser would read it as (7!)!); up to 300!! is written out.
_DOUBLE_FACTORIAL_RE = re.compile(r"(?<![\w.])(\d{1,3})\s*!!")
_MAX_DOUBLE_FACTORIAL = 300
_TRAILING_PUNCT_RE = re.compile(r"(?:[\s.,;:?]|(?<![\d})\]!])!|\\[,;!]|\\quad|~)+$")
_ELLIPSIS_END_RE = re.compile(r"(?:\.\.\.|\\[lc]?dots|…)\s*$")
_THOUSANDS_THINSPACE_RE = re.compile(r"(?<=\d),\\!\s*(?=\d{3}(?!\d))")  # `11,\! 111` is one number
_PLUS_INFINITY_RE = re.compile(r"(^|[(\[,]\s*)\+\s*\\infty")
_RELATION_RE = re.compile(r">=|<=|!=|\\neq?(?![a-zA-Z])|\\lt(?![a-zA-Z])|\\gt(?![a-zA-Z])|\\leqslant|\\geqslant")
_RELATIONS = {">=": "\\geq ", "<=": "\\leq ", "!=": "\\neq ", "\\ne": "\\neq ", "\\neq": "\\neq ", "\\lt": "<",
              "\\gt": ">", "\\leqslant": "\\leq ", "\\geqslant": "\\geq "}
# "f(x) = 2x for all real x": a quantifier phrase after a function is not part of the value.
_QUANTIFIER_TAIL_RE = re.compile(
    r"\s*,?\s*(?:\\quad\s*)?(?:for\s+(?:all|every|any|each)\b|\\forall\b).*$|"
    r"\s*(?:,|\\quad)\s*(?:\\quad\s*)?(?:for\s+)?[a-z]\s*\\in\s*\\(?:mathbb|Bbb)\s*\{?[RZNQC]\}?\s*$",
    re.IGNORECASE,
)
# "the length is 2\sqrt{2}", "AB is 5": a short label before a mathematical value.
_NAMED_VALUE_RE = re.compile(
    r"^(?:the\s+)?(?:[A-Za-z]+\s+){0,5}?(?:is|are|equals|was)\s+(?=[-+\d\\$(.])", re.IGNORECASE
)

# Unit words dropped after a number ("5 cm", "12\text{ dollars}", a rate "4 in/s", "4 inches/second"); only
# whole words after whitespace, so `5x` or `3\pi` are never touched.
_UNITS = (
    "square units|square feet|square meters|square inches|square centimeters|sq units|cubic units|cubic feet|"
    "cubic meters|cubic centimeters|units|unit|degrees|degree|radians|radian|dollars|dollar|cents|cent|"
    "meters|meter|metres|metre|centimeters|centimeter|millimeters|kilometers|kilometer|km|cm|mm|inches|inch|"
    "in|feet|foot|ft|yards|yard|yd|miles|mile|mi|mph|km/h|kmh|m/s|hours|hour|hrs|hr|minutes|minute|min|"
    "seconds|second|sec|days|day|weeks|week|months|month|years|year|kilograms|kilogram|kg|grams|gram|"
    "pounds|pound|lbs|lb|ounces|ounce|oz|liters|liter|litres|litre|milliliters|ml|gallons|gallon|"
    "people|students|apples|cookies|books|pages|marbles|ways|times|points|items|boxes|cars|eggs|coins|"
    "tickets|pieces|cups|bags|employees|persons|children|trees|games|questions|balls|candies|pencils|"
    "mps|sq ft|cm\\^2|cm\\^3|m\\^2|m\\^3|ft\\^2|in\\^2|units\\^2|cm\\^\\{2\\}|m\\^\\{2\\}|cm\\^\\{3\\}|"
    # one-letter symbols as SI writes them (case-sensitive): after a number `3G` and `2M` are a coefficient and a
    # variable, not grams and metres
    "(?-i:[hsgml]|L)"
)
_UNIT_TAIL_RE = re.compile(
    rf"(?:(?<=[\d}}.])|(?<=\\pi))\s*(?:\\\s)?\s*(?:{_UNITS})(?:\s*\^\s*\{{?[23]\}}?)?(?:\s+per\s*\w+|\s*/\s*[a-zA-Z]+)?\s*$",
    re.IGNORECASE,
)
# SI and physics units: case-sensitive and only after a space (`5 N` is newtons, `5n` is not).
_SI_UNITS = (
    "N|kN|J|kJ|MJ|eV|keV|MeV|W|kW|MW|Pa|kPa|MPa|hPa|atm|bar|Hz|kHz|MHz|GHz|V|mV|kV|mA|Ω|\\\\Omega|ohms?|mol|"
    "mmol|K|cal|kcal|nm|µm|um|ms|ns|mg|kg|g|m|cm|mm|km|s|min|h|rad|sr|lm|lx|T|Wb|F|H|C|L|mL|dB"
)
_SI_TAIL_RE = re.compile(
    rf"(?:(?<=[\d}}.])|(?<=\\pi))(?:\s+|\\\s|~)(?:(?:{_SI_UNITS})(?:\s*\^\s*\{{?-?[1-3]\}}?)?(?:\s*(?:/|\\cdot)\s*|\s+)?)+\s*$"
)
# A number and up to three words of its unit, hyphenated words included ("0.7 light-years", "3 man-hours").
_NUMBER_UNIT_RE = re.compile(rf"^([-+]?[\d.,]+)\s+(?:[a-zA-Z]+(?:-[a-zA-Z]+)*\s*){{1,3}}$")
# The same words after a plain arithmetic chain's result ("35+28+14=77 sandwiches"): they name what the result
# counts, as after a lone number; a chain with a variable (`2x = 14 apples`) is left whole.
_CHAIN_UNIT_RE = re.compile(
    r"^([-+]?[\d.,]+(?:\s*(?:[-+*/×÷]|\\times|\\cdot)\s*[\d.,]+)*\s*=\s*[-+]?[\d.,]+)"
    r"\s+(?:[a-zA-Z]+(?:-[a-zA-Z]+)*\s*){1,3}$")


def clean_text(text: str) -> str:
    """Unicode and control-character cleanup shared by extraction and normalization."""
    text = _CONTROL_RE.sub(" ", text)
    text = _UNICODE_RE.sub(lambda m: _UNICODE[m.group(0)], text)
    # Full-width digits/letters/signs to ASCII; NFKC only on non-ASCII text (it is slow-ish).
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).translate(_NATIVE_DIGITS)
        text = _UNICODE_RE.sub(lambda m: _UNICODE[m.group(0)], text)
    return text


def whitespace_start(text: str, end: int) -> int:
    """The start of the whitespace run that ends at `end` (`end` itself when none does)."""
    while end > 0 and text[end - 1].isspace():
        end -= 1
    return end


def strip_math_delimiters(text: str) -> str:
    text = text.strip()
    for opener, closer in (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$")):
        if text.startswith(opener) and text.endswith(closer) and len(text) >= len(opener) + len(closer):
            text = text[len(opener):len(text) - len(closer)].strip()
    return text.replace("$", " ") if text.count("$") % 2 == 0 and "\\$" not in text else text


def unwrap_command(text: str, command: str) -> str:
    r"""Replace `\command{X}` by `X` for every occurrence, with balanced braces (nested allowed)."""
    out = []
    i = 0
    needle = "\\" + command
    while True:
        j = text.find(needle, i)
        if j < 0:
            out.append(text[i:])
            break
        k = j + len(needle)
        while k < len(text) and text[k] == " ":
            k += 1
        if k >= len(text) or text[k] != "{" or (k == j + len(needle) and k < len(text) and text[k].isalpha()):
            out.append(text[i:k])
            i = k
            continue
        end = matching_brace(text, k)
        if end < 0:
            out.append(text[i:])
            break
        out.append(text[i:j])
        out.append(text[k + 1:end])
        i = end + 1
    return "".join(out)


def matching_brace(text: str, open_index: int, limit: int = 20_000) -> int:
    """Index of the `}` closing the `{` at open_index, or -1 (unbalanced or past `limit` chars)."""
    depth = 0
    stop = min(len(text), open_index + limit)
    i = open_index
    while i < stop:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


@lru_cache(maxsize=65536)
def normalize_answer(raw: str) -> str:
    """Canonical form of one answer string. Idempotent; keeps structure (commas, brackets, `=`)."""
    text = clean_text(raw).strip()
    text = strip_math_delimiters(text)
    text = _LEADING_LABEL_RE.sub("", text)
    text = _APPROXIMATELY_RE.sub("", text)
    text = strip_math_delimiters(text)
    if "\\!" in text:
        text = _THOUSANDS_THINSPACE_RE.sub(",", text)
    for command in ("boxed", "fbox", "text", "textbf", "mathrm", "mathbf", "textit", "mbox", "textrm",
                    "operatorname", "mathit", "displaystyle", "boldsymbol", "hbox", "emph"):
        if "\\" + command in text:
            if command in ("mathrm", "operatorname"):
                text = _CONST_E_RE.sub("e", text)
                text = _CONST_I_RE.sub("i", text)
            text = unwrap_command(text, command)
    text = _UNWRAP_RE.sub(r"\1", text)
    # `\:`, `\>` and `\;` are wider spaces than `\,`: a space (`10\;\text{edges}` is 10 edges, not a word
    # `10edges`), dropped only between digits.
    text = _WIDE_SPACE_RE.sub(" ", text)
    text = _DROP_RE.sub("", text)
    if (quoted := _QUOTED_RE.match(text)) is not None:
        text = quoted.group(1).strip()
    if ("m" in text or "M" in text or "in the" in text) and (time := canonical_time(text)) is not None:
        return time  # `4:30 p.m.` -> `T16:30` (its "m." is no unit)
    if ("\\circ" in text or "\\degree" in text) and _TRIG_RE.search(text):
        text = _TRIG_DEGREES_RE.sub(r"\1(\\frac{\2 \\pi}{180})", text)
    text = _DEGREE_RE.sub("", text)
    text = _CURRENCY_RE.sub("", text)
    text = _PERCENT_RE.sub("", text)
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("\\cfrac", "\\frac")
    text = _FRAC_SHORT_RE.sub(r"\\frac{\1}{\2}", text)
    text = _FRAC_HALF_RE.sub(r"\\frac\1{\2}", text)
    text = _FRAC_BARE_NUM_RE.sub(r"\\frac{\1}{", text)
    if "\\frac" in text:
        text = _FRAC_SYMBOL_RE.sub(_braced_fraction, text)
    text = _SQRT_SHORT_RE.sub(r"\\sqrt{\1}", text)
    text = text.replace("**", "^")
    if "!!" in text:
        text = _DOUBLE_FACTORIAL_RE.sub(_double_factorial, text)
    if "<" in text or ">" in text or "=" in text or "\\ne" in text or "\\lt" in text or "\\gt" in text or "slant" in text:
        text = _RELATION_RE.sub(lambda m: _RELATIONS[m.group(0)], text)
    text = re.sub(r"\\(?:le|ge)(?![a-zA-Z])", lambda m: m.group(0) + "q", text)
    if "infty" in text:
        text = _PLUS_INFINITY_RE.sub(r"\1\\infty", text)
    if "=" in text and ("for" in text or "\\in" in text):
        text = _QUANTIFIER_TAIL_RE.sub("", text)
    if text[:1].isalpha() and (named := _NAMED_VALUE_RE.match(text)):
        text = text[named.end():]
    text = text.replace("\\lbrace", "\\{").replace("\\rbrace", "\\}")
    text = re.sub(r"\\(?:mathbb|Bbb)\s*\{?\s*R\s*\}?", r"\\mathbb{R}", text)
    text = re.sub(r"(?<!\d)\\,|\\,(?!\d)", " ", text)  # `\,` is a space unless it groups digits
    ellipsis = _ELLIPSIS_END_RE.search(text) is not None  # `1, 2, 3, \ldots` goes on; `0.333...` repeats
    if not ellipsis:
        text = _UNIT_TAIL_RE.sub("", _TRAILING_PUNCT_RE.sub("", text))
    if " " in text or "~" in text:
        text = _SI_TAIL_RE.sub("", text)
    unit_match = _NUMBER_UNIT_RE.match(text) or ("=" in text and _CHAIN_UNIT_RE.match(text))
    if unit_match:
        text = unit_match.group(1)
    if not ellipsis:
        text = _TRAILING_PUNCT_RE.sub("", text)
    text = re.sub(r"\s+", " ", text).strip()
    text = strip_math_delimiters(text)
    return _strip_redundant_brackets(text)


def _braced_fraction(match: re.Match[str]) -> str:
    numerator, denominator = (arg if arg.startswith("{") else "{" + arg + "}" for arg in match.groups())
    return f"\\frac{numerator}{denominator}"


def _double_factorial(match: re.Match[str]) -> str:
    n = int(match.group(1))
    return str(math.prod(range(n, 0, -2))) if n <= _MAX_DOUBLE_FACTORIAL else match.group(0)


def _strip_redundant_brackets(text: str) -> str:
    """`{{1}}` -> `1`, `((x+1))` -> `(x+1)`: drop wrappers that hold one item (never tuples/intervals)."""
    while len(text) >= 2 and text[0] == "{" and matching_brace(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    while (len(text) >= 4 and text[:2] == "((" and text[-2:] == "))" and _closing_paren(text, 1) == len(text) - 2
           and _closing_paren(text, 0) == len(text) - 1):
        text = text[1:-1].strip()
    return text


def _closing_paren(text: str, open_index: int) -> int:
    depth = 0
    for i in range(open_index, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


_TEXT_STRIP_RE = re.compile(r"[^a-z0-9]+")
_ARTICLES_RE = re.compile(r"\b(?:a|an|the)\b")


def normalize_text(text: str) -> str:
    """Plain-text comparison key: lower case, letters and digits only, no articles."""
    text = normalize_answer(text).lower()
    text = text.replace("\\", " ")
    text = _ARTICLES_RE.sub(" ", text)
    return " ".join(_TEXT_STRIP_RE.sub(" ", text).split())
