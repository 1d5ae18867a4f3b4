"""Ground-truth parsing: open-instruct's IF-RLVR encoding and the older Tulu 3 `func_name` one.

Accepted shapes (open-instruct's `ifeval` verifier): a list holding one
`{"instruction_id": [...], "kwargs": [...]}` dict, given as a dict, a list, JSON text or
Python-literal text (parsed with `ast.literal_eval`, never `eval`), possibly wrapped in one more
list or string. IFBench rows spell the id list `instruction_id_list`. A dict with `func_name` is
the Tulu 3 (`ifeval_old`) encoding.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any

from olmorl.rewards.engine._registry import InvalidInput


@dataclass(frozen=True)
class ConstraintSpec:
    instruction_id: str
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class FuncSpec:
    """Tulu 3 encoding: one function name and its non-null arguments."""

    func_name: str
    args: dict[str, Any]


def _decode(value: Any, depth: int = 0) -> Any:
    if depth > 4:
        raise InvalidInput("ground_truth: nested too deeply")
    if isinstance(value, str):
        text = value.strip()
        try:
            return _decode(json.loads(text), depth + 1)
        except ValueError:
            pass
        try:
            return _decode(ast.literal_eval(text), depth + 1)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise InvalidInput("ground_truth: not JSON or a Python literal") from None
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            return _decode(value[0], depth + 1)
        return list(value)
    return value


def parse_ground_truth(raw: Any) -> list[ConstraintSpec] | FuncSpec:
    value = _decode(raw)
    if isinstance(value, list):
        # Several dicts: concatenate their constraints (a list of single-constraint dicts).
        specs: list[ConstraintSpec] = []
        for part in value:
            part = _decode(part)
            if not isinstance(part, dict):
                raise InvalidInput("ground_truth: expected a dict with instruction_id and kwargs")
            specs.extend(_constraint_specs(part))
        return specs
    if not isinstance(value, dict):
        raise InvalidInput("ground_truth: expected a dict with instruction_id and kwargs")
    if "func_name" in value:
        name = value["func_name"]
        if not isinstance(name, str):
            raise InvalidInput("ground_truth: func_name must be a string")
        return FuncSpec(name, {k: v for k, v in value.items() if k != "func_name" and v is not None})
    return _constraint_specs(value)


def _constraint_specs(value: dict[str, Any]) -> list[ConstraintSpec]:
    ids = value.get("instruction_id", value.get("instruction_id_list"))
    if isinstance(ids, str):
        ids = [ids]
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise InvalidInput("ground_truth: instruction_id must be a list of strings")
    kwargs = value.get("kwargs")
    if kwargs is None:
        kwargs = [None] * len(ids)
    if isinstance(kwargs, dict) and len(ids) == 1:
        kwargs = [kwargs]
    if not isinstance(kwargs, list) or len(kwargs) != len(ids):
        raise InvalidInput(f"ground_truth: kwargs must be a list as long as instruction_id ({len(ids)})")
    specs = []
    for instruction_id, kw in zip(ids, kwargs):
        if kw is not None and not isinstance(kw, dict):
            raise InvalidInput(f"ground_truth: kwargs of {instruction_id} must be a dict or null")
        specs.append(ConstraintSpec(instruction_id, dict(kw or {})))
    return specs
