"""Judging one test in the test process: a stdio run by its output, a code test by running its code
here against proxies of the program's objects (`_test_code`), a command (another language) by its exit
status and output. Only a test that finishes (no deadline swallowed, the program process alive) passes.
Standard library only (a harness part, see `_harness`).
"""

import json
import os
import select
import sys
import time

if __name__ != "__main__":  # a module of the server; inside the sandbox the parts are one file
    from olmorl.sandbox._connection import ProgramDied, TestTimeout, clear_deadline, install_deadline, proc_stat
    from olmorl.sandbox._proxy import Proxy
    from olmorl.sandbox._test_code import _CHECKS, _count_check, cached_plan, run_test_code, test_namespace
    from olmorl.sandbox._wire import stdout_matches, values_equal


def _exited(pidfd, pid):
    if pidfd is not None:
        return bool(select.select([pidfd], [], [], 0)[0])
    try:
        return proc_stat(pid)[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def wait_exit(conn, pid):
    """Wait for the program process to end (reading its output meanwhile); False past the deadline."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # no pidfd_open (gVisor): poll the process state
        pidfd = None
    try:
        while not _exited(pidfd, pid):
            remaining = conn.clock.left()
            if remaining <= 0:
                conn.timed_out = True
                return False
            fds = [fd for fd in (conn.sock, *conn.open) if fd != conn.sock or conn.dead is None]
            wait = min(remaining, 0.001) if pidfd is None else remaining
            try:
                conn._pump(fds + ([pidfd] if pidfd is not None else []), wait)
            except ProgramDied:
                conn.dead = "closed"
        conn.drain_ready()  # only what is already written: a daemon may hold the pipes open
    finally:
        if pidfd is not None:
            os.close(pidfd)
    return True


def judge_stdio(conn, pid, test, job):
    """Wait for the program to end; its output is the evidence (compared here when expected is given)."""
    if not wait_exit(conn, pid):
        return "timeout", "the test ran past its time limit"
    messages = []
    for line in bytes(conn.buffer).split(b"\n"):
        try:
            messages.append(json.loads(line))
        except ValueError:
            continue
    messages = [m for m in messages if type(m) is dict]
    if conn.out_fd in conn.capped:
        return "failed", "output exceeded the limit"
    failure = next((m["program_error"] for m in messages if "program_error" in m), None)
    if failure is not None:
        return "error", f"the program raised {str(failure)[:2000]}"
    done = next((m for m in messages if m.get("done") is True), None)
    if done is None:
        return "error", "the program process ended before the program finished (killed, or os._exit?)"
    if done.get("exit") not in (0, None):
        return "error", f"the program exited with status {done.get('exit')}"
    return _compare_stdout(conn, test, job)


def judge_command(conn, status, test, job):
    """A command (a program in another language, see `_command`) by what is seen from outside: its
    `waitpid` status (from the zygote) and its stdout. It never talks to this process."""
    if conn.out_fd in conn.capped:
        return "failed", "output exceeded the limit"
    if os.WIFSIGNALED(status):
        return "error", f"the program was killed by signal {os.WTERMSIG(status)}"
    if os.WEXITSTATUS(status) != 0:
        return "error", f"the program exited with status {os.WEXITSTATUS(status)}"
    return _compare_stdout(conn, test, job)


def _compare_stdout(conn, test, job):
    expected = test.get("expected_stdout")
    if expected is None:
        return "passed", None  # run only: the caller reads the output
    if stdout_matches(conn.output(conn.out_fd), expected, job.get("tolerance"), job.get("compare") or "whitespace"):
        return "passed", None
    return "failed", "wrong output"


def judge_code(conn, test, job):
    """Run the test here against proxies of the program's objects; only a finished test that ran a
    check passes (see `TestPlan`). The program's load (its imports) has its own limit, `load_timeout`,
    before the test's clock starts."""
    tolerance = job.get("tolerance")
    try:
        load = job.get("load_timeout")
        if load:  # the clock counts from the program's start: the load gets its own time
            conn.clock.restart(conn.clock.started, job["timeout"] + load, fresh=True)
        install_deadline(conn)
        ready = conn.receive()
        if "program_error" in ready:
            return "error", f"the program raised {str(ready['program_error'])[:2000]}"
        if type(ready.get("ready")) is not dict:
            return "error", "the program process did not start the test"
        if load:
            conn.clock.restart(time.monotonic(), job["timeout"])
            install_deadline(conn)
        program = conn.globals(ready["ready"])
        if test.get("call") is not None:
            _count_check()
            ok = check_call(program, test["call"], test.get("args") or [], test.get("expected"), tolerance)
            if not ok:
                return "failed", "wrong return value"
        else:
            plan = cached_plan(test["code"], tolerance)
            conn.asked_specials = plan.specials
            run_test_code(conn, plan, test_namespace(conn, program, plan, test.get("entry")), tolerance)
        clear_deadline(conn)
    except AssertionError as exc:
        clear_deadline(conn)
        return _unless_broken(conn, "failed", f"AssertionError: {exc}")
    except TestTimeout:
        return "timeout", "the test ran past its time limit"
    except ProgramDied as exc:
        return "error", str(exc)
    except BaseException as exc:
        clear_deadline(conn)
        return _unless_broken(conn, "error", f"{type(exc).__name__}: {exc}")
    finally:
        checks, _CHECKS[0] = _CHECKS[0], 0
    if checks == 0:  # the program steered the test past every check (a test without any is refused earlier)
        return _unless_broken(conn, "failed", "no check ran (no assert statement, unittest assertion or "
                                              "function comparison was executed)")
    return _unless_broken(conn, "passed", None)


def _unless_broken(conn, status, message):
    """A test that swallowed the deadline or the program's death never counts as passed."""
    if conn.timed_out:
        return "timeout", "the test ran past its time limit"
    if conn.dead:
        return "error", conn.dead
    return status, message


def check_call(program, name, args, expected, tolerance):
    fn = program.get(name)
    if fn is None and isinstance(program.get("Solution"), Proxy):
        fn = getattr(program["Solution"](), name)
    if fn is None:
        raise NameError(f"the program defines no function {name!r}")
    value = fn(*args)
    if isinstance(value, tuple):  # APPS/TACO conventions: tuples compare as lists; [expected] also counts
        value = list(value)
    if values_equal(value, expected, tolerance):
        return True
    return type(expected) is list and len(expected) == 1 and values_equal(value, expected[0], tolerance)
