"""Guarded LaTeX -> SymPy parsing (latex2sympy2_extended) and SymPy-level numeric equality.

No signals, no timeouts here: the pool worker running us has a hard external kill. Instead every input
is pre-screened so that nothing huge is ever evaluated: long or deeply nested strings are not parsed
(the ANTLR parser is exponential in nesting), and parsed trees whose magnitude estimate is astronomical
(`10^{10^{10}}`, `100000!`, power towers) are refused before any arithmetic.
"""

from __future__ import annotations

import math
import random
import re
from fractions import Fraction
from functools import lru_cache
from typing import Any

import sympy
from latex2sympy2_extended.latex2sympy2 import ConversionConfig, _Latex2Sympy
from latex2sympy2_extended.math_normalization import NormalizationConfig, normalize_latex

MAX_PARSE_CHARS = 400  # longer answers are compared as strings only
MAX_NESTING = 6  # bracket depth limit for the parser
MAX_LOG10 = 2_000.0  # refuse values with more than ~2000 digits (or their reciprocals)
MAX_TREE_NODES = 600
MAX_EXACT_DIGITS = 20_000  # the exact last resort evaluates rational arithmetic up to this many digits

_CONVERSION = ConversionConfig(
    interpret_as_mixed_fractions=True,
    interpret_simple_eq_as_assignment=False,
    interpret_contains_as_eq=True,
    lowercase_symbols=False,
)
_NORMALIZATION = NormalizationConfig(
    basic_latex=True, units=False, malformed_operators=False, nits=False, boxed="none", equations=False
)
_E, _I = sympy.Symbol("e"), sympy.Symbol("i")
_PLAIN_INTEGER = re.compile(r"[0-9]+")
_PLAIN_SIGNED_INTEGER = re.compile(r"-?[0-9]{1,5000}")
_PLAIN_DECIMAL = re.compile(r"[0-9]*\.[0-9]+|[0-9]+\.")
# A whole number, a space, then a fraction with a slash ("1 1/3"): a mixed number. The parser reads the space as a
# sum under the slash ("1 1/3" -> (1 + 1)/3), so it gets the mixed number's own form, `1\frac{1}{3}` = 4/3. A whole
# before a fraction that is not proper ("1 3/3", batch 48's "1 3/3 cups" for 4/3) is no mixed number: no value.
_SLASH_MIXED = re.compile(r"(?<![\w.^/}])([0-9]+) ([0-9]+)/([0-9]+)(?![\w.])")


class _Converter(_Latex2Sympy):
    """latex2sympy2_extended's converter, reading plain numerals directly. The library reads every numeral with
    `sympy.Number(text)`, which runs SymPy's string parser (an `exec("from sympy import *")` included): ~0.4 ms
    a numeral, an eighth of the math verifier's time. Integer and Float of the same text give the same objects."""

    def parse_number(self, text: str) -> Any:
        plain = text.replace(",", "")
        if _PLAIN_INTEGER.fullmatch(plain):
            return sympy.Integer(plain)
        if _PLAIN_DECIMAL.fullmatch(plain):
            return sympy.Float(plain)
        return super().parse_number(text)


def latex2sympy(text: str) -> Any:
    """latex2sympy2_extended's `latex2sympy` with our configuration and converter."""
    return _Converter(config=_CONVERSION).parse(normalize_latex(text, _NORMALIZATION))


class TooLarge(ValueError):
    """The expression would be astronomically large (or deep) to evaluate."""


def nesting_depth(text: str) -> int:
    depth = best = 0
    for ch in text:
        if ch in "({[":
            depth += 1
            best = max(best, depth)
        elif ch in ")}]":
            depth -= 1
    return best


def _log10_bound(expr: sympy.Basic, budget: list[int], max_log10: float = MAX_LOG10) -> float:
    """An upper bound on |log10|value|| of a numeric subtree (symbols count as ~10); raises TooLarge."""
    budget[0] -= 1
    if budget[0] < 0:
        raise TooLarge("expression tree too large")
    if expr.is_Rational:
        return max(math.log10(abs(int(expr.p)) + 1), math.log10(int(expr.q) + 1))
    if expr.is_Float:
        value = abs(float(expr))
        return abs(math.log10(value)) + 1 if value not in (0.0, math.inf) else 1.0
    if expr.is_Atom:
        return 0.5 if expr.is_number else 1.0
    if isinstance(expr, sympy.Pow):
        base = _log10_bound(expr.base, budget, max_log10)
        exponent_log = _log10_bound(expr.exp, budget, max_log10)
        if exponent_log > 6:
            if expr.base in (sympy.S.One, sympy.S.NegativeOne, sympy.S.Zero):
                return 1.0
            raise TooLarge("exponent too large")
        bound = max(base, 1.0) * _magnitude(expr.exp, exponent_log)
    elif isinstance(expr, sympy.exp):
        arg = _log10_bound(expr.args[0], budget, max_log10)
        if arg > 6:
            raise TooLarge("exp argument too large")
        bound = _magnitude(expr.args[0], arg) * 0.44
    elif isinstance(expr, (sympy.factorial, sympy.factorial2, sympy.gamma, sympy.binomial, sympy.subfactorial)):
        arg = max(_log10_bound(a, budget, max_log10) for a in expr.args)
        if arg > 5:
            raise TooLarge("factorial argument too large")
        bound = 10**arg * max(arg, 1.0)
    elif isinstance(expr, sympy.Mul):
        bound = sum(_log10_bound(a, budget, max_log10) for a in expr.args)
    elif isinstance(expr, sympy.Add):
        bound = max(_log10_bound(a, budget, max_log10) for a in expr.args) + math.log10(len(expr.args))
    else:
        bound = max((_log10_bound(a, budget, max_log10) for a in expr.args), default=1.0) + 1
    if bound > max_log10:
        raise TooLarge("value too large")
    return bound


def _magnitude(expr: sympy.Basic, log_bound: float) -> float:
    """|value| of a small numeric subtree (safe to evaluate: its log-bound is small), else 10**bound."""
    if log_bound <= 12 and expr.is_number:
        try:
            return abs(complex(expr.evalf(15))) + 1e-12
        except (TypeError, ValueError):
            pass
    return 10**log_bound


def check_size(expr: Any) -> None:
    if isinstance(expr, sympy.MatrixBase):
        for item in expr:
            check_size(item)
        return
    if isinstance(expr, sympy.Basic):
        _log10_bound(expr, [MAX_TREE_NODES])


@lru_cache(maxsize=16384)
def parse_latex(text: str) -> Any:
    """SymPy object for a normalized answer, or raises ValueError/TooLarge. Cached (references repeat)."""
    if len(text) > MAX_PARSE_CHARS:
        raise TooLarge("answer too long to parse")
    if nesting_depth(text) > MAX_NESTING:
        raise TooLarge("answer nested too deeply to parse")
    text = _SLASH_MIXED.sub(_mixed_as_frac, text)
    try:
        expr = latex2sympy(text)
    except Exception as exc:  # the parser raises bare Exceptions on syntax errors
        raise ValueError(f"unparseable: {str(exc).splitlines()[0][:80]}") from None
    check_size(expr)
    return _with_constants(expr)


def _mixed_as_frac(match: re.Match[str]) -> str:
    whole, numerator, denominator = match.groups()
    if int(numerator) >= int(denominator):
        raise ValueError("unparseable: a whole number before an improper fraction")
    return f"{whole}\\frac{{{numerator}}}{{{denominator}}}"


def _with_constants(expr: Any) -> Any:
    """`e` and `i` as Euler's number and the imaginary unit (answers almost never use them as variables)."""
    if isinstance(expr, sympy.Basic) and not isinstance(expr, sympy.MatrixBase):
        free = expr.free_symbols
        subs = {}
        if _E in free:
            subs[_E] = sympy.E
        if _I in free:
            subs[_I] = sympy.I
        if subs:
            expr = expr.xreplace(subs)
    return expr


def has_float(expr: sympy.Basic) -> bool:
    return any(atom.is_Float for atom in expr.atoms(sympy.Number))


def to_complex(expr: sympy.Basic, digits: int = 30) -> complex | None:
    """High-precision numeric value (as mpmath-backed complex), or None if not a finite number."""
    try:
        value = sympy.N(expr, digits)
    except Exception:
        return None
    if not value.is_number:
        return None
    try:
        re_part, im_part = value.as_real_imag()
        result = complex(sympy.Float(re_part, digits), sympy.Float(im_part, digits))
    except (TypeError, ValueError):
        return None
    if math.isnan(result.real) or math.isnan(result.imag) or math.isinf(abs(result)):
        return None
    return result


def exact_rational(expr: sympy.Basic) -> Fraction | None:
    """The exact value of a rational constant, also when written as arithmetic (`2^{1000} + 1`), else None."""
    if expr.is_Rational:
        return Fraction(int(expr.p), int(expr.q))
    try:
        return exact_arithmetic(expr)
    except TooLarge:
        return None


def exact_arithmetic(expr: Any, digits: int = MAX_EXACT_DIGITS) -> Fraction | None:
    """+, -, *, / and integer powers and factorials of integers, evaluated exactly with Python integers (so a
    huge integer reference is compared digit for digit, never within a tolerance); None for anything else.
    Raises TooLarge when a value would have more than `digits` digits."""
    if not isinstance(expr, sympy.Basic):
        return None
    if expr.is_Rational:
        return Fraction(int(expr.p), int(expr.q))
    if isinstance(expr, (sympy.Add, sympy.Mul)):
        maybe = [exact_arithmetic(arg, digits) for arg in expr.args]
        values = [v for v in maybe if v is not None]
        if len(values) != len(maybe):
            return None
        total = values[0]
        for value in values[1:]:
            total = total + value if isinstance(expr, sympy.Add) else total * value
            if _digits(total) > digits:
                raise TooLarge("exact value too large")
        return total
    if isinstance(expr, sympy.Pow):
        base, exponent = exact_arithmetic(expr.base, digits), exact_arithmetic(expr.exp, digits)
        if base is None or exponent is None or exponent.denominator != 1:
            return None
        if base == 0:
            return None if exponent < 0 else Fraction(int(exponent == 0))
        if abs(exponent) * _digits(base) > digits:
            raise TooLarge("exact power too large")
        return base ** int(exponent)
    if isinstance(expr, sympy.factorial):
        arg = exact_arithmetic(expr.args[0], digits)
        if arg is None or arg.denominator != 1 or arg < 0:
            return None
        if arg * max(1.0, math.log10(max(float(arg), 1.0))) > digits:
            raise TooLarge("exact factorial too large")
        return Fraction(math.factorial(int(arg)))
    return None


def _digits(value: Fraction) -> int:
    return max(abs(value.numerator).bit_length(), value.denominator.bit_length()) * 30103 // 100000 + 1


@lru_cache(maxsize=256)
def exact_value_of_large(text: str) -> Fraction | None:
    """The exact value of an answer the guarded parse refused as too large (`3^{2000}`), when it is plain
    rational arithmetic within MAX_EXACT_DIGITS digits; None otherwise (still too large, or not arithmetic).
    Cached as `parse_latex` is: its own parse costs as much, and a refused reference comes back with every answer."""
    if _PLAIN_SIGNED_INTEGER.fullmatch(text):
        try:
            return Fraction(int(text))
        except ValueError:  # past Python's int-from-text digit limit
            return None
    if len(text) > MAX_PARSE_CHARS or nesting_depth(text) > MAX_NESTING:
        return None
    try:
        expr = latex2sympy(text)
        if isinstance(expr, sympy.Basic):
            _log10_bound(expr, [MAX_TREE_NODES], MAX_EXACT_DIGITS)
        return exact_arithmetic(expr)
    except Exception:  # the parser raises bare Exceptions; TooLarge means past the exact budget too
        return None


def close(a: complex, b: complex, rel_tol: float) -> bool:
    if a == b:
        return True
    return abs(a - b) <= rel_tol * max(abs(a), abs(b))


_POINT_RNG = random.Random(1234)
_POINTS = [[_POINT_RNG.uniform(0.3, 2.7) for _ in range(8)] for _ in range(4)]


def same_function(a: sympy.Basic, b: sympy.Basic, rel_tol: float, proportional: bool = False) -> bool:
    """Equal (or, with `proportional`, a constant nonzero multiple) at several fixed random points.

    A randomized identity test: cheap, and it never runs `simplify` on adversarial input.
    """
    symbols = sorted(a.free_symbols | b.free_symbols, key=str)
    if len(symbols) > 8:
        return False
    ratios: list[complex] = []
    checked = 0
    for point in _POINTS:
        subs = {s: sympy.Float(v) for s, v in zip(symbols, point)}
        try:
            va = to_complex(a.xreplace(subs), 20)
            vb = to_complex(b.xreplace(subs), 20)
        except Exception:
            return False
        if va is None or vb is None:
            if (va is None) != (vb is None):
                return False
            continue
        checked += 1
        if proportional:
            if abs(vb) < 1e-12 or abs(va) < 1e-12:
                if abs(va) >= 1e-12 or abs(vb) >= 1e-12:
                    return False
                continue
            ratios.append(va / vb)
        elif not close(va, vb, max(rel_tol, 1e-9)):
            return False
    if checked < 2:
        return False
    if proportional:
        return bool(ratios) and all(close(r, ratios[0], 1e-8) for r in ratios)
    return True


def precise_value(expr: sympy.Basic, digits: int = 40) -> sympy.Expr | None:
    """A `digits`-digit numeric value (possibly complex), or None when not a finite number."""
    try:
        value = sympy.N(expr, digits)
    except Exception:
        return None
    if not value.is_number or value.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):
        return None
    return value


def precise_close(a: sympy.Expr, b: sympy.Expr, rel_tol: float) -> bool:
    try:
        diff = abs(sympy.N(a - b, 40))
        scale = max(abs(a), abs(b))
        return bool(diff == 0 or diff <= sympy.Float(rel_tol, 40) * scale)
    except (TypeError, ValueError):
        return False
