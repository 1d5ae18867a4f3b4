"""The harness inside a sandbox slot: three kinds of process, so that no verdict comes from a process
the program can reach, and no program can read another job's data.

    zygote (one per slot, warm)  never reads job data; forks program processes as the test process asks
    ├─ test process (one per slot)  reads jobs (program + tests), runs and judges the tests, writes records
    └─ program process × N       one per test: gets its program (nothing else), runs it, answers requests

The test process holds the expected values and is the only writer of records; a program process
only sees what the test asks it (see `_proxy`). Program processes are forked from the zygote, which
has never held any job: a program inherits the warm interpreter, receives its own program text, and
can find nothing of another submission or of any test (not even other tests' stdin) in its memory.

The boundary is the program's uid (`--program-ids`, see `olmorl.sandbox._userns`): a program process
becomes it just before it starts its program, and no harness process (init, zygote, test process)
ever runs as it, so the kernel refuses the program every way into them (/proc/PID/mem, signals,
priority, limits). After every test, with the program's processes gone, a cleaner forked as the
program's uid removes everything the program could have made that outlives a process: files in the
scratch dir and /dev/shm, SysV shared memory, queues and semaphores, POSIX message queues; the test
process then checks that nothing is left, or gives up the slot. Seccomp and non-dumpable processes
stay as a second line. The next test's program process is forked while a test runs (the next job's
first, once a job has ended), keeps the zygote's uid until its `go`, and starts only after that test's cleanup.

Protocol: control input (fd 0 at start) carries per job a length-prefixed header (JSON: job id,
program, limits) and a length-prefixed test list; the reply output (fd 1 at start) carries one JSON
record per test, each with its job id, then `{"end": true, "job": ID}` (`_wire.FrameReader` / `write_line`).
The test process is `_tester`; this file is the zygote and the start. The harness is sent into the sandbox
as the concatenation of `_wire`, `_program`, `_proxy`, `_connection`, `_test_code`, `_judge`, `_command`, `_cleanup`,
`_tester` and this file (standard library only; `_backends.HARNESS_PARTS`); on the server these are ordinary modules.

A program in another language is a command (`_command`): its program process execs it, and the test
process judges it from outside (exit status, stdout). A compiled one is built first by a program
process of its own, reported as test -1; its artifacts are restored into every test's wiped scratch.
"""

import _socket
import _signal  # signal.signal's enum conversions cost a fresh fork ~30 page faults: the C function
import array
import ctypes
import gc
import json
import os
import resource
import signal
import sys

# Warm the modules programs commonly import, so each fork starts with them loaded.
import bisect, collections, copy, decimal, fractions, functools, heapq, itertools, math  # noqa: E401,F401
import operator, random, re, statistics, string, typing  # noqa: E401,F401

if __name__ != "__main__":  # a module of the server; inside the sandbox the parts are one file
    from olmorl.sandbox._cleanup import PIDNS, PROGRAM_IDS, SCRATCH, become_program, clean_as_program
    from olmorl.sandbox._command import exec_command
    from olmorl.sandbox._program import open_stdio, run_program, warm_up
    from olmorl.sandbox._tester import pin_to, test_process
    from olmorl.sandbox._wire import write_line

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
# A seccomp filter to load in the zygote itself (hex of a raw BPF program), where no launcher loads
# one (docker: bwrap's --seccomp is not there); every process inherits it.
SECCOMP_HEX = sys.argv[sys.argv.index("--seccomp-hex") + 1] if "--seccomp-hex" in sys.argv else None
# Extra read-only package dirs the operator mounted (sandbox.site_dirs); after the standard library.
sys.path.extend(sys.argv[i + 1] for i, arg in enumerate(sys.argv[:-1]) if arg == "--site-dir")
# Modules the operator asked every program to start with (sandbox.preload_modules): imported once here.
PRELOAD = sys.argv[sys.argv.index("--preload") + 1].split(",") if "--preload" in sys.argv else []
# Shared temporary directories, never a scratch dir outside a pid namespace (not `tempfile.gettempdir()`:
# tempfile brings shutil, bz2 and lzma, half a megabyte more for every fork to copy).
SYSTEM_TMP = ("/tmp", "/var/tmp", "/usr/tmp", os.environ.get("TMPDIR") or "/tmp")
# A program's sys.stdin/stdout/stderr, made once by the zygote (`open_stdio`).
PROGRAM_STDIO = []  # type: list[typing.TextIO]


# -- limits --------------------------------------------------------------------------------------------
def set_limits(job, cpu=True):
    for which, value in rlimits(job, cpu):
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass


def rlimits(job, cpu=True):
    """The (resource, value) limits of a program process (soft and hard alike)."""
    limits = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, job["file_bytes"]),
              (resource.RLIMIT_NOFILE, job["open_files"])]
    if cpu:
        limits.append((resource.RLIMIT_CPU, int(job["timeout"] + (job.get("load_timeout") or 0)) + 1))
    if job.get("memory_bytes"):
        # The JVM, V8 and Go reserve gigabytes of address space up front: RLIMIT_DATA bounds them instead.
        kind = resource.RLIMIT_DATA if job.get("memory_rlimit") == "data" else resource.RLIMIT_AS
        limits.append((kind, job["memory_bytes"]))
    if job.get("stack_bytes"):  # native code may recurse as deep as its memory allows
        limits.append((resource.RLIMIT_STACK, job["stack_bytes"]))
    return limits


# A code test's start frame, as `warm_start` runs its path (the values are never applied to the zygote).
WARM_START = {"mode": "code", "program": "", "timeout": 1.0, "load_timeout": None, "memory_bytes": 1 << 30,
              "file_bytes": 1 << 20, "open_files": 64, "cpu": 0}


def warm_start(rounds=10):
    """Run in the zygote the parts of a program process's start that are safe to run here (computing its
    limits, keeping its own CPUs), so that each fork finds their code run and specialized: code the zygote
    never ran costs every fork the page faults of its first run."""
    cpus = os.sched_getaffinity(0)
    for _ in range(rounds):
        rlimits(WARM_START)
        pin_to(cpus)  # (the CPUs it has: no change)


# -- the program process's side of a test (forked by the job process) -------------------------------
def start_program(tester):
    """Fork a program process and hand the test process its stdin (an empty memory file it fills),
    stdout, stderr and request socket. The process waits for `g` and a frame (mode, program,
    limits) on the socket: it may be forked while the previous test of its job still runs, but
    starts only once that one is cleaned up. It learns nothing else of the job."""
    stdin_fd = os.memfd_create("stdin")
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    mine, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setsid()
            os.chdir(SCRATCH)
            high = [os.dup(fd) if fd <= 3 else fd for fd in (stdin_fd, out_w, err_w, theirs.fileno())]
            for target, fd in enumerate(high):
                os.dup2(fd, target)
            os.closerange(4, 1 << 16)
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)
            _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
            # `g` and the start frame, sent in one write; nothing follows before our `ready`. Read here, not
            # with a FrameReader: code that the zygote never ran costs a fork its first-run page faults.
            data = os.read(3, 4096)
            if data[:1] == b"g":
                size, _, data = data[1:].partition(b"\n")
                size = int(size)
                while len(data) < size:
                    chunk = os.read(3, size - len(data))
                    if not chunk:
                        raise EOFError("the start frame ended early")
                    data += chunk
                start = json.loads(data)
                if start.get("cpu") is not None:  # the test process's CPU (see `_tester.test_process`)
                    pin_to({start["cpu"]})
                set_limits(start)
                become_program()
                if start["mode"] == "exec":
                    exec_command(start, SCRATCH, 3)
                code = run_program(start["program"], start["mode"], 3, PROGRAM_STDIO)
        finally:
            os._exit(code)
    for fd in (out_w, err_w):
        os.close(fd)
    theirs.close()
    tester.sendmsg([str(pid).encode()], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS,
                                          array.array("i", [stdin_fd, out_r, err_r, mine.fileno()]))])
    for fd in (stdin_fd, out_r, err_r):
        os.close(fd)
    mine.close()
    return pid


def serve_forks(tester):
    """The zygote's loop: fork program processes (and cleaners) as the test process asks; reap every
    child. Alone in a pid namespace the zygote adopts the programs' orphans (a child subreaper) and
    reaps them only when the test process asks (`reap`, after a test): until then each is a zombie in
    /proc that still shows its CPU time, so work moved into a detached process counts (`TestClock`)."""
    ended = {}
    forked = set()  # our program processes and cleaners not reaped yet

    def reap(signum=None, frame=None, orphans=not PIDNS):
        for pid in list(forked):
            try:
                got, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                got, status = pid, 0
            if got:
                ended[pid] = status
                forked.discard(pid)
        while orphans:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in forked or not PIDNS:  # an orphan's status is never asked for
                ended[pid] = status
                forked.discard(pid)

    if PIDNS:
        ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signal.signal(signal.SIGCHLD, reap)
    while True:
        try:
            message = tester.recv(64)
        except OSError:
            message = b""
        if not message:
            return ended
        verb, _, arg = message.decode().partition(" ")
        if verb == "fork":
            forked.add(start_program(tester))
        elif verb == "reap":
            reap(orphans=True)
            tester.send(b"ok")
        elif verb == "clean":  # answered like "wait", with the cleaner's status
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    tester.close()
                    clean_as_program()
                    code = 0
                finally:
                    os._exit(code)
            forked.add(pid)
            arg, verb = str(pid), "wait"
        if verb == "wait":
            pid = int(arg)
            while pid not in ended:
                try:
                    got, status = os.waitpid(pid, 0)
                    ended[got] = status
                except ChildProcessError:
                    ended.setdefault(pid, 0)
            forked.discard(pid)
            tester.send(str(ended.pop(pid)).encode())


# -- the zygote ------------------------------------------------------------------------------------
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
    os.environ.pop("LD_BIND_NOW", None)  # the linker has bound every symbol by now; programs see SANDBOX_ENV
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    # Only program processes get Python's usual SIGINT handler back: a program cannot interrupt us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if SECCOMP_HEX is not None:
        try:
            install_seccomp(bytes.fromhex(SECCOMP_HEX))
        except (OSError, ValueError) as exc:  # fail closed: no sandbox rather than a weaker one
            sys.exit(f"harness: could not load the seccomp filter: {exc}")
    control, reply = os.dup(0), os.dup(1)
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
    except OSError:  # no /dev/null in this sandbox: an empty memory file does the job
        devnull = os.memfd_create("null")
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    PROGRAM_STDIO.extend(open_stdio())
    if SCRATCH is None or os.path.realpath(SCRATCH) in ("/", *map(os.path.realpath, SYSTEM_TMP)) \
            and not PIDNS:
        sys.exit("harness: --scratch DIR is required (a private directory; it is wiped after every test)")
    if PROGRAM_IDS is not None:  # the program's cleaner must remove what the harness restored there
        os.chmod(SCRATCH, 0o777)  # (no sticky bit: docker mounts its tmpfs 1777 whatever mode= says)
    sys.set_int_max_str_digits(0)  # the tests' own conversions; values travel as hex (linear)
    for name in PRELOAD:
        try:
            __import__(name)
        except BaseException as exc:  # a slot that cannot give what was asked does not start
            sys.exit(f"harness: could not preload {name!r}: {type(exc).__name__}: {exc}")
    warm_up(PROGRAM_STDIO)
    warm_start()
    # Children would otherwise copy-on-write every page the collector touches: freeze the
    # zygote's objects out of the collector's reach (fork then costs what the child touches).
    gc.collect()
    gc.freeze()
    # Hand back the free pages of the malloc heap (the harness's compilation left megabytes there; see
    # HARNESS_LOADER): every fork maps what is resident, and every program process's exit unmaps it.
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
    write_line(reply, {"ready": True, "pid": os.getpid()})
    # `_socket`'s, not socket.py's wrappers: socket.py and selectors would add ~0.2 MB to the zygote, mapped by
    # every fork and unmapped by every program process's exit.
    ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
    tester = os.fork()
    if tester == 0:
        code = 3
        try:
            ours.close()
            code = test_process(control, reply, theirs)
        except BaseException as exc:  # a harness fault: the pool replaces the slot
            os.write(2, f"harness: test process failed: {type(exc).__name__}: {exc}\n".encode())
        finally:
            os._exit(code)
    theirs.close()
    os.close(control)  # from here on, the zygote holds nothing of any job
    os.close(reply)
    ended = serve_forks(ours)
    status = ended.get(tester)
    if status is None:
        _, status = os.waitpid(tester, 0)
    sys.exit(0 if status == 0 else f"harness: the test process ended with status {status}")


if __name__ == "__main__":
    main()
