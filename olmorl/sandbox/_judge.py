"""Judging one test in the test process: a stdio run by its output, a code test by running it here
against proxies of the program's objects, a command (another language) by its exit status and output.
Only a test that finishes (no deadline swallowed, the program process alive) passes. Standard library
only (a harness part, see `_harness`).
"""

import ast
import builtins
import json
import os
import select
import time

if __name__ != "__main__":  # a module of the server; inside the sandbox the parts are one file
    from olmorl.sandbox._proxy import ProgramDied, Proxy, TestTimeout, clear_deadline, install_deadline
    from olmorl.sandbox._wire import stdout_matches, values_equal


def _exited(pidfd, pid):
    if pidfd is not None:
        return bool(select.select([pidfd], [], [], 0)[0])
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
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
            remaining = conn.deadline - time.monotonic()
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
    """Run the test here against proxies of the program's objects; only a finished test passes."""
    tolerance = job.get("tolerance")
    try:
        install_deadline(conn)
        ready = conn.receive()
        if "program_error" in ready:
            return "error", f"the program raised {str(ready['program_error'])[:2000]}"
        if type(ready.get("ready")) is not dict:
            return "error", "the program process did not start the test"
        namespace = {"__builtins__": dict(vars(builtins)), "__name__": "__test__"}
        namespace.update(conn.globals(ready["ready"]))
        if test.get("call") is not None:
            ok = check_call(namespace, test["call"], test.get("args") or [], test.get("expected"), tolerance)
            if not ok:
                return "failed", "wrong return value"
        else:
            namespace["__olmorl_close__"] = lambda a, b: values_equal(a, b, tolerance)
            exec(compile_test(test["code"], tolerance), namespace)
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
    return _unless_broken(conn, "passed", None)


def _unless_broken(conn, status, message):
    """A test that swallowed the deadline or the program's death never counts as passed."""
    if conn.timed_out:
        return "timeout", "the test ran past its time limit"
    if conn.dead:
        return "error", conn.dead
    return status, message


def check_call(namespace, name, args, expected, tolerance):
    fn = namespace.get(name)
    if fn is None and isinstance(namespace.get("Solution"), Proxy):
        fn = getattr(namespace["Solution"](), name)
    if fn is None:
        raise NameError(f"the program defines no function {name!r}")
    value = fn(*args)
    if isinstance(value, tuple):  # APPS/TACO conventions: tuples compare as lists; [expected] also counts
        value = list(value)
    if values_equal(value, expected, tolerance):
        return True
    return type(expected) is list and len(expected) == 1 and values_equal(value, expected[0], tolerance)


def compile_test(source, tolerance):
    """The test's code; with a tolerance, `a == b` / `a != b` compare numbers within it."""
    tree = ast.parse(source)
    if tolerance is not None:
        tree = _Tolerant().visit(tree)
        ast.fix_missing_locations(tree)
    return compile(tree, "<test>", "exec")


class _Tolerant(ast.NodeTransformer):
    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            return node
        call = ast.Call(func=ast.Name(id="__olmorl_close__", ctx=ast.Load()),
                        args=[node.left, node.comparators[0]], keywords=[])
        result = call if isinstance(node.ops[0], ast.Eq) else ast.UnaryOp(op=ast.Not(), operand=call)
        return ast.copy_location(result, node)
