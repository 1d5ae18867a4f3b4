"""The test process's end of one program process: requests and answers, its stdout/stderr, the deadline.

Standard library only (a harness part, see `_harness`). `Conn` sends the test's requests to the program
process and decodes its answers into plain values and `_proxy.Proxy` objects (one per program object, so
`is` works); it reads the program's stdout/stderr up to their caps while it waits, and raises
`TestTimeout` once the test is over its time limit (`TestClock`; also by SIGALRM inside a loop of the test's
own: `install_deadline`).
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
    from olmorl.sandbox._program import PROGRAM_MODULE
    from olmorl.sandbox._proxy import Proxy
    from olmorl.sandbox._wire import WireError, decode, encode, note_tamper

MAX_REPLY = 8 << 20  # one answer of the program process
_TICKS = os.sysconf("SC_CLK_TCK")


def wall_backstop(limit):
    """The wall-clock end of a test whose limit is `limit` CPU seconds: where a test that sleeps or waits
    (and so uses no CPU) ends. The pool sizes a job's budget with it."""
    return 3 * limit + 1.0


def proc_stat(pid):
    """The fields of /proc/<pid>/stat after the command name (the state first); raises OSError once gone."""
    fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)  # a raw read, so the fd is open as briefly as can be:
    try:  # gVisor lets another uid open our fds
        stat = os.read(fd, 4096)
    finally:
        os.close(fd)
    return stat.rsplit(b")", 1)[1].split()


def cpu_seconds(pids):
    """CPU seconds used by the processes `pids` (every thread) and the children they have waited for."""
    ticks = 0
    for pid in pids:
        try:
            ticks += sum(int(field) for field in proc_stat(pid)[11:15])  # utime, stime, cutime, cstime
        except (OSError, ValueError):
            continue  # gone: a child's time is in its parent's once waited for
    return ticks / _TICKS


def runqueue_seconds(pids):
    """Seconds the processes `pids` spent runnable but waiting for a CPU (/proc/<pid>/schedstat's second field; a
    process's main thread). 0 for a process that is gone or a kernel (or gVisor) that does not report it."""
    waited = 0
    for pid in pids:
        try:
            fd = os.open(f"/proc/{pid}/schedstat", os.O_RDONLY)
            try:
                waited += int(os.read(fd, 256).split()[1])
            finally:
                os.close(fd)
        except (OSError, ValueError, IndexError):
            continue
    return waited / 1e9


class TestClock:
    """A test's time limit, in CPU seconds with a wall-clock backstop. The test is over it once it is past
    `limit` seconds both of wall-clock time and of CPU time (its program's processes' and, for a code test,
    this process's own, which runs the test): a test that waited for a CPU on a loaded machine is not cut
    short for the wait, and a program that runs on several CPUs at once gets no more than `limit` of wall
    time. One that sleeps or waits ends at `wall_backstop(limit)`, counted without the time its processes spent
    runnable but waiting for a CPU (a starved program is bounded by its CPU time, however loaded the machine). CPU
    and wait times are read only once the wall clock is past the limit, so a test that ends in time costs nothing
    more."""

    def __init__(self, started, limit, pid, processes=None, own=False):
        self.pid = pid  # the program process
        self.processes = processes  # () -> every process of the program's (None: the program process only)
        self.own = own  # this process's CPU counts (a code test runs here)
        self.restart(started, limit, fresh=True)

    def restart(self, started, limit, fresh=False):
        """Count `limit` from `started` (a monotonic time), from the CPU time used so far (none when `fresh`:
        a new program process)."""
        self.started, self.limit = started, limit
        self.deadline = started + limit
        self.backstop = started + wall_backstop(limit)
        self.base = (0.0 if fresh else cpu_seconds((self.pid,))) + (time.process_time() if self.own else 0.0)
        self.waited_base = self.waited()

    def _pids(self):
        return self.processes() if self.processes else (self.pid,)

    def used(self):
        return cpu_seconds(self._pids()) + (time.process_time() if self.own else 0.0) - self.base

    def waited(self):
        """Run-queue wait of the program's processes and (for a code test) this process so far."""
        return runqueue_seconds(self._pids()) + (runqueue_seconds(("self",)) if self.own else 0.0)

    def left(self):
        """Seconds until the limit may next be reached; 0 once the test is over it."""
        now = time.monotonic()
        if now < self.deadline:
            return self.deadline - now
        backstop = self.backstop + max(self.waited() - self.waited_base, 0.0)  # a wait for a CPU is not the test's
        if now < backstop:
            spare = self.limit - self.used()
            if spare > 0:  # it waited for a CPU: its CPU time decides (a tick is 10 ms)
                self.deadline = min(now + max(spare, 0.01), backstop)
                return self.deadline - now
        return 0.0


class ProgramDied(BaseException):
    """The program process ended (or broke the protocol) while the test needed it."""


class TestTimeout(BaseException):
    """The test ran past its deadline."""


class ProgramExit(Exception):
    """The program raised SystemExit / KeyboardInterrupt / GeneratorExit inside a call."""


class Conn:
    """The test process's end of one program process: requests, its stdout/stderr, the deadline."""

    def __init__(self, sock_fd, out_fd, err_fd, clock, out_cap, err_cap):
        self.sock = sock_fd
        self.clock = clock
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
                remaining = self.clock.left()
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
    if type(module) is not str or type(qualname) is not str or module in ("__main__", PROGRAM_MODULE) \
            or module.partition(".")[0] not in getattr(sys, "stdlib_module_names", ()) and module != "builtins":
        return None
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if isinstance(found, type) and found.__module__ == module and not issubclass(found, (type, BaseException)):
        return found  # (never a metaclass or an exception: the judge's own isinstance checks stay true)
    return None


def install_deadline(conn):
    """SIGALRM at the deadline raises TestTimeout in the test (also inside a loop of its own), once the
    test is over its limit; before that it is set again for when it next may be (`TestClock.left`)."""
    def expired(signum, frame):
        if conn.armed:
            remaining = conn.clock.left()
            if remaining > 0:
                signal.setitimer(signal.ITIMER_REAL, remaining)
                return
            conn.timed_out = True
            raise TestTimeout("the test ran past its time limit")
    conn.armed = True
    _signal.signal(_signal.SIGALRM, expired)  # the C function: no enum conversions on every test
    signal.setitimer(signal.ITIMER_REAL, max(conn.clock.deadline - time.monotonic(), 0.001))


def clear_deadline(conn):
    conn.armed = False
    signal.setitimer(signal.ITIMER_REAL, 0)
