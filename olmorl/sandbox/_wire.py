"""Values on the wire between the sandbox's processes: tagged JSON for plain data, plus references.

Standard library only: this file is one of the harness parts sent into the sandbox (see `_harness`).
Plain data (exact builtin types, nested) travels by value; anything else travels as a reference
(`{"$h": id}`) that `fallback` makes and `resolve` reads back. Big integers go as hex: parsing them
is linear (decimal strings are quadratic, and capped at 4300 digits by Python). Between the server
and the zygote, and within the sandbox, messages are length-prefixed JSON frames (`FrameReader`) one way
and JSON lines (`write_line`) the other.
"""

import json
import math
import os
from collections import Counter, OrderedDict, defaultdict, deque
from decimal import Decimal
from fractions import Fraction

MAX_DEPTH = 100  # nesting of one value
_DICTS = (dict, Counter, OrderedDict, defaultdict)


class WireError(ValueError):
    """A value that cannot be sent, or a message that does not decode."""


def encode(value, fallback, depth=0):
    """`value` as tagged JSON; values that are not plain data become `fallback(value)`."""
    t = type(value)
    if depth > MAX_DEPTH:
        raise WireError(f"value nested deeper than {MAX_DEPTH} levels")
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return value if -(2 ** 53) < value < 2 ** 53 else {"$x": hex(value)}
    if t is float:
        return value if math.isfinite(value) else {"$f": repr(value)}
    if t is list:
        return [encode(v, fallback, depth + 1) for v in value]
    if t is tuple:
        return {"$t": [encode(v, fallback, depth + 1) for v in value]}
    if t is set or t is frozenset:
        return {"$s" if t is set else "$fs": [encode(v, fallback, depth + 1) for v in value]}
    if t in _DICTS:
        return {"$d": [[encode(k, fallback, depth + 1), encode(v, fallback, depth + 1)] for k, v in dict.items(value)]}
    if t is deque:
        return {"$q": [encode(v, fallback, depth + 1) for v in value]}
    if t is bytes:
        return {"$b": value.hex()}
    if t is complex:
        return {"$c": [repr(value.real), repr(value.imag)]}
    if t is Fraction:
        return {"$fr": [hex(value.numerator), hex(value.denominator)]}
    if t is Decimal:
        return {"$dec": str(value)}
    return fallback(value)


def decode(obj, resolve, depth=0):
    """The value `encode` made; `resolve(tag, raw)` reads references ("$h", "$m", ...)."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if obj is None or type(obj) in (bool, int, float, str):
        return obj
    if type(obj) is list:
        return [decode(v, resolve, depth + 1) for v in obj]
    if type(obj) is dict and "$h" in obj:  # a reference, with what the sender says about it
        return resolve("$h", obj)
    if type(obj) is not dict or len(obj) != 1:
        raise WireError("malformed value")
    tag, raw = next(iter(obj.items()))
    if tag == "$x":
        return int(_text(raw), 16)
    if tag == "$f":
        return float(_text(raw))
    if tag == "$dec":
        return Decimal(_text(raw))
    if tag == "$b":
        return bytes.fromhex(_text(raw))
    if tag in ("$t", "$s", "$fs", "$q", "$d", "$c", "$fr"):
        if type(raw) is not list:
            raise WireError("malformed value")
        if tag == "$c":
            return complex(float(_text(raw[0])), float(_text(raw[1])))
        if tag == "$fr":
            return Fraction(int(_text(raw[0]), 16), int(_text(raw[1]), 16))
        items = [decode(v, resolve, depth + 1) for v in raw]
        if tag == "$t":
            return tuple(items)
        if tag == "$s":
            return set(items)
        if tag == "$fs":
            return frozenset(items)
        if tag == "$q":
            return deque(items)
        if not all(type(p) is list and len(p) == 2 for p in items):
            raise WireError("malformed dict")
        return {k: v for k, v in items}
    return resolve(tag, raw)


def _text(raw):
    if type(raw) is not str or len(raw) > 1 << 20:
        raise WireError("malformed value")
    return raw


# -- comparisons (run in the sandbox's trusted test process) -----------------------------------------
def _is_number(x):
    return type(x) in (int, float, Fraction, Decimal)


def values_equal(a, b, tol=None):
    """`a == b` on plain data, numbers within `tol` (relative or absolute) when given."""
    if tol is not None and _is_number(a) and _is_number(b) and not (type(a) is int and type(b) is int):
        try:
            return math.isclose(float(a), float(b), rel_tol=tol, abs_tol=tol)
        except OverflowError:  # a number beyond float range: only exact equality can hold
            return a == b
    if tol is not None and type(a) is type(b) and type(a) in (list, tuple) and len(a) == len(b):
        return all(values_equal(x, y, tol) for x, y in zip(a, b))
    if tol is not None and type(a) is dict and type(b) is dict and a.keys() == b.keys():
        return all(values_equal(a[k], b[k], tol) for k in a)
    return a == b


def normalize_output(text):
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def stdout_matches(actual, expected, tol=None, compare="whitespace"):
    """whitespace: line by line, trailing whitespace and trailing blank lines ignored; tokens: the
    whitespace-separated tokens compared (line breaks and runs of spaces alike, as most judges' default
    checkers do); exact: byte for byte. With `tol`, number tokens compare within it (not for exact)."""
    if compare == "exact":
        return actual == expected
    if compare == "tokens":
        actual, expected = " ".join(actual.split()), " ".join(expected.split())
    got, want = normalize_output(actual), normalize_output(expected)
    if got == want:
        return True
    if tol is None or len(got) != len(want):
        return False
    for line_got, line_want in zip(got, want):
        tokens_got, tokens_want = line_got.split(), line_want.split()
        if len(tokens_got) != len(tokens_want):
            return False
        for a, b in zip(tokens_got, tokens_want):
            if a == b:
                continue
            try:
                x, y = float(a), float(b)
            except ValueError:
                return False
            if not (math.isfinite(x) and math.isfinite(y) and math.isclose(x, y, rel_tol=tol, abs_tol=tol)):
                return False
    return True


# -- tamper telemetry ----------------------------------------------------------------------------------
# How a program tripped the sandbox's boundary (a fixed set: the server's metric labels). A trip never
# earns anything: the operation is refused (or the test ends); the record only says it happened.
# (A kill aimed at a harness process is refused by the kernel, another uid's, and not seen here.)
TAMPER_KINDS = ("special_method", "taint", "protocol", "denied_syscall")
# The same for a task container's verify (the `swe` environment): changes dropped from the agent's diff
# (olmorl.rewards.environments.swe._changes says which), and a replaced result machinery in the test process.
TASK_TAMPER_REASONS = ("test_file", "test_framework", "bytecode", "not_a_file")
RESULT_FORGING = "result_forging"
REPLACED_FILE = "replaced_file"  # a file of the verdict container replaced during the run (`swe._writable`)
TASK_TAMPER_KINDS = (*TASK_TAMPER_REASONS, RESULT_FORGING, REPLACED_FILE)


def note_tamper(record, kind):
    """Add one trip of `kind` to a test record's `tamper` list (the test process's records)."""
    if kind not in TAMPER_KINDS:
        raise ValueError(f"unknown tamper kind {kind!r}")
    record.setdefault("tamper", []).append(kind)


class FrameReader:
    """Length-prefixed frames from `fd`, read a chunk at a time (a frame's length is not read a byte at a
    time: on a filtered process every `read` is a system call through the seccomp filter). The bytes past a
    frame stay here for the next one, so one reader must read every frame of its fd."""

    def __init__(self, fd, data=b""):
        self.fd = fd
        self.buffer = bytearray(data)

    def _fill(self, size):
        chunk = os.read(self.fd, size)  # (each read allocates its whole size: no more than the frame needs)
        self.buffer += chunk
        return bool(chunk)

    def read(self):
        """The next frame's value, or None where the fd closes before a frame's length."""
        while True:
            end = self.buffer.find(b"\n", 0, 21)
            if end >= 0:
                break
            if len(self.buffer) > 20:
                raise ValueError("malformed frame length")
            if not self._fill(4096):  # the length and, for most frames, all of their data
                return None
        size = int(self.buffer[:end])
        stop = end + 1 + size
        while len(self.buffer) < stop:
            if not self._fill(min(stop - len(self.buffer), 1 << 20)):
                raise EOFError("control input closed inside a frame")
        data = self.buffer[end + 1:stop]
        del self.buffer[:stop]
        return json.loads(data)


def write_line(fd, obj):
    data = (json.dumps(obj, ensure_ascii=True, separators=(",", ":")) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]
