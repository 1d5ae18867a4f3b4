"""The pure parts of the `sql` verifier: the candidate query in a response, whether the reference orders its
result, and comparing two result sets.

Result sets compare as lists of rows, each row a tuple of its values in column order (column names are
ignored). Unless the reference orders its result they compare as multisets: the same rows, each as often.
Values: NULL equals NULL; numbers equal when `math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)` (an INTEGER
1 equals a REAL 1.0); text and blobs equal exactly; values of different kinds never equal. A multiset
comparison sorts both sides (numbers by their value rounded to 9 significant digits) and compares them
row by row.
"""

from __future__ import annotations

import math
import re
from typing import Any

from olmorl.rewards.text import strip_thinking

REL_TOL, ABS_TOL = 1e-6, 1e-9
_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)
# What the ORDER BY rule skips: string literals, quoted identifiers, comments.
_OPAQUE = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?(?:\*/|\Z)", re.DOTALL)
_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)


def extract_query(response: str) -> str:
    """The candidate query: after the last `</think>`, the last ```sql fenced block, else the last fenced
    block of any tag, else the whole text; surrounding whitespace and trailing semicolons removed."""
    text = strip_thinking(response)
    blocks = _FENCE.findall(text)
    sql = [body for tag, body in blocks if tag.lower() == "sql"]
    if sql:
        text = sql[-1]
    elif blocks:
        text = blocks[-1][1]
    return text.strip().rstrip(";").strip()


def orders_result(query: str) -> bool:
    """Whether a query orders its result: it has `ORDER BY` outside every parenthesis, once string
    literals, quoted identifiers and comments are set aside. So `ORDER BY` in a subquery or a window
    (`OVER (ORDER BY ...)`) does not count; in a compound query's last part it does."""
    text = _OPAQUE.sub(" ", query)
    depth, top = 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(depth - 1, 0)
        elif depth == 0:
            top.append(char)
            continue
        top.append(" ")
    return bool(_ORDER_BY.search("".join(top)))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def values_equal(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        if math.isinf(a) or math.isinf(b):
            return a == b
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return type(a) is type(b) and a == b


def rows_equal(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))


def _sort_key(row: list[Any]) -> tuple[Any, ...]:
    # Kinds first (NULL, number, text, blob), then the value; numbers rounded to 9 significant digits, so
    # values within the tolerance sort to the same place (unless they straddle a rounding boundary).
    key: list[tuple[int, Any]] = []
    for value in row:
        if value is None:
            key.append((0, 0))
        elif _is_number(value):
            key.append((1, float(f"{value:.9g}") if math.isfinite(value) else value))
        elif isinstance(value, str):
            key.append((2, value))
        else:
            key.append((3, str(value)))
    return tuple(key)


def results_match(reference: list[list[Any]], candidate: list[list[Any]], ordered: bool) -> bool:
    if len(reference) != len(candidate):
        return False
    if ordered:
        return all(rows_equal(r, c) for r, c in zip(reference, candidate))
    return all(rows_equal(r, c) for r, c in zip(sorted(reference, key=_sort_key), sorted(candidate, key=_sort_key)))
