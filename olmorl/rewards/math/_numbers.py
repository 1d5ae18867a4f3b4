"""Exact numbers without SymPy: the fast path for integers, decimals, fractions, scientific notation and
repeating decimals, and the numeric policy every comparison goes through.

Policy: an integer reference needs exact equality at any size; a decimal answer against an exact
(non-decimal) reference passes within a *relative* tolerance (default 1e-6); a decimal reference (taken
as rounded) accepts the same value, or a more precise answer that rounds to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

# A decimal of 15 or more significant digits is a float printed in full (a double carries 15-17); two of
# them within 1e-15 of each other (a few units in the last place) are one value.
FLOAT_DIGITS = 15
FLOAT_REL_TOL = 1e-15
MAX_EXPONENT = 400  # |n| in 10^n accepted by the fast path; larger numbers go to the guarded parser

_SEP = r"(?P<sep>,|\{,\}|\\,|\s|\\\s|~|')"
_GROUPED_RE = re.compile(rf"^(?P<head>\d{{1,3}}){_SEP}\d{{3}}(?:(?P=sep)\d{{3}})*(?P<tail>\.\d+)?$")
_DECIMAL_RE = re.compile(r"^(?:\d+\.?\d*|\.\d+)$")
_SCI_E_RE = re.compile(r"^(?P<m>\d+\.?\d*|\.\d+)\s*[eE]\s*(?P<e>[-+]?\d{1,4})$")
_SCI_TIMES_RE = re.compile(
    r"^(?:(?P<m>\d+\.?\d*|\.\d+)\s*(?:\\times|\\cdot|\*|x|×)\s*)?10\s*\^\s*(?:\{\s*(?P<e1>[-+]?\d{1,4})\s*\}|(?P<e2>\d))$"
)
_FRAC_RE = re.compile(r"^\\frac\s*\{\s*(?P<n>[-+]?\d+\.?\d*)\s*\}\s*\{\s*(?P<d>[-+]?\d+\.?\d*)\s*\}$")
_SLASH_RE = re.compile(r"^(?P<n>\d+)\s*/\s*(?P<d>\d+)$")
_MIXED_RE = re.compile(r"^(?P<w>\d+)\s*(?:\\frac\s*\{\s*(?P<n>\d+)\s*\}\s*\{\s*(?P<d>\d+)\s*\}|\s(?P<n2>\d+)/(?P<d2>\d+))$")
_REPEAT_RE = re.compile(
    r"^(?P<i>\d*)\.(?P<f>\d*)(?:\\overline\s*\{(?P<r1>\d+)\}|\\overline\s*(?P<r4>\d)|\((?P<r2>\d+)\)|\\dot\s*\{?(?P<r3>\d)\}?)$"
)
_ELLIPSIS_RE = re.compile(r"^(?P<i>\d*)\.(?P<f>\d+)\s*(?:\.\.\.|\\ldots|\\dots|\\cdots|…)$")


@dataclass(frozen=True)
class ExactNumber:
    value: Fraction
    decimal_places: int | None = None  # set when written as a (rounded) decimal literal
    exact: bool = True  # False for decimal literals: they carry rounding

    @property
    def is_integer(self) -> bool:
        return self.exact and self.value.denominator == 1


def _strip_sign(text: str) -> tuple[int, str]:
    sign = 1
    text = text.strip()
    while text[:1] in ("-", "+"):
        if text[0] == "-":
            sign = -sign
        text = text[1:].lstrip()
    return sign, text


def _decimal(text: str) -> ExactNumber:
    places = len(text.split(".", 1)[1]) if "." in text else 0
    value = Fraction(text if not text.endswith(".") else text[:-1])
    if places == 0:
        return ExactNumber(value)
    return ExactNumber(value, places, exact=False)


def _repeating(integer: str, fixed: str, repeat: str) -> Fraction:
    base = Fraction(int(integer or "0"))
    fixed_value = Fraction(int(fixed or "0"), 10 ** len(fixed))
    repeat_value = Fraction(int(repeat), (10 ** len(repeat) - 1) * 10 ** len(fixed))
    return base + fixed_value + repeat_value


def _ellipsis(integer: str, digits: str) -> Fraction | None:
    """`0.333...` / `0.142857142857...`: the shortest block repeated at least twice at the end."""
    for period in range(1, len(digits) // 2 + 1):
        block = digits[-period:]
        if digits[-2 * period:-period] != block:
            continue
        start = len(digits) - period
        while start - period >= 0 and digits[start - period:start] == block:
            start -= period
        return _repeating(integer, digits[:start], block)
    return None


@lru_cache(maxsize=65536)
def parse_number(text: str) -> ExactNumber | None:
    """The exact value of a normalized answer that is a plain number, else None."""
    if len(text) > 400:
        return None
    sign, body = _strip_sign(text)
    if body.startswith("(") and body.endswith(")") and "," not in body:
        inner = parse_number(body[1:-1])
        return None if inner is None else ExactNumber(sign * inner.value, inner.decimal_places, inner.exact)
    if not body:
        return None
    number = _parse_unsigned(body)
    if number is None:
        return None
    return ExactNumber(sign * number.value, number.decimal_places, number.exact)


def _parse_unsigned(body: str) -> ExactNumber | None:
    if _DECIMAL_RE.match(body):
        return _decimal(body)
    grouped = _GROUPED_RE.match(body)
    if grouped:
        digits = body[: grouped.start("tail")] if grouped.group("tail") else body
        digits = re.sub(r"\D", "", digits)
        return _decimal(digits + (grouped.group("tail") or ""))
    if m := _FRAC_RE.match(body):
        n_sign, n_text = _strip_sign(m.group("n"))
        d_sign, d_text = _strip_sign(m.group("d"))
        numerator, denominator = Fraction(n_text), Fraction(d_text)
        if denominator == 0:
            return None
        return ExactNumber(n_sign * d_sign * numerator / denominator)
    if m := _SLASH_RE.match(body):
        if int(m.group("d")) == 0:
            return None
        return ExactNumber(Fraction(int(m.group("n")), int(m.group("d"))))
    if m := _MIXED_RE.match(body):
        n, d = (m.group("n"), m.group("d")) if m.group("n") else (m.group("n2"), m.group("d2"))
        if int(d) == 0 or int(n) >= int(d):
            return None
        return ExactNumber(int(m.group("w")) + Fraction(int(n), int(d)))
    if m := _SCI_E_RE.match(body):
        return _scientific(m.group("m"), m.group("e"))
    if m := _SCI_TIMES_RE.match(body):
        return _scientific(m.group("m") or "1", m.group("e1") or m.group("e2"))
    if m := _REPEAT_RE.match(body):
        repeat = m.group("r1") or m.group("r2") or m.group("r3") or m.group("r4")
        return ExactNumber(_repeating(m.group("i"), m.group("f"), repeat))
    if m := _ELLIPSIS_RE.match(body):
        value = _ellipsis(m.group("i"), m.group("f"))
        return None if value is None else ExactNumber(value)
    return None


def _scientific(mantissa: str, exponent: str) -> ExactNumber | None:
    power = int(exponent)
    if abs(power) > MAX_EXPONENT:
        return None
    m = _decimal(mantissa)
    value = m.value * Fraction(10) ** power
    if m.exact:
        return ExactNumber(value)
    return ExactNumber(value, (m.decimal_places or 0) - power, exact=False)


def round_half_up(value: Fraction, places: int) -> Fraction:
    scale = Fraction(10) ** places
    scaled = abs(value) * scale
    rounded = Fraction(int(scaled + Fraction(1, 2))) / scale
    return rounded if value >= 0 else -rounded


def relative_close(a: Fraction, b: Fraction, rel_tol: float) -> bool:
    """|a - b| <= rel_tol * max(|a|, |b|): relative, never absolute (0 only matches 0)."""
    if a == b:
        return True
    return abs(a - b) <= Fraction(rel_tol) * max(abs(a), abs(b))


def numbers_match(reference: ExactNumber, answer: ExactNumber, rel_tol: float) -> bool:
    """The numeric policy between a reference and an answer, both exact fast-path numbers."""
    if reference.value == answer.value:
        return True
    if reference.is_integer:
        return False
    if reference.exact:
        # Exact non-integer reference: a decimal answer is a rounding; an exact answer must be equal.
        return not answer.exact and relative_close(reference.value, answer.value, rel_tol)
    if answer.exact and _significant_digits(reference) >= FLOAT_DIGITS and _same_float(reference.value, answer.value):
        # A reference printed to a float's full precision (0.16666666666666666) is a float: the exact value whose
        # nearest float it is (1/6) is the value it printed.
        return True
    if not answer.exact and min(_significant_digits(reference), _significant_digits(answer)) >= FLOAT_DIGITS:
        # Both written to a float's full precision (0.6666666666666666 against 0.6666666666666667: one value,
        # 2/3, printed by two computations): they agree when they agree to a float's precision.
        return relative_close(reference.value, answer.value, FLOAT_REL_TOL)
    return decimal_reference_accepts(reference, answer.value, answer_places=answer.decimal_places)


def _same_float(a: Fraction, b: Fraction) -> bool:
    try:
        return float(a) == float(b)
    except OverflowError:  # beyond a float's range: no float printed it
        return False


def _significant_digits(number: ExactNumber) -> int:
    """How many digits a decimal literal was written with (scientific notation has negative places)."""
    scaled = abs(number.value) * Fraction(10) ** (number.decimal_places or 0)
    return len(str(scaled.numerator // scaled.denominator).lstrip("0"))


def decimal_reference_accepts(reference: ExactNumber, value: Fraction, answer_places: int | None) -> bool:
    """A rounded-decimal reference accepts a value that rounds to it from more precision."""
    places = reference.decimal_places or 0
    if answer_places is not None and answer_places <= places:
        return False
    return round_half_up(value, places) == reference.value


def one_value_written_twice(texts: list[str]) -> str | None:
    """The value of two answers joined by "or" that write one value twice, else None (a hedge).

    "3/8 or .375" and "1/6, or 0.166666666666667" give a fraction and then its decimal: the same number, or the
    fraction rounded to the decimal places shown (two at least, so "1/2 or 1" stays a hedge). The exact form is
    the value stated."""
    if len(texts) != 2:
        return None
    first, second = (parse_number(text.strip().rstrip(",;").strip()) for text in texts)
    if first is None or second is None:
        return None
    if first.value == second.value:
        return texts[0] if first.exact or not second.exact else texts[1]
    exact = 0 if first.exact else 1
    fraction, rounded = (first, second) if exact == 0 else (second, first)
    places = rounded.decimal_places or 0
    if not fraction.exact or fraction.is_integer or rounded.exact or places < 2:
        return None
    return texts[exact] if round_half_up(fraction.value, places) == rounded.value else None
