"""Mathematical equivalence of a reference and an answer (both normalized strings).

Order of attempts, cheapest first: string identity, structure (letters, yes/no, lists, sets, tuples,
intervals, matrices, equations), the exact-number fast path, then guarded SymPy (numeric policy for
constants, a randomized identity test for expressions with variables), then plain-text identity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

import sympy

from olmorl.rewards.math import _structure as st
from olmorl.rewards.math._boolean_answer import boolean_answer
from olmorl.rewards.math._elided_sum import expand_elided_sum, has_ellipsis
from olmorl.rewards.math._normalize import normalize_text
from olmorl.rewards.math._numbers import (
    ExactNumber,
    decimal_reference_accepts,
    numbers_match,
    parse_number,
)
from olmorl.rewards.math._time_of_day import times_equal
from olmorl.rewards.math._sympy import (
    TooLarge,
    exact_rational,
    exact_value_of_large,
    has_float,
    parse_latex,
    precise_close,
    precise_value,
    same_function,
    to_complex,
)

_TEXTUAL_RE = re.compile(r"^[A-Za-z][A-Za-z \-']*[A-Za-z]$")
_DECIMAL_COMMA_RE = re.compile(r"^-?\d+,\d+$")
_POINT_DECIMAL_RE = re.compile(r"^-?\d*\.\d+$")
_THOUSANDS_RE = re.compile(r"^-?[1-9]\d{0,2}(?:,\d{3})+$")
# A comma that groups a number's thousands (`53,200`): one to three digits before it, three after.
_THOUSANDS_COMMA_RE = re.compile(r"(?<=\d)(?<!\d{4}),(?=\d{3}(?!\d))")
_REALS_MINUS_RE = re.compile(r"^(?:\\mathbb\{R\}|\(-\\infty,\s*\\infty\))\s*\\setminus\s*\\\{(.+)\\\}$")
# A bare string of letters ("abc", "nlly") is a word, not a product of symbols: `abc` is not `cba`.
_LETTER_STRING_RE = re.compile(r"[A-Za-z]{2,}")
# Letter by letter ("n a o a"): the word spelled out (as a product of symbols it is the same product).
_SPELLED_RE = re.compile(r"[A-Za-z](?:\s+[A-Za-z])+")
# The dependent variable of a function: `y`, `f(x)`, `g(t)` (`y = 2x+3` and `f(x) = 2x+3` state one function).
_DEPENDENT_RE = re.compile(r"^(?:y|[a-zA-Z]\s*\(\s*([a-z])\s*\))$")
_LATEX_COMMAND_RE = re.compile(r"\\[a-zA-Z]+")
_EXACT_TOL = 1e-20  # relative tolerance that stands for "exactly equal" between two exact values


class Unparseable(ValueError):
    """Neither structure, numbers, SymPy nor text could compare the two."""


@dataclass(frozen=True)
class Verdict:
    match: bool
    reason: str | None = None  # mismatch | unparseable | too_large (when not a match)


def equivalent(reference: str, answer: str, rel_tol: float) -> Verdict:
    try:
        return Verdict(True) if _equal(reference, answer, rel_tol, 0) else Verdict(False, "mismatch")
    except TooLarge:
        return Verdict(False, "too_large")
    except Unparseable:
        return Verdict(False, "unparseable")


def _equal(ref: str, ans: str, rel_tol: float, depth: int) -> bool:
    if depth > 4:
        raise Unparseable("structure nested too deeply")
    if ref == ans:
        return True
    if (same_time := times_equal(ref, ans)) is not None:
        return same_time
    ref, ans = st.canonical_set_text(ref), st.canonical_set_text(ans)
    ref, ans = st.lone_set_member(ref), st.lone_set_member(ans)
    if ref == ans:
        return True
    # Multiple choice: a reference letter is matched by the answer's letter.
    ref_letter = st.as_letter(ref) if len(ref) < 60 else None
    if ref_letter is not None:
        ans_letter = st.as_letter(ans) or st.parenthesized_choice(ans)
        if ans_letter is not None:
            return ans_letter[0] == ref_letter[0]
        if ref_letter[1]:
            return _equal(ref_letter[1], ans, rel_tol, depth + 1)
        return False
    ans_letter = st.as_letter(ans)
    if ans_letter is not None and ans_letter[1] and ans.startswith("("):
        ans = ans_letter[1]  # "(B) 12" against the reference "12"
    ref_bool = boolean_answer(ref)
    if ref_bool is not None:
        return ref_bool == boolean_answer(ans)
    if (_LETTER_STRING_RE.fullmatch(ref) and _SPELLED_RE.fullmatch(ans)
            and re.sub(r"\s+", "", ans).lower() == ref.lower()):
        return True  # spelled out, it is still the word (as words compare: in any case)
    # A labelled value ("(p, q) = (1, 2)", "AB = 5") against an unlabelled one: compare the values.
    ref, ans = _drop_label(ref, ans), _drop_label(ans, ref)
    if (matrix := st.as_matrix(ref)) is not None:
        if ans.count("\\begin{") > 1:  # matrix arithmetic (`A + B`, `A B`): let SymPy evaluate it
            try:
                value = _parse(ans)
                return _expr_equal(_parse(ref), value.doit() if hasattr(value, "doit") else value, None, rel_tol)
            except (ValueError, TypeError, AttributeError):
                return False
        return _matrix_equal(matrix, ans, rel_tol, depth)
    ref, ans = _set_difference_as_union(ref), _set_difference_as_union(ans)
    ref_interval, ans_interval = st.inequality_to_interval(ref), st.inequality_to_interval(ans)
    if ref_interval and ans_interval and ref_interval[0] != ans_interval[0]:
        return False  # x < 1 is not y < 1
    ref, ans = ref_interval[1] if ref_interval else ref, ans_interval[1] if ans_interval else ans
    if (parts := st.union_parts(ref)) is not None:
        ans_parts = st.union_parts(ans)
        return ans_parts is not None and _unordered_equal(parts, ans_parts, rel_tol, depth)
    if "," in ref or "," in ans:
        ref, ans = _decimal_comma(ref, ans), _decimal_comma(ans, ref)
        ans = _chain_thousands(ans, ref)
    if parse_number(ref) is not None:
        pass  # "1,000,000" is one number, not a list
    elif (seq := st.as_sequence(ref)) is not None or (pm := st.expand_pm(ref)) is not None:
        if seq is None:
            seq = st.Sequence(tuple(pm or ()), "", "")
        return _sequence_equal(seq, ans, rel_tol, depth)
    if st.as_sequence(ans) is not None and parse_number(ans) is None:
        return False  # several answers against one reference
    if st.expand_pm(ans) is not None:
        return False
    return _scalar_equal(ref, ans, rel_tol)


def _drop_label(text: str, other: str) -> str:
    """`(p,q) = (1,2)` -> `(1,2)` when `other` is not an equation itself (two equations compare as such)."""
    if "=" not in text or "=" in other:
        return text
    sides = st.equation_sides(text)
    return sides[1] if len(sides) == 2 and st.is_simple_lhs(sides[0]) else text


def _set_difference_as_union(text: str) -> str:
    r"""`\mathbb{R} \setminus \{1, 3\}` -> `(-\infty, 1) \cup (1, 3) \cup (3, \infty)`."""
    if "\\setminus" not in text:
        return text
    m = _REALS_MINUS_RE.match(text)
    if not m:
        return text
    points = st.top_level_split(m.group(1), (",",))
    try:
        values = [to_complex(_parse(p)) for p in points]
    except ValueError:
        return text
    reals = [v.real for v in values if v is not None and not v.imag]
    if len(reals) != len(values):
        return text
    ordered = [p for _, p in sorted(zip(reals, points))]
    bounds = ["-\\infty", *ordered, "\\infty"]
    return " \\cup ".join(f"({a}, {b})" for a, b in zip(bounds, bounds[1:]))


def _has_equation(text: str) -> bool:
    return len(st.equation_sides(text)) > 1


def _sequence_equal(ref: st.Sequence, ans: str, rel_tol: float, depth: int) -> bool:
    ans_seq = st.as_sequence(ans)
    if ans_seq is None:
        pm = st.expand_pm(ans)
        if pm is None:
            return False
        ans_seq = st.Sequence(tuple(pm), "", "")
    if not ref.ordered:  # `\{1 \pm \sqrt{5}, -2\}` lists three solutions
        ref, ans_seq = _expand_pm_items(ref), _expand_pm_items(ans_seq)
    if len(ans_seq.items) != len(ref.items):
        return False
    if ref.ordered:
        # Tuples and intervals: the answer's brackets must agree (a bare list is read in order).
        if ans_seq.opener and (ans_seq.opener, ans_seq.closer) != (ref.opener, ref.closer):
            return False
        return all(_equal(r, a, rel_tol, depth + 1) for r, a in zip(ref.items, ans_seq.items))
    if ans_seq.ordered and any("infty" in item for item in ans_seq.items):
        return False  # an interval is not a solution set
    return _unordered_equal(list(ref.items), list(ans_seq.items), rel_tol, depth)


def _expand_pm_items(seq: st.Sequence) -> st.Sequence:
    if not any("\\pm" in item or "\\mp" in item for item in seq.items):
        return seq
    items = [part for item in seq.items for part in (st.expand_pm(item) or [item])]
    return st.Sequence(tuple(items), seq.opener, seq.closer)


def _decimal_comma(text: str, other: str) -> str:
    """`1000,99` -> `1000.99` against a decimal written with a point (`1,000` stays a thousands separator,
    `1,2` against a list stays a list)."""
    if _DECIMAL_COMMA_RE.match(text) and not _THOUSANDS_RE.match(text) and _POINT_DECIMAL_RE.match(other):
        return text.replace(",", ".")
    return text


def _chain_thousands(text: str, other: str) -> str:
    """`76,000 + 53,200 = 129,200` -> `76000 + 53200 = 129200` against one number: in an equation chain whose every
    comma groups thousands, the commas are not a list's."""
    if "=" not in text or parse_number(other) is None:
        return text
    plain = _THOUSANDS_COMMA_RE.sub("", text)
    return text if "," in plain else plain


def _unordered_equal(ref_items: list[str], ans_items: list[str], rel_tol: float, depth: int) -> bool:
    if len(ref_items) != len(ans_items):
        return False
    remaining = list(ans_items)
    for item in ref_items:
        for k, candidate in enumerate(remaining):
            if _equal(item, _drop_simple_lhs(candidate), rel_tol, depth + 1):
                del remaining[k]
                break
        else:
            return False
    return True


def _matrix_equal(ref: list[list[str]], ans: str, rel_tol: float, depth: int) -> bool:
    ans_matrix = st.as_matrix(ans)
    if ans_matrix is None:
        seq = st.as_sequence(ans)
        flat_ref = [cell for row in ref for cell in row]
        if seq is None or not (len(ref) == 1 or all(len(row) == 1 for row in ref)):
            return False
        return len(seq.items) == len(flat_ref) and all(
            _equal(r, a, rel_tol, depth + 1) for r, a in zip(flat_ref, seq.items))
    if [len(row) for row in ans_matrix] != [len(row) for row in ref]:
        return False
    return all(_equal(r, a, rel_tol, depth + 1) for rr, ar in zip(ref, ans_matrix) for r, a in zip(rr, ar))


def _drop_simple_lhs(text: str) -> str:
    sides = st.equation_sides(text)
    if len(sides) == 2 and st.is_simple_lhs(sides[0]):
        return sides[1]
    return text


def _unwrap_chain(text: str) -> str:
    """`(35 + 70 = 105)` -> `35 + 70 = 105`: parentheses around a whole equation chain group nothing."""
    if text[:1] == "(" and text[-1:] == ")" and "=" in text:
        inner = text[1:-1]
        if st.as_sequence(text) is None and len(st.top_level_split(inner, (",",))) == 1 and _has_equation(inner):
            return inner.strip()
    return text


def _is_constant_side(text: str) -> bool:
    """No variable in it (`\\sqrt{4}`, `\\binom{5}{2}`, `35 + 70`): an arithmetic side of a chain."""
    return not re.search(r"[a-zA-Z]", _LATEX_COMMAND_RE.sub("", text))


def _scalar_equal(ref: str, ans: str, rel_tol: float) -> bool:
    ref, ans = _unwrap_chain(ref), _unwrap_chain(ans)
    ref_sides, ans_sides = st.equation_sides(ref), st.equation_sides(ans)
    # `\sqrt{4} = 2`, `3 + 4 = 7` against a bare value: an arithmetic chain states its last side.
    if len(ans_sides) >= 2 and len(ref_sides) == 1 and all(_is_constant_side(s) for s in ans_sides[:-1]):
        ans_sides, ans = ans_sides[-1:], ans_sides[-1]
    # A chain `x = 5+5+1 = 11` states its value last.
    if len(ref_sides) > 2:
        ref_sides = [ref_sides[0], ref_sides[-1]] if st.is_simple_lhs(ref_sides[0]) else [ref_sides[-1]]
        ref = " = ".join(ref_sides)
    if len(ans_sides) > 2:
        ans_sides = [ans_sides[0], ans_sides[-1]] if st.is_simple_lhs(ans_sides[0]) else [ans_sides[-1]]
        ans = " = ".join(ans_sides)
    if len(ref_sides) == 2 and len(ans_sides) == 2:
        return _equation_equal(ref_sides, ans_sides, rel_tol)
    if len(ref_sides) == 2:
        # "x = 3" / "f(x) = 2x+1" against a bare value.
        return st.is_simple_lhs(ref_sides[0]) and _value_equal(ref_sides[1], ans, rel_tol)
    if len(ans_sides) >= 2:
        # "x = 3", "x = 6/2 = 3": the last side is the value.
        if not (st.is_simple_lhs(ans_sides[0]) or len(ans_sides) > 2):
            return False
        ans = ans_sides[-1]
    return _value_equal(ref, ans, rel_tol)


def _equation_equal(ref: list[str], ans: list[str], rel_tol: float) -> bool:
    if ref[0] == ans[0] and st.is_simple_lhs(ref[0]):
        return _value_equal(ref[1], ans[1], rel_tol)
    if _same_dependent(ref, ans):
        return _value_equal(ref[1], ans[1], rel_tol)
    try:
        ref_diff = _parse(ref[0]) - _parse(ref[1])  # type: ignore[operator]  # TypeError is caught below
        ans_diff = _parse(ans[0]) - _parse(ans[1])  # type: ignore[operator]
    except (TypeError, AttributeError):
        raise Unparseable("equation sides are not expressions") from None
    if not isinstance(ref_diff, sympy.Expr) or not isinstance(ans_diff, sympy.Expr):
        raise Unparseable("equation sides are not expressions")
    if ref_diff.free_symbols != ans_diff.free_symbols:
        return False
    return same_function(ref_diff, ans_diff, rel_tol, proportional=True)


def _same_dependent(ref: list[str], ans: list[str]) -> bool:
    """`y = ...` against `f(x) = ...` (or `f(x)` against `g(x)`): both name the function of one variable."""
    ref_lhs, ans_lhs = _DEPENDENT_RE.match(ref[0].strip()), _DEPENDENT_RE.match(ans[0].strip())
    if ref_lhs is None or ans_lhs is None or ref[0].strip() == ans[0].strip():
        return False
    variables = {m.group(1) for m in (ref_lhs, ans_lhs) if m.group(1)}
    if len(variables) != 1:
        return False
    # `y = 2y + 3` is not a function of x; the variable must be the one the right sides use.
    rhs_letters = set(re.findall(r"[a-zA-Z]", _LATEX_COMMAND_RE.sub("", ref[1] + ans[1])))
    return rhs_letters <= variables


def _value_equal(ref: str, ans: str, rel_tol: float) -> bool:
    if ref == ans:
        return True
    ref, ans = expand_elided_sum(ref), expand_elided_sum(ans)  # `x^8 + x^7 + ... + 1`: every term of its pattern
    ref_number, ans_number = parse_number(ref), parse_number(ans)
    if ref_number is not None and ans_number is not None:
        return numbers_match(ref_number, ans_number, rel_tol)
    if _LETTER_STRING_RE.fullmatch(ref) and _LETTER_STRING_RE.fullmatch(ans):
        return ref.lower() == ans.lower()
    if _is_textual(ref) or _is_textual(ans):
        return normalize_text(ref) == normalize_text(ans)
    if len(ref) >= 3 and ref.isalpha() and ref.lower() == ans.lower():
        return True  # "Bob" / "bob": one word that differs in case only
    try:
        ref_expr, ans_expr = _parse(ref), _parse(ans)
    except TooLarge:
        # Last resort: plain arithmetic past the float-safe size (`3^{2000}`), compared exactly.
        ref_exact = ref_number.value if ref_number is not None and ref_number.exact else exact_value_of_large(ref)
        ans_exact = ans_number.value if ans_number is not None and ans_number.exact else exact_value_of_large(ans)
        if ref_exact is None or ans_exact is None:
            raise
        return ref_exact == ans_exact
    except ValueError:
        # Compared as words, an ellipsis would vanish: `x^2 + x + ... + 1` is not `x^2 + x + 1` written plainly.
        same_words = normalize_text(ref) and normalize_text(ref) == normalize_text(ans)
        if same_words and has_ellipsis(ref) == has_ellipsis(ans):
            return True
        raise Unparseable("answer does not parse") from None
    return _expr_equal(ref_expr, ans_expr, ref_number, rel_tol)


def _is_textual(text: str) -> bool:
    """Words, not math: "Monday", "blue whale" (one or two letters are variables, not text)."""
    return bool(_TEXTUAL_RE.match(text)) and (len(text) > 4 or (" " in text and len(text) > 3))


def _parse(text: str) -> object:
    return parse_latex(st.expand_cis(text))


def _expr_equal(ref: object, ans: object, ref_number: ExactNumber | None, rel_tol: float) -> bool:
    if isinstance(ref, sympy.MatrixBase) or isinstance(ans, sympy.MatrixBase):
        if not (isinstance(ref, sympy.MatrixBase) and isinstance(ans, sympy.MatrixBase)) or ref.shape != ans.shape:
            return False
        return all(_expr_equal(r, a, None, rel_tol) for r, a in zip(ref, ans))
    if not isinstance(ref, sympy.Expr) or not isinstance(ans, sympy.Expr):
        try:
            return bool(ref == ans)
        except Exception:
            return False
    if ref.free_symbols or ans.free_symbols:
        if ref.free_symbols != ans.free_symbols and ref.free_symbols and ans.free_symbols:
            return False  # different variables
        # One side constant: equal only if the other is that constant everywhere (sin^2 x + cos^2 x = 1).
        return same_function(ref, ans, rel_tol)
    return _constant_equal(ref, ans, ref_number, rel_tol)


def _constant_equal(ref: sympy.Expr, ans: sympy.Expr, ref_number: ExactNumber | None, rel_tol: float) -> bool:
    ans_float = has_float(ans)
    if ref_number is not None and not ref_number.exact:
        # Rounded-decimal reference against an exact or more precise answer.
        ans_value = to_complex(ans)
        if ans_value is None or abs(ans_value.imag) > 1e-12 * max(1.0, abs(ans_value)):
            return False
        return decimal_reference_accepts(ref_number, Fraction(ans_value.real), None if not ans_float else 99)
    ref_q, ans_q = exact_rational(ref), exact_rational(ans)
    if ref_q is not None and ans_q is not None and not ans_float:
        return ref_q == ans_q
    ref_value, ans_value = precise_value(ref), precise_value(ans)
    if ref_value is None or ans_value is None:
        return False
    if has_float(ref):
        return precise_close(ref_value, ans_value, rel_tol)
    if ans_float:
        if ref_q is not None and ref_q.denominator == 1:
            return precise_close(ref_value, ans_value, 1e-15)  # integer references need exact equality
        return precise_close(ref_value, ans_value, rel_tol)
    return precise_close(ref_value, ans_value, _EXACT_TOL)
