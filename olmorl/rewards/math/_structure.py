"""Structural splitting of normalized answers: lists, sets, tuples, intervals, matrices, equations,
multiple-choice letters and inequalities. Cheap string work; scalars go to `_equivalence`."""

from __future__ import annotations

import re
from dataclasses import dataclass

_MATRIX_RE = re.compile(r"^[(\[]?\s*\\begin\{([pbvBV]?matrix|array)\}(?:\{[^{}]*\})?(.*)\\end\{\1\}\s*[)\]]?$", re.DOTALL)
# A double hyphen ("D--disturb") separates a letter from its option's text as a comma does; one hyphen does not.
_LETTER_RE = re.compile(r"^\(?([A-J])\)?(?:$|[\s.:,)]|\\\s|--)(.*)$", re.DOTALL)
_LETTER_SEPARATOR_RE = re.compile(r"^(?:[).:,]|--)")
# "most likely B, homes", "likely to be D, a major city": the choice named as the likely one of the options is the
# choice (a multiple-choice question asks which option is likeliest); "probably B" stays a hedge (`_extract`), and
# a second choice after it ("likely to be A, B, or D") makes a list, not one choice. The choice may be quoted with
# its option's text ('most likely "B: crowd."'): quotes around all that follows are not part of it, as around a whole
# answer; quotes around two ('"B" or "D."') are not all around one.
_MOST_LIKELY_RE = re.compile(r"^(?:the\s+)?(?:most\s+)?likely(?:\s+to\s+be)?\s+(?=[\"“]?\(?[A-J]\b)", re.IGNORECASE)
_QUOTED_CHOICE_RE = re.compile(r"^[\"“]([^\"“”]+)[\"”]\.?$")
# The text after a choice that names a second choice ("A, B", "A, (C)", "(A) and (B)") is a list of choices, not
# one; a capital I before a lower-case word after "and" is the pronoun.
_SECOND_CHOICE_RE = re.compile(
    r"^(?:\(?[A-J]\)?(?:$|[.,)]|\s+(?:and|or|&)\s)|(?:and|&)\s+\(?(?!I\s+[a-z])[A-J]\)?(?![\w']))")
# Another choice after a contrast or an alternative ("but it could be C", "or (C)", "although C is possible"); a
# capital I before a lower-case word is the pronoun.
_CONTRASTED_CHOICE_RE = re.compile(
    r"\b(?i:but|or|although|though|however|yet|alternatively)\b.*?(?<![\w'])\(?(?!I\s+[a-z])([A-J])\)?(?![\w'])",
    re.DOTALL,
)
_OPTION_RE = re.compile(r"^(?:option|choice)\s+\(?([A-Ja-j])\)?\s*(.*)$", re.IGNORECASE | re.DOTALL)
# A choice followed by its content in parentheses, closing the answer: "B (a=1)", "B（a=1）" (batch 7's
# `\boxed{\text{B（}a=1\text{）}}`). Another choice letter or "or" inside makes it a hedge or a list, not one choice.
_PARENTHESIZED_CHOICE_RE = re.compile(r"^([A-J])\s*\((.*)\)$", re.DOTALL)
_OTHER_CHOICE_RE = re.compile(r"\b[A-J]\b|\b(?i:or)\b")
_SIMPLE_LHS_RE = re.compile(
    r"^(?:[a-zA-Z](?:_\{?[\w]+\}?)?(?:'+)?(?:\s*\([a-z,\s]*\))?|\\[a-zA-Z]+(?:_\{?\w+\}?)?|[A-Z]{2,3}|"
    r"m\s*\\angle\s*[A-Z]{1,3}|\\angle\s*[A-Z]{1,3}|[a-zA-Z]\^\{?-1\}?\s*\(\w\)|"
    # a trigonometric ratio of a named angle ("\\tan A = 2", "\\cos(\\theta) = ...", "\\sin \\angle ABC = ...")
    r"\\(?:sin|cos|tan|cot|sec|csc)\s*(?:\(\s*)?(?:[A-Za-z]|\\[a-zA-Z]+|\\angle\s*[A-Z]{1,3})(?:\s*\))?|"
    r"\(\s*[a-zA-Z](?:_\{?\w+\}?)?(?:\s*,\s*[a-zA-Z](?:_\{?\w+\}?)?)+\s*\)|"
    # a named quantity ("Area", "area of the triangle") or ratio ("AB:BC")
    r"[A-Za-z][a-z]{2,}(?:\s+[a-z]+){0,4}|[A-Z]{1,3}(?:_\{?\w+\}?)?\s*:\s*[A-Z]{1,3}(?:_\{?\w+\}?)?)$"
)
_INEQ_OPS = {"<": ("(", ")"), "\\leq": ("[", "]"), ">": ("(", ")"), "\\geq": ("[", "]")}
_FLIPPED = {"<": ">", ">": "<", "\\leq": "\\geq", "\\geq": "\\leq", "\\neq": "\\neq"}
_INEQ_RE = re.compile(r"^\s*([^<>]+?)\s*(<|>|\\leq|\\geq|\\neq)\s*([^<>]+?)\s*$")
_VARIABLE_RE = re.compile(r"^(-?)\s*([a-z])$")
_DOUBLE_INEQ_RE = re.compile(r"^\s*([^<>]+?)\s*(<|\\leq)\s*([a-z])\s*(<|\\leq)\s*([^<>]+)$")
_DOUBLE_INEQ_DOWN_RE = re.compile(r"^\s*([^<>]+?)\s*(>|\\geq)\s*([a-z])\s*(>|\\geq)\s*([^<>]+)$")
_REAL_LINE = "(-\\infty, \\infty)"
_REALS_RE = re.compile(
    r"^(?:\\mathbb\{R\}|all real(?: numbers)?|(?:the set of )?all reals?|\(-\\infty,\s*\+?\\infty\)|"
    r"x \\in \\mathbb\{R\}|\\mathbb\{R\} \(all real numbers\)|every real number|any real number)$",
    re.IGNORECASE,
)
_EMPTY_RE = re.compile(r"^(?:\\emptyset|\\varnothing|\\\{\s*\\\}|\{\s*\}|no solutions?|none|no real solutions?)$",
                       re.IGNORECASE)
_IN_PREFIX_RE = re.compile(r"^[a-z]\s*\\in\s*")
_CIS_RE = re.compile(r"cis\s*\(([^()]*)\)|cis\s*(\\theta|\\frac\{[^{}]*\}\{[^{}]*\}|[\w\\]+)")
_OPENERS, _CLOSERS = "([{", ")]}"


@dataclass(frozen=True)
class Sequence:
    items: tuple[str, ...]
    opener: str  # "" (bare list), "\\{", "(", "["
    closer: str

    @property
    def ordered(self) -> bool:
        return self.opener in ("(", "[")


def top_level_split(text: str, separators: tuple[str, ...]) -> list[str]:
    """Split at separators that sit outside every bracket (`\\{`/`\\}` count as brackets)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        if text.startswith("\\{", i) or text.startswith("\\left", i):
            depth += 1 if text.startswith("\\{", i) else 0
            i += 2
            continue
        if text.startswith("\\}", i):
            depth -= 1
            i += 2
            continue
        ch = text[i]
        if ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            depth -= 1
        elif depth == 0:
            for sep in separators:
                if text.startswith(sep, i):
                    parts.append(text[start:i])
                    i += len(sep)
                    start = i
                    break
            else:
                i += 1
                continue
            continue
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _wrapped(text: str, opener: str, closer: str) -> bool:
    """True if the whole text is one bracket pair `opener ... closer` (not `(1,2)\\cup(3,4)`)."""
    if not (text.startswith(opener) and text.endswith(closer)):
        return False
    inner = text[len(opener):len(text) - len(closer)]
    depth = 0
    for ch in inner:
        if ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def as_sequence(text: str) -> Sequence | None:
    """A list/set/tuple/interval with 2+ items, else None."""
    text = _IN_PREFIX_RE.sub("", text)
    if text.startswith("\\{") and text.endswith("\\}"):
        items = top_level_split(text[2:-2], (",", ";"))
        return Sequence(tuple(items), "\\{", "\\}") if items != [""] else None
    if len(text) >= 2 and text[0] in "([" and text[-1] in ")]":
        inner = text[1:-1]
        if _balanced(inner):
            items = top_level_split(inner, (",",))
            if len(items) == 1:
                items = top_level_split(inner, (";",))  # `(1; 2)`: a semicolon separates coordinates
            if len(items) >= 2:
                return Sequence(tuple(items), text[0], text[-1])
    items = top_level_split(text, (",", ";", "\\text{ and }", " and ", "\\quad", " or "))
    items = [i for i in items if i]
    if len(items) >= 2:
        return Sequence(tuple(items), "", "")
    return None


def lone_set_member(text: str) -> str:
    """`\\{-4\\}` -> `-4`: a set of one value states that value, as `\\{-4, 2\\}` states "-4, 2" (a set that is no
    single braced list, `\\{1\\} \\cup \\{2\\}`, stays as written)."""
    seq = as_sequence(text.strip())
    if seq is None or seq.opener != "\\{" or len(seq.items) != 1 or "\\{" in seq.items[0] or "\\}" in seq.items[0]:
        return text
    return seq.items[0].strip()


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        if ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def expand_pm(text: str) -> list[str] | None:
    r"""`a \pm b` -> [a + b, a - b] for one \pm or \mp anywhere (`\frac{-1\pm\sqrt5}{2}` too), else None."""
    for op, first, second in (("\\pm", "+", "-"), ("\\mp", "-", "+")):
        if text.count(op) == 1 and (op != "\\pm" or "\\mp" not in text):
            return [text.replace(op, first), text.replace(op, second)]
    return None


def union_parts(text: str) -> list[str] | None:
    parts = top_level_split(text, ("\\cup", "U "))
    return parts if len(parts) > 1 else None


_ROW_BREAK_RE = re.compile(r"\\\\(?:\[[^\]]*\])?")
_ONE_BACKSLASH_ROW_BREAK_RE = re.compile(r"\\\\(?:\[[^\]]*\])?|\\(?=[-+]?\d)")


def _matrix_cells(body: str, row_break: re.Pattern[str]) -> list[list[str]]:
    rows = [r for r in row_break.split(body) if r.strip() and r.strip() != "\\hline"]
    return [[cell.strip() for cell in row.split("&")] for row in rows]


def as_matrix(text: str) -> list[list[str]] | None:
    """Cells of a matrix; a scalar in front (`2\\begin{pmatrix}1\\\\2\\end{pmatrix}`) multiplies every cell."""
    text = text.strip()
    scalar = ""
    if not text.startswith(("\\begin", "(", "[")) and (start := text.find("\\begin{")) > 0:
        scalar = re.sub(r"\s*(?:\\cdot|\\times)\s*$", "", text[:start]).strip()
        if len(scalar) > 40 or not _balanced(scalar) or "\\begin" in scalar or "=" in scalar:
            return None
        text = text[start:]
    match = _MATRIX_RE.match(text)
    if not match:
        return None
    cells = _matrix_cells(match.group(2), _ROW_BREAK_RE)
    if len(cells) == 1 and (single := _matrix_cells(match.group(2), _ONE_BACKSLASH_ROW_BREAK_RE)) != cells:
        # A row break written as one backslash before a number (`8&12\-4&20`, an answer-line form): `\-` and
        # `\0` are no LaTeX in a matrix, so they break rows, read only where every row then has as many cells.
        if len({len(row) for row in single}) != 1:
            return None
        cells = single
    if scalar:
        factor = "-1" if scalar == "-" else scalar
        cells = [[f"({factor}) \\cdot ({cell})" for cell in row] for row in cells]
    return cells


def as_letter(text: str) -> tuple[str, str] | None:
    """(letter, rest) for `B`, `(B)`, `(B) 12`, `B) 12`, `B, melted` (the option's text after a comma),
    `option B`, `most likely B`, `most likely "B: crowd."`; None otherwise."""
    stripped = text.strip()
    text = _MOST_LIKELY_RE.sub("", stripped)
    if text != stripped and (quoted := _QUOTED_CHOICE_RE.match(text)) is not None:
        text = quoted.group(1).strip()
    match = _OPTION_RE.match(text) or _LETTER_RE.match(text)
    if not match:
        return None
    letter, rest = match.group(1).upper(), match.group(2).strip(" \\.:,")
    if match.re is _LETTER_RE and not text.startswith("(") and rest and not _LETTER_SEPARATOR_RE.match(text[1:]):
        return None  # "A b" is not a choice
    if rest and _SECOND_CHOICE_RE.match(rest):
        return None  # "A, B", "(A) and (B)": two choices
    if rest and any(m.group(1) != letter for m in _CONTRASTED_CHOICE_RE.finditer(rest)):
        return None  # "B, but it could be C": a second choice offered
    return letter, rest


def parenthesized_choice(text: str) -> tuple[str, str] | None:
    """(letter, content) for an answer that names a choice and restates it in parentheses: `B (a=1)`."""
    match = _PARENTHESIZED_CHOICE_RE.match(text.strip())
    if not match or not _balanced(match.group(2)) or _OTHER_CHOICE_RE.search(match.group(2)):
        return None
    return match.group(1), match.group(2).strip()


def equation_sides(text: str) -> list[str]:
    return top_level_split(text, ("=",))


# A function's value at a given point ("f(2) = 5", "f(\\frac{2\\pi}{3}) = 1"): the point holds no variable.
_VALUE_AT_POINT_RE = re.compile(r"^[a-zA-Z](?:_\{?\w+\}?)?\s*\((?:[^()a-zA-Z=]|\\(?:frac|sqrt|pi|cdot)\b)+\)$")


# A named operator with a letter subscript applied to one vector or letter ("\\text{proj}_{\\mathbf{b}} \\mathbf{a} =",
# normalized `proj_{b} a`; `proj_{b}(a)`): it names the quantity asked as `f(x)` does. Not a function of analysis
# (`\\log_b a = 3` is an equation in a and b).
_NAMED_OPERATOR_RE = re.compile(r"^(?!(?:log|ln|lg|sin|cos|tan|cot|sec|csc|exp|lim|max|min)_)[A-Za-z]{2,}"
                                r"_(?:\{[a-zA-Z]\}|[a-zA-Z])\s*(?:\(\s*[a-zA-Z]\s*\)|[a-zA-Z])$")


def is_simple_lhs(text: str) -> bool:
    text = text.strip()
    return bool(_SIMPLE_LHS_RE.match(text) or _VALUE_AT_POINT_RE.match(text) or _NAMED_OPERATOR_RE.match(text))


def canonical_set_text(text: str) -> str:
    """`\\mathbb{R}` / "all real numbers" -> (-\\infty, \\infty); empty-set spellings -> \\emptyset."""
    stripped = _IN_PREFIX_RE.sub("", text.strip())
    if _REALS_RE.match(stripped) or _REALS_RE.match(text.strip()):
        return _REAL_LINE
    if _EMPTY_RE.match(stripped):
        return "\\emptyset"
    return text


def single_inequality(text: str) -> tuple[str, str, str] | None:
    """(variable, op, bound) for `x > 2`, `2 < x`, `-x > -1` (sides swapped or negated), else None."""
    m = _INEQ_RE.match(text)
    if not m or "\\neq" in m.group(1) + m.group(3):
        return None
    left, op, right = m.groups()
    if (var := _VARIABLE_RE.match(left)) is None:
        if (var := _VARIABLE_RE.match(right)) is None:
            return None
        left, op, right = right, _FLIPPED[op], left
    if var.group(1):  # -x > -1  <=>  x < 1
        op, right = _FLIPPED[op], f"-({right})"
    if _VARIABLE_RE.match(right):
        return None  # x < y relates two variables
    return var.group(2), op, right.strip()


def inequality_to_interval(text: str) -> tuple[str, str] | None:
    """(variable, interval): `x > 2` -> `(2, \\infty)`; `1 \\leq x < 3` -> `[1, 3)`; `x \\neq 2` -> a union."""
    if "<" not in text and ">" not in text and "\\leq" not in text and "\\geq" not in text and "\\neq" not in text:
        return None
    if m := _DOUBLE_INEQ_RE.match(text):
        low, op1, var, op2, high = m.groups()
        return var, f"{_INEQ_OPS[op1][0]}{low.strip()}, {high.strip()}{_INEQ_OPS[op2][1]}"
    if m := _DOUBLE_INEQ_DOWN_RE.match(text):
        high, op1, var, op2, low = m.groups()
        return var, f"{_INEQ_OPS[op2][0]}{low.strip()}, {high.strip()}{_INEQ_OPS[op1][1]}"
    if (single := single_inequality(text)) is None:
        return None
    var, op, bound = single
    if op == "\\neq":
        return var, f"(-\\infty, {bound}) \\cup ({bound}, \\infty)"
    if op in ("<", "\\leq"):
        return var, f"(-\\infty, {bound}{_INEQ_OPS[op][1]}"
    return var, f"{_INEQ_OPS[op][0]}{bound}, \\infty)"


def expand_cis(text: str) -> str:
    """`r\\,cis(t)` -> `r e^{i (t)}` so polar forms parse as complex numbers."""
    if "cis" not in text:
        return text
    return _CIS_RE.sub(lambda m: f"e^{{i ({m.group(1) or m.group(2)})}}", text)
