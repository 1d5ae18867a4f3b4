"""The test process inside a sandbox slot (a harness part, standard library only; see `_harness`).

It reads jobs (a program and its tests) from the control input, has the zygote fork a program process for
each test (the next one while the current test runs, the next job's first once a job ends), judges the test against it (`_judge`), cleans up
after it (`_cleanup`) and writes one record per test to the reply output. A command in another language
(`_command`) is built first, in a program process of its own, and reported as test -1.
"""

import _socket
import array
import ctypes
import json
import os
import resource
import signal
import time

if __name__ != "__main__":  # a module of the server; inside the sandbox the parts are one file
    from olmorl.sandbox._cleanup import PIDNS, SCRATCH, cleaned, kill_group, sweep
    from olmorl.sandbox._command import keep_files, restore_files
    from olmorl.sandbox._judge import judge_code, judge_command, judge_stdio, wait_exit
    from olmorl.sandbox._connection import Conn, TestClock, TestTimeout, clear_deadline
    from olmorl.sandbox._wire import FrameReader, note_tamper, write_line

TEST_PROCESS_MIN_MEMORY = 512 << 20  # address space of the test process, whatever the program's limit
ZYGOTE = os.getpid()  # loaded in the zygote, which forks the test process
_SCHED_GETCPU = getattr(ctypes.CDLL(None), "sched_getcpu", None)


def this_cpu():
    """The CPU this process runs on now, or None where libc cannot say."""
    cpu = _SCHED_GETCPU() if _SCHED_GETCPU is not None else -1
    return cpu if cpu >= 0 else None


def pin_to(cpus):
    """Run on `cpus` from now on; False where the kernel refuses (a CPU outside the slot's cpuset)."""
    try:
        os.sched_setaffinity(0, cpus)
        return True
    except (OSError, ValueError):
        return False


def test_process(control, reply, zygote):
    """Read jobs (program + tests), run and judge their tests, write the records."""
    os.chdir("/")
    keep = {1, ZYGOTE, os.getpid()}
    cpus = os.sched_getaffinity(0)
    spare = [_Program(zygote)]  # the next job's first program process (see `run_job`)
    frames = FrameReader(control)
    while True:
        job = frames.read()
        if job is None:
            return 0
        tests = frames.read()
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        ours = max(job["memory_bytes"] or 0, TEST_PROCESS_MIN_MEMORY)  # the tests' own needs, not the program's
        resource.setrlimit(resource.RLIMIT_AS, (ours if hard < 0 else min(ours, hard), hard))  # soft: trusted
        # A job's test process and program processes hand each request and answer to each other: on one CPU
        # (the one the scheduler gave this job) the other wakes without an interrupt to another CPU. Per job,
        # so the next job goes where the scheduler finds room.
        cpu = this_cpu()
        pinned = cpu is not None and pin_to({cpu})
        try:
            code = run_job(job, tests, reply, zygote, keep, cpu if pinned else None, spare)
        finally:
            if pinned:
                pin_to(cpus)
        if code:
            return code


def run_job(job, tests, reply, zygote, keep, cpu, spare):
    """Run a job's tests. `spare` holds the program process forked for this job's first test (or build)
    after the job before it ended, while the server read that job's records; on return it holds the next
    job's. It is a fork of the zygote like every other: it holds nothing of any job until its `go`."""
    budget = job["output_budget"]
    files = {}  # what every test's scratch dir starts with (a command's source or build)
    if job.get("exec"):
        files, ok = build_command(job, reply, zygote, keep, spare)
        if not ok:
            return 4
        if files is None:  # the build failed: no test runs
            tests = []
    following = None
    if tests:
        following = spare.pop()
        following.receive(zygote)
    for index, test in enumerate(tests):
        program, following = following, None
        restore_files(SCRATCH, files)
        program.go(test, job, cpu)
        if index + 1 < len(tests):  # forked while this test runs; it waits for its own go
            following = _Program(zygote)
        record = run_test(job, test, program, following, zygote, keep, budget)
        budget = max(budget - len(record["stdout"]), 0)
        record.update(job=job["id"], i=index)
        write_line(reply, record)
        if not cleaned(zygote):
            return 4  # something survived the cleanup: no later test may see it
    write_line(reply, {"end": True, "job": job["id"]})
    if not spare:
        spare.append(_Program(zygote))
    return 0


def build_command(job, reply, zygote, keep, spare):
    """(files every test of a command starts with, whether the cleanup held). The files are its source,
    or for a compiled language what its one build step kept: the build runs as a program process of
    its own under the build's limits and is reported as test -1; files is None when it failed."""
    sources = {name: (0o644, text.encode()) for name, text in job["sources"].items()}
    build = job.get("build")
    if build is None:
        return sources, True
    step = dict(job, exec=build["exec"], timeout=build["timeout"], memory_bytes=build["memory_bytes"],
                stack_bytes=build.get("stack_bytes"))
    restore_files(SCRATCH, sources)
    program = spare.pop()
    program.receive(zygote)
    spare.append(_Program(zygote))  # for the first test (`run_job`), forked as the build runs
    program.go({"stdin": ""}, step, None)
    record = run_test(step, {}, program, spare[0], zygote, keep, step["max_output"])
    files = keep_files(SCRATCH, build["keep"]) if record["status"] == "passed" else None
    if record["status"] == "passed" and not files:
        record.update(status="error", message="the build produced none of " + ", ".join(build["keep"]))
    elif record["status"] != "passed":
        record["message"] = "the build failed: " + record["message"]
    record.update(job=job["id"], i=-1)
    write_line(reply, record)
    return (files or None), cleaned(zygote)


def _receive_fds(sock, count):
    """A message and up to `count` fds passed with it (socket.py's `recv_fds`, which the zygote does not import)."""
    fds = array.array("i")
    message, ancillary, _, _ = sock.recvmsg(64, _socket.CMSG_LEN(count * fds.itemsize))
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
    return message, list(fds)


class _Program:
    """A program process for one test, forked by the zygote; it starts the program on `go`."""

    def __init__(self, zygote):
        """Asks the zygote for the process now; its pid and fds are read by `receive`."""
        self.pid = None
        self.stdin_fd = None
        self.started = None
        self.mode = None
        zygote.send(b"fork")

    def receive(self, zygote):
        """Its pid and fds (read once the current test is judged, for one forked ahead)."""
        if self.pid is None:
            message, fds = _receive_fds(zygote, 4)
            if len(fds) != 4:
                raise RuntimeError("the zygote did not fork a program process")
            self.pid = int(message)
            self.stdin_fd, self.out_r, self.err_r, sock = fds
            self.mine = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, sock)  # (given: not asked of the kernel)

    def go(self, test, job, cpu):
        stdin_fd, self.stdin_fd = self.stdin_fd, None
        data = (test.get("stdin") or "").encode()
        while data:
            data = data[os.write(stdin_fd, data):]
        os.lseek(stdin_fd, 0, os.SEEK_SET)  # the program's fd 0 shares this offset
        os.close(stdin_fd)
        if job.get("exec"):  # a command: stdin/stdout tests only (the pool checks)
            self.mode = "exec"
        else:
            self.mode = "stdio" if test.get("code") is None and test.get("call") is None else "code"
        start = {key: job.get(key) for key in ("program", "timeout", "load_timeout", "memory_bytes", "file_bytes",
                                               "open_files")}
        if self.mode == "exec":
            start.update({key: job.get(key) for key in ("exec", "env", "memory_rlimit", "stack_bytes")})
        # Only a code test's program answers requests: a stdio test's or a command's runs alone, on any CPU.
        data = json.dumps(dict(start, mode=self.mode, cpu=cpu if self.mode == "code" else None)).encode()
        self.started = time.monotonic()
        self.mine.sendall(b"g%d\n" % len(data) + data)


def run_test(job, test, program, following, zygote, keep, budget):
    run_only = program.mode != "code" and test.get("expected_stdout") is None
    out_cap = min(job["max_output"], budget) if run_only else job["max_output"]
    out_r, err_r, pid = program.out_r, program.err_r, program.pid

    def processes():  # alone in a pid namespace, every process not the harness's is the program's
        return [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in keep]

    clock = TestClock(program.started, job["timeout"], pid, processes if PIDNS else None, own=program.mode == "code")
    conn = Conn(program.mine.fileno(), out_r, err_r, clock, out_cap, job["excerpt"])
    try:
        try:
            if program.mode == "exec":  # judged once the zygote says how it ended
                ended = wait_exit(conn, pid)
                status, message = (None, None) if ended else ("timeout", "the test ran past its time limit")
            elif program.mode == "stdio":
                status, message = judge_stdio(conn, pid, test, job)
            else:
                status, message = judge_code(conn, test, job)
        finally:
            clear_deadline(conn)
    except TestTimeout:  # the deadline's signal landed after the test, before (or while) it was disarmed
        clear_deadline(conn)
        status, message = "timeout", "the test ran past its time limit"
    runtime = time.monotonic() - program.started
    conn.drain_ready()  # the program flushes its output before every answer
    program.mine.close()
    if following is not None:
        following.receive(zygote)
        keep = keep | {following.pid}
    kill_group(pid)  # the program process itself (a session leader keeps its group); the rest below
    zygote.send(f"wait {pid}".encode())
    raw = int(zygote.recv(64))

    def reap():  # the zygote reaps its children and orphans (a SIGCHLD alone may not wake it: gVisor)
        zygote.send(b"reap")
        zygote.recv(64)

    sweep(-1, keep, reap)
    if status is None:  # a command: judged by how it ended
        status, message = judge_command(conn, raw, test, job)
    if os.WIFSIGNALED(raw) and os.WTERMSIG(raw) == signal.SIGSYS:  # the filter killed it (`_seccomp`)
        note_tamper(conn.notes, "denied_syscall")
    for fd in conn.open:
        os.close(fd)
    if status == "passed" and conn.timed_out:
        status, message = "timeout", "the test ran past its time limit"
    stdout = conn.output(out_r)
    return {
        "status": status,
        "message": (message or "")[:2000],
        "timed_out": conn.timed_out,
        "signal": os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else None,
        "exit": os.WEXITSTATUS(raw) if os.WIFEXITED(raw) else None,
        "stdout": stdout if run_only else stdout[:job["excerpt"]],
        "stdout_truncated": out_r in conn.capped,
        "stderr": conn.output(err_r)[-job["excerpt"]:],
        "runtime": round(runtime, 6),
        **conn.notes,  # tamper trips (`_wire.note_tamper` adds one)
    }
