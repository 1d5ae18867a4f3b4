"""Expected calls in BFCL's ground-truth form, and how a parsed call is matched against one.

Ground truth (BFCL's `possible_answer`): a list with one entry per expected call,
`{"function_name": {"argument": [acceptable values...], ...}}`; `[]` means no call is expected. An
argument whose list holds `""` is optional: it may be left out. A dict among the acceptable values
has the same form again (key -> list of acceptable values).

A value matches an acceptable value when (recursively):
- strings: equal after BFCL's standardization (lower case; spaces and `,./-_*^` removed; `'` read as `"`);
- numbers: equal; an integer is accepted where a float is acceptable (BFCL's int -> float coercion),
  a float is not accepted where an integer is, and a boolean is never a number;
- booleans and null: equal;
- lists: same length, each element matching the acceptable list's element at that position;
- dicts: every key acceptable and matching, every non-optional key present.
"""

from __future__ import annotations

import json
import re
from typing import Any

from olmorl.rewards.engine._registry import InvalidInput
from olmorl.rewards.function_call._parse import Call

ExpectedCall = tuple[str, dict[str, list[Any]]]  # function name, argument -> acceptable values
MAX_CALLS = 128  # expected calls in a ground truth, and calls in a response, that are matched at most
_STANDARDIZE = re.compile(r"[ ,./\-_*^]")


def parse_expected(raw: Any) -> list[ExpectedCall]:
    """The expected calls from BFCL's form (or a JSON string holding it); InvalidInput names what is wrong."""
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            raise InvalidInput("ground_truth is a string but not JSON; give BFCL's list of "
                               '{"function": {"argument": [acceptable values]}}') from None
    if not isinstance(value, list):
        raise InvalidInput('ground_truth must be a list of {"function": {"argument": [acceptable values]}} '
                           f"([] when no call is expected), got {type(value).__name__}")
    if len(value) > MAX_CALLS:
        raise InvalidInput(f"ground_truth expects {len(value)} calls; at most {MAX_CALLS} are matched")
    calls = []
    for i, entry in enumerate(value):
        if not isinstance(entry, dict) or len(entry) != 1:
            raise InvalidInput(f"ground_truth[{i}] must be an object with exactly one key, the function name")
        name, spec = next(iter(entry.items()))
        if not name:
            raise InvalidInput(f"ground_truth[{i}]: empty function name")
        calls.append((name, _checked_spec(spec, f"ground_truth[{i}].{name}")))
    return calls


def _checked_spec(spec: Any, where: str) -> dict[str, list[Any]]:
    if not isinstance(spec, dict):
        raise InvalidInput(f"{where} must map each argument to a list of acceptable values")
    for key, acceptable in spec.items():
        if not isinstance(acceptable, list) or not acceptable:
            raise InvalidInput(f"{where}.{key} must be a non-empty list of acceptable values (BFCL's form; "
                               '"" in it marks the argument optional)')
        for value in acceptable:
            _check_nested(value, f"{where}.{key}")
    return spec


def _check_nested(value: Any, where: str) -> None:
    if isinstance(value, dict):
        _checked_spec(value, where)
    elif isinstance(value, list):
        for item in value:
            _check_nested(item, where)


def standardize(text: str) -> str:
    return _STANDARDIZE.sub("", text).lower().replace("'", '"')


def names_match(given: str, expected: str) -> bool:
    """Equal, or equal once the expected name's dots are underscores (OpenAI names cannot hold dots)."""
    return given == expected or given == expected.replace(".", "_")


def value_matches(given: Any, acceptable: Any) -> bool:
    if isinstance(acceptable, bool) or acceptable is None:
        return type(given) is type(acceptable) and given == acceptable
    if isinstance(acceptable, (int, float)):
        if isinstance(given, bool) or not isinstance(given, (int, float)):
            return False
        if isinstance(given, float) and not isinstance(acceptable, float):
            return False  # a float where an integer is expected: a type error, as in BFCL
        return float(given) == float(acceptable)
    if isinstance(acceptable, str):
        return isinstance(given, str) and standardize(given) == standardize(acceptable)
    if isinstance(acceptable, list):
        return isinstance(given, list) and len(given) == len(acceptable) and \
            all(value_matches(g, a) for g, a in zip(given, acceptable))
    if isinstance(acceptable, dict):
        return isinstance(given, dict) and arguments_mismatch(given, acceptable, "") is None
    return False


def arguments_mismatch(given: dict[str, Any], spec: dict[str, list[Any]], where: str) -> str | None:
    """Why `given` does not match `spec`, or None when it does."""
    for key, value in given.items():
        if key not in spec:
            return f"unexpected argument {where}{key!r}"
        if not any(value_matches(value, acceptable) for acceptable in spec[key]):
            return f"argument {where}{key!r} = {_short(value)} is none of {_short(spec[key])}"
    for key, acceptable in spec.items():
        if key not in given and "" not in acceptable:
            return f"missing argument {where}{key!r}"
    return None


def call_mismatch(call: Call, expected: ExpectedCall) -> str | None:
    name, spec = expected
    if not names_match(call.name, name):
        return f"called {call.name!r}, expected {name!r}"
    return arguments_mismatch(call.arguments, spec, "")


def best_matching(calls: list[Call], expected: list[ExpectedCall]) -> tuple[int, list[str]]:
    """The most expected calls that distinct calls satisfy (any order: a maximum bipartite matching), and for
    each expected call left unmatched, why its closest call failed."""
    fits = [[call_mismatch(call, exp) is None for call in calls] for exp in expected]
    owner: list[int | None] = [None] * len(calls)  # the expected call each call is assigned to

    def assign(e: int, seen: set[int]) -> bool:  # Kuhn's augmenting path
        for c, fit in enumerate(fits[e]):
            if fit and c not in seen:
                seen.add(c)
                held = owner[c]
                if held is None or assign(held, seen):
                    owner[c] = e
                    return True
        return False

    matched = sum(assign(e, set()) for e in range(len(expected)))
    assigned = set(owner)
    errors = []
    for e, exp in enumerate(expected):
        if e in assigned:
            continue
        reasons = [call_mismatch(call, exp) for call in calls]
        same_name = [r for call, r in zip(calls, reasons) if names_match(call.name, exp[0]) and r]
        errors.append(f"{exp[0]}: " + (same_name[0] if same_name else "no call of this function"))
    return matched, errors


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "..."
