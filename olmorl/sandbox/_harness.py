"""The zygote: started once inside a sandbox, it forks one child per test and reports what happened.

Runs under the sandbox's interpreter with the standard library only (never imports olmorl).
Protocol: one JSON job per line on the control fd (stdin at start), one JSON line per test result
on the reply fd (stdout at start), then `{"end": true}`. A child writes frames (JSON lines tagged
with a per-test nonce) to its own result pipe; the zygote forwards only frames that carry it.

Trust: the zygote never runs untrusted code. It is non-dumpable (children cannot read or write its
memory through /proc) and closes its control fds in every child. Values are serialized strictly
(exact builtin types only) so that an object with a forged `__eq__` never leaves the sandbox, and
expected values never enter it: the server compares outside.
"""

import builtins
import ctypes
import gc
import json
import os
import resource
import select
import signal
import sys
import tempfile
import time
import traceback
import types

# Warm the modules programs commonly import, so each fork starts with them loaded.
import bisect, collections, copy, decimal, fractions, functools, heapq, itertools, math  # noqa: E401,F401
import operator, random, re, statistics, string, typing  # noqa: E401,F401
from collections import Counter, OrderedDict, defaultdict, deque
from decimal import Decimal
from fractions import Fraction

PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
PIDNS = "--pidns" in sys.argv  # alone in a pid namespace: every other pid but 1 is ours to kill
POLL_S = 0.001  # exit polling interval where pidfd_open is missing
SWEEP_LIMIT_S = 5.0  # processes still there this long after SIGKILL: give up the whole sandbox
# The scratch dir is wiped after every test, so it must be named explicitly (never "the cwd").
SCRATCH = sys.argv[sys.argv.index("--scratch") + 1] if "--scratch" in sys.argv else None
# A seccomp filter to load in the zygote itself (hex of a raw BPF program), where no launcher loads
# one (docker: bwrap's --seccomp is not there); every test child inherits it.
SECCOMP_HEX = sys.argv[sys.argv.index("--seccomp-hex") + 1] if "--seccomp-hex" in sys.argv else None
# Extra read-only package dirs the operator mounted (sandbox.site_dirs); after the standard library.
sys.path.extend(sys.argv[i + 1] for i, arg in enumerate(sys.argv[:-1]) if arg == "--site-dir")
SAFE_BUILTINS = dict(builtins.__dict__)  # snapshot before any program can patch builtins
_ITERATOR_TYPES = tuple({type(iter(x)) for x in ([], (), {}, set(), "", range(0), b"")}
                        | {types.GeneratorType, map, filter, zip, enumerate, reversed, range})


class NotPlainData(TypeError):
    pass


def encode(value, depth=0):
    """Plain data to tagged JSON; anything else (a subclass with its own __eq__ ...) is refused."""
    t = type(value)
    if depth > 64:
        raise NotPlainData("value nested deeper than 64 levels")
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return value if -(2 ** 53) < value < 2 ** 53 else {"$i": str(value)}
    if t is float:
        return value if value == value and value not in (float("inf"), float("-inf")) else {"$f": repr(value)}
    if t is list:
        return [encode(v, depth + 1) for v in value]
    if t is tuple:
        return {"$t": [encode(v, depth + 1) for v in value]}
    if t is set or t is frozenset:
        return {"$s" if t is set else "$fs": [encode(v, depth + 1) for v in value]}
    if t is dict or t is Counter or t is OrderedDict or t is defaultdict:
        return {"$d": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in dict.items(value)]}
    if t is deque:
        return {"$q": [encode(v, depth + 1) for v in value]}
    if t is bytes:
        return {"$b": value.hex()}
    if t is complex:
        return {"$c": [repr(value.real), repr(value.imag)]}
    if t is Fraction:
        return {"$fr": [str(value.numerator), str(value.denominator)]}
    if t is Decimal:
        return {"$dec": str(value)}
    raise NotPlainData(f"a value of type {t.__module__}.{t.__qualname__} is not plain data")


def check_plain(value, depth=0):
    """Raise unless `value` is plain data (or a builtin iterator/generator, checked lazily by its user)."""
    if isinstance(value, _ITERATOR_TYPES) and type(value) in _ITERATOR_TYPES:
        return value
    encode(value, depth)
    return value


def guarded(func):
    """Wrap a program function so that only plain data comes back from it into the tests."""
    def call(*args, **kwargs):
        return check_plain(func(*args, **kwargs))
    call.__name__ = getattr(func, "__name__", "function")
    call.__wrapped_program_function__ = True
    return call


def _make_frame_writer(fd, nonce):
    write = os.write
    dumps = json.dumps

    def send(obj):
        obj["n"] = nonce
        data = (dumps(obj, separators=(",", ":")) + "\n").encode()
        while data:
            data = data[write(fd, data):]
    return send


def run_child(job, test, result_fd, nonce):
    """In the forked child: run the program, then the test; report through frames."""
    send = _make_frame_writer(result_fd, nonce)
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    module = types.ModuleType("__main__")
    namespace = module.__dict__
    namespace["__builtins__"] = builtins
    sys.modules["__main__"] = module
    sys.argv = ["main.py"]
    try:
        code = compile(job["program"], "<program>", "exec")
        exec(code, namespace)
        exit_code = 0
    except SystemExit as exc:
        exit_code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # the program failed before any test ran
        traceback.print_exc()
        _flush()
        send({"program_error": f"{type(exc).__name__}: {exc}"[:2000]})
        return
    _flush()
    if test.get("code") is None:  # stdio: the output is the evidence, compared outside
        send({"done": True, "exit": exit_code})
        return
    test_ns = {name: (guarded(v) if isinstance(v, types.FunctionType) and v.__globals__ is namespace else v)
               for name, v in namespace.items()}
    test_ns["__builtins__"] = dict(SAFE_BUILTINS)
    test_ns["__name__"] = "__test__"

    def probe(site, *values):
        send({"site": site, "values": [encode(v) for v in values]})

    def call_entry(name, args):
        fn = test_ns.get(name)
        if fn is None and "Solution" in namespace:
            fn = guarded(getattr(namespace["Solution"](), name))
        if fn is None:
            raise NameError(f"the program defines no function {name!r}")
        return fn(*args)

    test_ns["__probe__"] = probe
    test_ns["__call_entry__"] = call_entry
    test_ns["__args__"] = test.get("args")
    try:
        exec(compile(test["code"], "<test>", "exec"), test_ns)
    except AssertionError as exc:
        _flush()
        send({"failed": f"AssertionError: {exc}"[:2000]})
        return
    except BaseException as exc:
        _flush()
        send({"error": f"{type(exc).__name__}: {exc}"[:2000]})
        return
    _flush()
    send({"done": True})


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def set_child_limits(job):
    cpu = int(job["timeout"]) + 1
    limits = [
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_FSIZE, job["file_bytes"]),
        (resource.RLIMIT_NOFILE, job["open_files"]),
    ]
    if job.get("memory_bytes"):
        kind = resource.RLIMIT_DATA if job.get("memory_rlimit") == "data" else resource.RLIMIT_AS
        limits.append((kind, job["memory_bytes"]))
    if job.get("stack_bytes"):
        limits.append((resource.RLIMIT_STACK, job["stack_bytes"]))
    for which, value in limits:
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass


def sweep(child_pid):
    """Kill every process the test left behind (daemons, forks, zombies' parents)."""
    if child_pid > 0:
        try:
            os.killpg(child_pid, signal.SIGKILL)
        except OSError:
            pass
    if PIDNS:
        # Until the namespace holds only us (and its init): killed processes and zombies both still
        # show in /proc, and a fork racing the kill leaves an orphan that the next round catches.
        # When we are PID 1 (docker), orphans are ours to reap; nothing may carry over to the next
        # test, not even a zombie holding a pid.
        me = os.getpid()
        deadline = time.monotonic() + SWEEP_LIMIT_S
        while True:
            others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
            if not others:
                break
            for pid in others:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            _reap()
            if time.monotonic() > deadline:  # fail safe: the pool replaces a sandbox whose zygote is gone
                sys.exit(f"harness: {len(others)} processes outlived SIGKILL for {SWEEP_LIMIT_S} s")
            time.sleep(0.0005)
    _reap()


def _reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def clean_scratch(path):
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            try:
                os.unlink(os.path.join(root, name))
            except OSError:
                pass
        for name in dirs:
            full = os.path.join(root, name)
            if os.path.islink(full):  # never chmod through a link the program planted (e.g. -> /)
                try:
                    os.unlink(full)
                except OSError:
                    pass
                continue
            try:
                os.chmod(full, 0o700)
                os.rmdir(full)
            except OSError:
                try:
                    os.unlink(full)  # a symlink to a directory
                except OSError:
                    pass


def run_test(job, index, test, scratch):
    """Fork one child for one test, watch it under the deadline, return the result record."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    stdin_fd = os.memfd_create("stdin")
    data = (test.get("stdin") or "").encode()
    while data:
        data = data[os.write(stdin_fd, data):]
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    nonce = os.urandom(16).hex()
    started = time.monotonic()
    try:
        pid = os.fork()
    except OSError as exc:  # out of pids: whatever holds them is swept below
        for fd in (out_r, out_w, err_r, err_w, res_r, res_w, stdin_fd):
            os.close(fd)
        sweep(-1)
        return {"i": index, "timed_out": False, "signal": None, "exit": None, "frames": [], "stdout": "",
                "stdout_truncated": False, "stderr": f"sandbox could not fork: {exc}", "runtime": 0.0}
    if pid == 0:  # child
        try:
            os.setsid()
            os.chdir(scratch)
            os.dup2(stdin_fd, 0)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            keep = res_w if res_w > 2 else os.dup(res_w)
            os.closerange(3, keep)
            os.closerange(keep + 1, 1 << 16)
            set_child_limits(job)
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            if job.get("exec"):
                exec_program(job)
            run_child(job, test, keep, nonce)
        finally:
            os._exit(0)
    for fd in (out_w, err_w, res_w, stdin_fd):
        os.close(fd)
    cap, excerpt = job["max_output"], job["excerpt"]
    caps = {out_r: cap, err_r: excerpt, res_r: 4 << 20}
    streams = {fd: bytearray() for fd in caps}
    closed, capped = set(), set()
    deadline = started + job["timeout"]
    timed_out, status = False, None
    try:
        pidfd = os.pidfd_open(pid)  # readable once the child exits: no polling
    except OSError:  # no pidfd_open (gVisor): poll for the exit every POLL_S instead
        pidfd = None
    while True:
        open_fds = [fd for fd in caps if fd not in closed]
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = status is None
            break
        if status is not None and not open_fds:
            break
        # Once the child is gone, only drain what is already there (a daemon may hold the pipes).
        wait = 0 if status is not None else remaining if pidfd is not None else min(remaining, POLL_S)
        watch = [pidfd] if status is None and pidfd is not None else []
        ready, _, _ = select.select(open_fds + watch, [], [], wait)
        if not ready and status is not None:
            break
        if status is None and (pidfd is None or pidfd in ready):
            got, raw = os.waitpid(pid, os.WNOHANG)
            if got:
                status = raw
            if pidfd is not None:
                ready.remove(pidfd)
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                closed.add(fd)
                continue
            room = caps[fd] - len(streams[fd])
            streams[fd] += chunk[:max(room, 0)]
            if len(chunk) > room:  # over the cap: stop reading, never buffer; the writer gets EPIPE
                closed.add(fd)
                capped.add(fd)
    runtime = time.monotonic() - started
    sweep(pid)
    if status is None:
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            status = 0
    for fd in (*streams, *([pidfd] if pidfd is not None else [])):
        os.close(fd)
    frames = []
    for line in bytes(streams[res_r]).split(b"\n"):
        try:
            frame = json.loads(line)
        except ValueError:
            continue
        if isinstance(frame, dict) and frame.pop("n", None) == nonce:
            frames.append(frame)
    stdout = bytes(streams[out_r])
    return {
        "i": index,
        "timed_out": timed_out,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "frames": frames,
        "stdout": stdout.decode("utf-8", "replace"),
        "stdout_truncated": out_r in capped,
        "stderr": bytes(streams[err_r]).decode("utf-8", "replace")[:excerpt],
        "runtime": round(runtime, 6),
    }


# -- programs in other languages (commands; see olmorl/sandbox/_languages.py) -------------------------
MAX_ARTIFACT_BYTES = 256 << 20


def exec_program(job):
    """In the forked child: become the program's command (fds 0-2 are the test's; every other fd is
    close-on-exec). Signal dispositions go back to the defaults a program expects."""
    env = dict(os.environ)
    env.update({name: value.replace("{scratch}", SCRATCH) for name, value in (job.get("env") or {}).items()})
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    argv = job["exec"]
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        os.write(2, f"sandbox: cannot run {argv[0]}: {exc}\n".encode())
    os._exit(127)


def build_program(job, scratch, reply):
    """Write the program's source; compile it once (`job["build"]`) in a fork under the build's own
    limits, reported as test -1. Returns the files each test starts with (name -> (mode, bytes)), or
    None when the build failed (no test runs)."""
    sources = {name: (0o644, text.encode()) for name, text in job["sources"].items()}
    build = job.get("build")
    if build is None:
        return sources
    restore_files(scratch, sources)
    build_job = dict(job, exec=build["exec"], timeout=build["timeout"], memory_bytes=build["memory_bytes"],
                     stack_bytes=build.get("stack_bytes"))
    record = run_test(build_job, -1, {"stdin": ""}, scratch)
    ok = not record["timed_out"] and record["signal"] is None and record["exit"] == 0
    files = keep_files(scratch, build["keep"]) if ok else None
    clean_scratch(scratch)
    if ok and not files:
        record["exit"], record["stderr"] = 1, "sandbox: the build produced none of " + ", ".join(build["keep"])
        files = None
    reply.write(json.dumps(record) + "\n")
    reply.flush()
    return files


def keep_files(scratch, patterns):
    """The build's artifacts: regular files at the scratch's top level matching `patterns`, read without
    following links (the build wrote them; it may have planted a link or a FIFO)."""
    import fnmatch
    import stat

    kept, total = {}, 0
    for entry in os.scandir(scratch):
        if not any(fnmatch.fnmatchcase(entry.name, p) for p in patterns):
            continue
        info = entry.stat(follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode) or total + info.st_size > MAX_ARTIFACT_BYTES:
            continue
        fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            data = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
        finally:
            os.close(fd)
        total += len(data)
        kept[entry.name] = (stat.S_IMODE(info.st_mode) & 0o755, data)
    return kept


def restore_files(scratch, files):
    for name, (mode, data) in files.items():
        fd = os.open(os.path.join(scratch, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)


def install_seccomp(bpf):
    """Load a seccomp filter on this process (inherited by every fork); no-new-privs comes first."""
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    program = ctypes.create_string_buffer(bpf, len(bpf))
    fprog = SockFprog(len(bpf) // 8, ctypes.addressof(program))
    if prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def main():
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    # As PID 1 (docker) only the signals we handle reach us from inside: don't handle SIGINT, so a
    # program cannot end the zygote with it (children get Python's usual handler back).
    signal.signal(signal.SIGINT, signal.SIG_IGN if os.getpid() == 1 else signal.default_int_handler)
    if SECCOMP_HEX is not None:
        try:
            install_seccomp(bytes.fromhex(SECCOMP_HEX))
        except (OSError, ValueError) as exc:  # fail closed: no sandbox rather than a weaker one
            sys.exit(f"harness: could not load the seccomp filter: {exc}")
    control = os.fdopen(os.dup(0), "rb")
    reply_fd = os.dup(1)
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
    except OSError:  # no /dev/null in this sandbox: an empty memory file does the job
        devnull = os.memfd_create("null")
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    if SCRATCH is None or os.path.realpath(SCRATCH) in ("/", os.path.realpath(tempfile.gettempdir())) \
            and not PIDNS:
        sys.exit("harness: --scratch DIR is required (a private directory; it is wiped after every test)")
    scratch = SCRATCH
    reply = os.fdopen(reply_fd, "w")
    reply.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    reply.flush()
    for line in control:
        job = json.loads(line)
        # Children would otherwise copy-on-write every page the collector touches: freeze the
        # zygote's objects out of the collector's reach (fork then costs what the program touches).
        gc.collect()
        gc.freeze()
        files = build_program(job, scratch, reply) if job.get("exec") else {}
        for index, test in enumerate(job["tests"] if files is not None else ()):
            restore_files(scratch, files)
            record = run_test(job, index, test, scratch)
            clean_scratch(scratch)
            reply.write(json.dumps(record) + "\n")
            reply.flush()
        reply.write('{"end": true}\n')
        reply.flush()


if __name__ == "__main__":
    main()
