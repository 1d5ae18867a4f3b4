"""The test process's view of the program's objects: proxies, and what they refuse to ask.

Standard library only (a harness part, see `_harness`). This runs in the trusted test process, which
holds the tests and never runs program code. A program object is a `Proxy`: touching it asks the
program process (attribute, call, iteration, `str`, ...). What the program must never decide is a
check of the test against its own data, so:
- `proxy == x` with anything that is not a program object is never asked (False); `proxy != x`
  raises TypeError (never True: a program object is unequal to test data only as far as `==` says
  it is not equal), except against None; ordering with test data raises TypeError; comparisons
  between two program objects are asked (the test is testing the program's own methods then).
- arithmetic between a program object and test data (`v * 3`) is asked, but the answer must be a
  program object and is *tainted*: its truth value, `abs`, `-`, `int`/`float`/`round`, `len`, `hash`,
  `str`/`repr`/`format`, iteration and membership are refused, so `abs(f(x) - expected) < tol` or
  `str(f(x) + 0) == "5"` cannot be forged.
- special names (`__x__`) are never looked up on the program unless the test's own code names that
  attribute: a library of the test process probing `__array_interface__` gets AttributeError.
- a program context manager's `__exit__` runs, but cannot swallow the test's AssertionError (nor
  anything that is not an Exception: the deadline).
- class attributes are fetched all at once per class, so the order of the test's reads (say, the
  expected enum member) is not visible to the program.
Every refusal above that only a program probing the boundary causes is noted in
`_connection.Conn.notes["tamper"]`, the connection that a proxy asks through.
"""

if __name__ != "__main__":  # a module of the server; inside the sandbox the parts are one file
    from olmorl.sandbox._wire import WireError

# Special names the standard library probes on any object (copy, inspect, functools.wraps, typing):
# refused like every other, but not counted as tampering.
_ROUTINE_PROBES = frozenset(("__deepcopy__", "__copy__", "__getstate__", "__setstate__", "__reduce__",
                             "__reduce_ex__", "__wrapped__", "__signature__", "__name__", "__qualname__",
                             "__origin__", "__parameters__", "__length_hint__", "__fspath__", "__dict__"))


def _tainted(*values):
    return any(isinstance(v, Proxy) and v._o_tainted for v in values)


def _refuse(proxy, what):
    proxy._o_conn.trip("taint")
    raise TypeError(f"{what} of a program object derived from test data is not evaluated "
                    "(the program would decide the test's own check)")


class Proxy:
    """A program object, living in the program process."""

    __slots__ = ("_o_conn", "_o_h", "_o_kind", "_o_name", "_o_tainted", "_o_attrs", "_o_class", "__weakref__")

    def __init__(self, conn, handle, kind, name):
        for key, value in (("_o_conn", conn), ("_o_h", handle), ("_o_kind", kind), ("_o_name", name),
                           ("_o_tainted", False), ("_o_attrs", None), ("_o_class", None)):
            object.__setattr__(self, key, value)

    @property
    def __class__(self):
        return self._o_class or Proxy

    @__class__.setter
    def __class__(self, value):  # as every attribute assignment (__setattr__): the program's object's
        self.__setattr__("__class__", value)

    def _o_ask(self, op, **fields):
        return self._o_conn.ask({"op": op, "o": {"$h": self._o_h}, **fields})

    def __getattr__(self, name):
        if name.startswith("_o_"):
            raise AttributeError(name)
        if name.startswith("__") and name.endswith("__") and name not in self._o_conn.asked_specials:
            if name not in _ROUTINE_PROBES:  # the trusted side's probe: never the program's answer
                self._o_conn.trip("special_method")
            raise AttributeError(f"{name} of a program object is not looked up for the test process")
        if self._o_kind == "c":  # a class: all its attributes at once (enum members, constants)
            if self._o_attrs is None:
                pairs = self._o_ask("classattrs")
                object.__setattr__(self, "_o_attrs", {p[0]: p[1] for p in pairs if type(p) is list and len(p) == 2
                                                      and type(p[0]) is str})
            if name in self._o_attrs:
                return self._o_attrs[name]
        return self._o_ask("attr", name=name)

    def __setattr__(self, name, value):
        self._o_ask("setattr", name=name, v=self._o_conn.arg(value))

    def __delattr__(self, name):
        self._o_ask("delattr", name=name)

    def __call__(self, *args, **kwargs):
        conn = self._o_conn
        return self._o_ask("call", a=[conn.arg(a) for a in args], k={k: conn.arg(v) for k, v in kwargs.items()})

    def __repr__(self):
        if self._o_tainted:
            _refuse(self, "repr()")
        return self._o_ask("unary", name="repr")

    def __str__(self):
        if self._o_tainted:
            _refuse(self, "str()")
        return self._o_ask("unary", name="str")

    def __format__(self, spec):
        if self._o_tainted:
            _refuse(self, "format()")
        return self._o_ask("format", spec=spec)

    def __round__(self, *args):
        if self._o_tainted:
            _refuse(self, "round()")
        return self._o_ask("round", a=[self._o_conn.arg(a) for a in args])

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            raw = None
        elif "_o_h" in exc_type.__dict__:  # the program's own exception class
            raw = {"$h": exc_type._o_h}
        else:
            raw = {"$exc": next(c.__name__ for c in exc_type.__mro__ if c.__module__ == "builtins")}
        swallowed = self._o_ask("exit", exc=raw, msg=str(exc)[:2000] if exc is not None else "")
        if exc_type is None or issubclass(exc_type, AssertionError) or not issubclass(exc_type, Exception):
            return False  # the test's own failure (or the deadline) always propagates
        return swallowed

    def __instancecheck__(self, value):
        return bool(self._o_ask("isinstance", v=self._o_conn.arg(value)) is True)

    def __subclasscheck__(self, value):
        return bool(self._o_ask("issubclass", v=self._o_conn.arg(value)) is True)

    def __contains__(self, item):
        if _tainted(self):
            _refuse(self, "membership")
        return self._o_ask("contains", v=self._o_conn.arg(item)) is True

    def __getitem__(self, key):
        return self._o_ask("getitem", k=self._o_conn.arg(key))

    def __setitem__(self, key, value):
        self._o_ask("setitem", k=self._o_conn.arg(key), v=self._o_conn.arg(value))

    def __delitem__(self, key):
        self._o_ask("delitem", k=self._o_conn.arg(key))


def _unary(name, check=None):
    def method(self):
        if self._o_tainted and name not in ("enter",):
            _refuse(self, name)
        value = self._o_ask("unary", name=name)
        if check is not None and not check(value):
            raise TypeError(f"{name}() of a program object returned {type(value).__name__}")
        return value
    return method


for _name, _check in (("neg", None), ("pos", None), ("abs", None), ("invert", None), ("enter", None),
                      ("index", lambda v: type(v) is int), ("int", lambda v: type(v) is int),
                      ("float", lambda v: type(v) is float), ("complex", lambda v: type(v) is complex),
                      ("bool", lambda v: type(v) is bool), ("len", lambda v: type(v) is int and v >= 0),
                      ("hash", lambda v: type(v) is int), ("iter", lambda v: isinstance(v, Proxy)),
                      ("next", None), ("reversed", None)):
    setattr(Proxy, f"__{_name}__", _unary(_name, _check))


def _compare(name):
    def method(self, other):
        if not isinstance(other, Proxy):
            if name == "ne" and other is not None:  # identity would answer True: refuse instead
                raise TypeError(f"a program object ({self._o_name}) is compared with test data by !=; "
                                "only plain values compare with the test's data")
            return NotImplemented  # never let the program judge the test's data (== falls back to identity)
        return self._o_conn.ask({"op": "bin", "name": name, "a": {"$h": self._o_h}, "b": {"$h": other._o_h}})
    return method


for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(Proxy, f"__{_name}__", _compare(_name))


def _arithmetic(name, reflected=False, inplace=False):
    op = ("i" + name.rstrip("_")) if inplace else name

    def method(self, other):
        conn = self._o_conn
        try:
            raw_other = conn.arg(other)
        except WireError:
            return NotImplemented
        a, b = (raw_other, {"$h": self._o_h}) if reflected else ({"$h": self._o_h}, raw_other)
        taint = _tainted(self, other) or not isinstance(other, Proxy)
        return conn.ask({"op": "bin", "name": op, "a": a, "b": b}, taint=taint)
    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lshift", "rshift"):
    _dunder = _name if _name not in ("and", "or") else _name + "_"
    setattr(Proxy, f"__{_name}__", _arithmetic(_dunder))
    setattr(Proxy, f"__r{_name}__", _arithmetic(_dunder, reflected=True))
    setattr(Proxy, f"__i{_name}__", _arithmetic(_dunder, inplace=True))
