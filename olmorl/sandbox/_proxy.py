"""The test process's view of the program: a connection and proxies for the program's objects.

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
Every refusal above that only a program probing the boundary causes is noted in `Conn.notes["tamper"]`.
"""

import _signal
import builtins
import json
import os
import select
import signal
import sys
import time

if __name__ != "__main__":  # a module of the server; inside the sandbox the parts are one file
    from olmorl.sandbox._wire import WireError, decode, encode, note_tamper

MAX_REPLY = 8 << 20  # one answer of the program process
# Special names the standard library probes on any object (copy, inspect, functools.wraps, typing):
# refused like every other, but not counted as tampering.
_ROUTINE_PROBES = frozenset(("__deepcopy__", "__copy__", "__getstate__", "__setstate__", "__reduce__",
                             "__reduce_ex__", "__wrapped__", "__signature__", "__name__", "__qualname__",
                             "__origin__", "__parameters__", "__length_hint__", "__fspath__", "__dict__"))
_MISSING = object()


class ProgramDied(BaseException):
    """The program process ended (or broke the protocol) while the test needed it."""


class TestTimeout(BaseException):
    """The test ran past its deadline."""


class ProgramExit(Exception):
    """The program raised SystemExit / KeyboardInterrupt / GeneratorExit inside a call."""


class Conn:
    """The test process's end of one program process: requests, its stdout/stderr, the deadline."""

    def __init__(self, sock_fd, out_fd, err_fd, deadline, out_cap, err_cap):
        self.sock = sock_fd
        self.deadline = deadline
        self.caps = {out_fd: out_cap, err_fd: err_cap}
        self.streams = {out_fd: bytearray(), err_fd: bytearray()}
        self.out_fd, self.err_fd = out_fd, err_fd
        self.capped = set()
        self.open = {out_fd, err_fd}
        self.buffer = bytearray()
        self.dead = None  # why the connection is unusable
        self.timed_out = False
        self.armed = False  # the deadline's signal may raise TestTimeout
        self.proxies = {}  # handle -> Proxy: one per program object, so `is` works
        self.exceptions = {}  # handle -> local exception class
        self.modules = {}
        self.notes = {}  # extra fields of the test's record: `tamper` (see `_wire.TAMPER_KINDS`)
        self.asked_specials = frozenset()  # special attribute names the test's code itself names
        # The program's plain globals as its `ready` message gave them, until the test asks the program
        # anything: program code runs in answer to a request (or in threads of its own, whose timing no
        # test can count on), so until then a read of one needs no round trip.
        self.ready_globals = None

    def trip(self, kind):
        note_tamper(self.notes, kind)

    # -- I/O -----------------------------------------------------------------------------------
    def _pump(self, fds, timeout):
        ready, _, _ = select.select(fds, [], [], max(timeout, 0))
        for fd in ready:
            if fd != self.sock and fd not in self.open:
                continue  # not ours to read (the caller's pidfd)
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            if fd == self.sock:
                if not chunk:
                    raise ProgramDied("the program process ended")
                self.buffer += chunk
                if len(self.buffer) > MAX_REPLY:
                    self.trip("protocol")
                    raise ProgramDied("an answer of the program process exceeded the size limit")
                continue
            if not chunk:
                self.open.discard(fd)
                os.close(fd)
                continue
            room = self.caps[fd] - len(self.streams[fd])
            self.streams[fd] += chunk[:max(room, 0)]
            if len(chunk) > room:
                self.capped.add(fd)
                if fd == self.out_fd:  # over the cap: stop reading; the writer gets EPIPE
                    self.open.discard(fd)
                    os.close(fd)
                # stderr: read on and drop the rest (debug output or a compiler's warnings must not
                # break the program with EPIPE/SIGPIPE)
        return ready

    def receive(self):
        """The program process's next message (a dict)."""
        if self.dead:
            raise ProgramDied(self.dead)
        try:
            while b"\n" not in self.buffer:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    self.timed_out = True
                    raise TestTimeout("the test ran past its time limit")
                self._pump([self.sock, *self.open], remaining)
            line, _, rest = self.buffer.partition(b"\n")
            self.buffer = bytearray(rest)
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                self.trip("protocol")
                raise ProgramDied("the program process sent a malformed message") from None
            if type(message) is not dict:
                self.trip("protocol")
                raise ProgramDied("the program process sent a malformed message")
            return message
        except ProgramDied as exc:
            self.dead = str(exc)
            raise

    def drain_ready(self):
        """Read what is already written to any of our fds, without waiting."""
        while True:  # a capped stderr is not waited on: a leftover writer could keep it ready forever
            fds = [fd for fd in self.open if fd not in self.capped] + ([self.sock] if self.dead is None else [])
            try:
                if not fds or not self._pump(fds, 0):
                    return
            except ProgramDied:
                self.dead = "the program process ended"

    def drain(self, until):
        """Read stdout/stderr until both close or `until` (a monotonic time)."""
        while self.open and time.monotonic() < until:
            self._pump(list(self.open), until - time.monotonic())

    def output(self, fd):
        return bytes(self.streams[fd]).decode("utf-8", "replace")

    # -- requests ------------------------------------------------------------------------------
    def ask(self, request, taint=False):
        self.ready_globals = None  # the program may change its globals while it answers
        if taint:
            request["ref"] = True
        data = (json.dumps(request, separators=(",", ":")) + "\n").encode()
        try:  # a blocking write: the deadline's signal interrupts it if the program never reads
            while data:
                data = data[os.write(self.sock, data):]
        except OSError:
            self.dead = "the program process ended"
            raise ProgramDied(self.dead) from None
        reply = self.receive()
        if "e" in reply:
            raise self.exception(reply["e"])
        if "v" not in reply:
            self.trip("protocol")
            self.dead = "the program process sent a malformed answer"
            raise ProgramDied(self.dead)
        value = self.decode(reply["v"])
        if taint:
            if not isinstance(value, Proxy):
                self.trip("taint")
                raise TypeError("a program object combined with test data must give a program object")
            fresh = Proxy(self, value._o_h, value._o_kind, value._o_name)
            object.__setattr__(fresh, "_o_class", value._o_class)
            object.__setattr__(fresh, "_o_tainted", True)
            return fresh
        return value

    def decode(self, raw):
        try:
            return decode(raw, self.resolve)
        except (WireError, TypeError, ValueError, RecursionError) as exc:
            self.trip("protocol")
            self.dead = f"the program process sent an unreadable value: {exc}"
            raise ProgramDied(self.dead) from None

    def resolve(self, tag, raw):
        if tag == "$m" and type(raw) is str:
            return self.module(raw)
        if tag != "$h" or type(raw.get("$h")) is not int:
            raise WireError(f"unknown tag {tag}")
        kind = raw.get("k")
        if kind == "e":
            return self.exception_class(raw["$h"], raw.get("n", "ProgramError"), raw.get("b", "Exception"))
        found = self.proxy(raw["$h"], "c" if kind == "c" else "o", str(raw.get("n"))[:100])
        if kind != "c" and found._o_class is None:
            object.__setattr__(found, "_o_class", _library_class(raw.get("t"), raw.get("n")) or Proxy)
        return found

    def proxy(self, handle, kind, name):
        found = self.proxies.get(handle)
        if found is None:
            found = self.proxies[handle] = Proxy(self, handle, kind, name)
        return found

    def module(self, name):
        """Our own copy of a module the program imported: never the program's (it may patch it)."""
        if name not in self.modules:
            try:
                self.modules[name] = __import__(name, fromlist=["_"])
            except BaseException:
                self.modules[name] = None
        if self.modules[name] is None:
            raise WireError(f"module {name!r} is not available to the tests")
        return self.modules[name]

    def exception_class(self, handle, name, base):
        cls = self.exceptions.get(handle)
        if cls is None:
            parent = getattr(builtins, base, Exception)
            if not (isinstance(parent, type) and issubclass(parent, Exception)):
                parent = ProgramExit
            cls = self.exceptions[handle] = type(str(name)[:100], (parent,), {"_o_h": handle})
        return cls

    def exception(self, info):
        if type(info) is not dict:
            return ProgramDied("malformed exception")
        message = str(info.get("m", ""))[:2000]
        base = str(info.get("b", "Exception"))
        handle = info.get("h")
        if type(handle) is int:
            return self.exception_class(handle, info.get("t", "ProgramError"), base)(message)
        cls = getattr(builtins, base, None)
        if isinstance(cls, type) and issubclass(cls, Exception):
            return cls(message)
        return ProgramExit(f"{base}: {message}")

    def arg(self, value):
        return encode(value, _test_value)

    def read_global(self, name):
        """A plain global's current value (a test reads it live: a call may have changed it)."""
        if self.ready_globals is not None and name in self.ready_globals:
            return self.decode(self.ready_globals[name])  # decoded afresh, as an answer would be
        return self.ask({"op": "global", "name": name})

    def globals(self, message):
        """The test namespace's view of the program's globals (from the `ready` message)."""
        self.ready_globals = message
        found = {}
        for name, raw in message.items():
            try:
                found[name] = self.decode(raw)
            except ProgramDied:  # an unreadable global: the tests cannot use it
                self.dead = None
        return found


def _test_value(value):
    """Test data going to the program: plain data, or a program object's reference."""
    if isinstance(value, Proxy):
        return {"$h": value._o_h}
    if isinstance(value, type) and "_o_h" in value.__dict__:
        return {"$h": value._o_h}
    if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == "builtins":
        return {"$exc": value.__name__}
    raise WireError(f"a {type(value).__name__} of the test cannot be passed to the program")


def _library_class(module, qualname):
    """The class a program object says it is an instance of, when that is a class of the standard
    library the test process has already imported (`re.Pattern`, `datetime.date`): what `isinstance`
    in the test sees. Only a claim: the object still lives in the program process and compares as one."""
    if type(module) is not str or type(qualname) is not str or module == "__main__" \
            or module.partition(".")[0] not in getattr(sys, "stdlib_module_names", ()) and module != "builtins":
        return None
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if isinstance(found, type) and found.__module__ == module and not issubclass(found, (type, BaseException)):
        return found  # (never a metaclass or an exception: the judge's own isinstance checks stay true)
    return None


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


def install_deadline(conn):
    """SIGALRM at the deadline raises TestTimeout in the test (also inside a loop of its own)."""
    def expired(signum, frame):
        if conn.armed:
            conn.timed_out = True
            raise TestTimeout("the test ran past its time limit")
    conn.armed = True
    _signal.signal(_signal.SIGALRM, expired)  # the C function: no enum conversions on every test
    signal.setitimer(signal.ITIMER_REAL, max(conn.deadline - time.monotonic(), 0.001))


def clear_deadline(conn):
    conn.armed = False
    signal.setitimer(signal.ITIMER_REAL, 0)
