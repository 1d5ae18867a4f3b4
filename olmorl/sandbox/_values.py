"""Decode the tagged plain-data values a sandboxed child sent (see `_harness.encode`).

The input is untrusted: only the tags below are understood; anything else is a `ValueError`.
"""

from __future__ import annotations

from collections import deque
from decimal import Decimal
from fractions import Fraction
from typing import Any

_TAGS = {"$i", "$f", "$t", "$s", "$fs", "$d", "$q", "$b", "$c", "$fr", "$dec"}


def decode_value(obj: Any, depth: int = 0) -> Any:
    if depth > 80:
        raise ValueError("value nested too deeply")
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        return [decode_value(v, depth + 1) for v in obj]
    if not isinstance(obj, dict) or len(obj) != 1 or next(iter(obj)) not in _TAGS:
        raise ValueError("malformed value from the sandbox")
    tag, raw = next(iter(obj.items()))
    if tag == "$i":
        return int(raw)
    if tag == "$f":
        return float(raw)
    if tag == "$dec":
        return Decimal(raw)
    if tag == "$b":
        return bytes.fromhex(raw)
    if not isinstance(raw, list):
        raise ValueError("malformed value from the sandbox")
    if tag == "$c":
        return complex(float(raw[0]), float(raw[1]))
    if tag == "$fr":
        return Fraction(int(raw[0]), int(raw[1]))
    items = [decode_value(v, depth + 1) for v in raw]
    if tag == "$t":
        return tuple(items)
    if tag == "$s":
        return set(items)
    if tag == "$fs":
        return frozenset(items)
    if tag == "$q":
        return deque(items)
    return {_hashable(k): v for k, v in (_pair(p) for p in items)}  # "$d"


def _pair(item: Any) -> tuple[Any, Any]:
    if not isinstance(item, list) or len(item) != 2:
        raise ValueError("malformed dict entry from the sandbox")
    return item[0], item[1]


def _hashable(key: Any) -> Any:
    hash(key)
    return key
