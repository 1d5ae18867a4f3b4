"""Runs inside a fresh verdict container at verify time (stdlib only, copied in with the hidden tests): each
test id's outcome, through unittest (each id on its own) or pytest (one run; the image must carry pytest).
Started as root: `python3 -I -B _runner.py UID:GID FRAMEWORK WORKDIR ID...` (-I: the working directory is not
on sys.path until the framework is imported, so a repository file named `unittest.py` or `pytest.py` cannot
stand in for it).

Two processes. The tests import the agent's code, so they run in a child that drops to UID:GID (no
capability, owns no file of the repository, the hidden tests or this runner) before any repository code
runs; it sends its outcomes up a pipe. The parent stays root: it reads the nonce (the first stdin line) only
after the fork, so the test process never holds it; it waits for the child, kills every process of UID:GID
that is left, and prints the one result line, the nonce then JSON. The test uid cannot signal, trace or read
the memory of a root process, nor write a file it does not own: the runner, the hidden tests and the
repository are root's.

Defence in depth against a forged result from inside the test process (the tests import the agent's code):
before any repository code is imported, the identities of the objects the outcome depends on are recorded
(builtins, unittest's case/result/suite/loader machinery, pytest's runner, reports, hooks and pluggy's
calling code, and these modules in sys.modules); after the run they are compared, and any that changed is
listed in the result's `changed` (verify scores that 0, as tamper). The comparison uses references taken
before the run. Code running in that process can still forge what it sends up the pipe, or a result it does
not leave a trace of (docs/environments-swe.md says how)."""

import json
import os
import signal
import sys
import threading
import unittest

WATCHED = {  # modules whose functions and classes (and those classes' attributes) must not change
    "unittest": ("builtins", "unittest", "unittest.case", "unittest.result", "unittest.suite", "unittest.loader",
                 "json", "os"),
    "pytest": ("builtins", "json", "os", "unittest", "unittest.case", "unittest.result", "pytest", "_pytest.runner",
               "_pytest.reports", "_pytest.main", "_pytest.python", "_pytest.unittest", "_pytest.outcomes",
               "_pytest.skipping", "_pytest.nodes", "_pytest.config", "_pytest.fixtures", "_pytest.terminal",
               "pluggy", "pluggy._hooks", "pluggy._callers", "pluggy._manager", "pluggy._result"),
}


def record(names):
    """[(label, holder, attribute, object)] for the watched modules: their functions and classes, the
    attributes defined on those classes, and the modules themselves as sys.modules holds them."""
    seen = []
    modules = sys.modules
    for name in names:
        module = modules.get(name)
        if module is None:
            continue
        seen.append((name, modules, name, module))
        for attribute, value in list(vars(module).items()):
            if not (callable(value) or isinstance(value, type)):
                continue
            seen.append((f"{name}.{attribute}", module, attribute, value))
            if isinstance(value, type) and value.__module__ == name != "builtins":  # builtin types are immutable
                for key, member in list(vars(value).items()):
                    if key not in ("__dict__", "__weakref__", "__doc__", "__annotations__"):
                        seen.append((f"{name}.{attribute}.{key}", value, key, member))
    return seen


def checker(seen):
    """A function that lists the recorded names whose object changed; it holds its own references to what
    it calls, taken now."""
    missing = object()
    get_module = dict.get
    get_class = type.__dict__["__dict__"].__get__  # a class's own namespace, not a lookup the class decides
    get_vars = vars
    is_a = type.__instancecheck__

    def changed():
        out = []
        for label, holder, attribute, value in seen:
            if is_a(dict, holder):
                now = get_module(holder, attribute, missing)
            elif is_a(type, holder):
                now = get_class(holder).get(attribute, missing)
            else:
                now = get_module(get_vars(holder), attribute, missing)
            if now is not value:
                out.append(label)
        return out

    return changed


def outcome(test_id: str) -> str:
    try:
        suite = unittest.defaultTestLoader.loadTestsFromName(test_id)
    except Exception:  # no such module attribute
        return "missing"
    if suite.countTestCases() == 0:
        return "missing"
    result = unittest.TestResult()
    suite.run(result)
    if result.errors:
        return "error"
    if result.failures or result.unexpectedSuccesses:
        return "failed"
    if len(result.skipped) == result.testsRun:
        return "skipped"
    return "passed"


def pytest_outcomes(workdir: str, ids: list) -> dict:
    import pytest  # imported before the working directory went on sys.path (`main`): this is that module

    outcomes: dict = {}

    class Collect:
        def pytest_runtest_logreport(self, report) -> None:
            if report.when != "call" and report.outcome == "passed":
                return
            status = report.outcome if report.when == "call" or report.outcome == "skipped" else "error"
            if outcomes.get(report.nodeid, "passed") == "passed":  # a failed phase is not undone by a later one
                outcomes[report.nodeid] = status

    present = [test_id for test_id in ids if os.path.exists(test_id.split("::")[0])]  # pytest stops at a missing file
    if present:
        pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", workdir, *present], plugins=[Collect()])
    return {test_id: outcomes.get(test_id, "missing") for test_id in ids}


def run_tests(framework: str, workdir: str, ids: list, channel: int) -> None:
    """The test process: outcomes of `ids`, as one JSON line on the pipe `channel` (opened before any
    repository code runs)."""
    report = os.fdopen(channel, "w")
    if framework == "pytest":
        __import__("pytest")  # the image's, before the working directory is on sys.path: no pytest, no run
    for name in WATCHED[framework]:  # what of pytest and pluggy pytest.main would import anyway
        if name not in sys.modules:
            try:
                __import__(name)
            except ImportError:
                pass
    changed = checker(record(WATCHED[framework]))
    dumps, write, flush = json.dumps, report.write, report.flush
    os.chdir(workdir)
    sys.path.insert(0, workdir)
    if framework == "pytest":
        results = pytest_outcomes(workdir, ids)
    else:
        results = {test_id: outcome(test_id) for test_id in ids}
    write(dumps({"tests": results, "changed": changed()}) + "\n")
    flush()


def drop_root(user: str) -> None:
    """Become `user` ("UID:GID") for good: no supplementary group, no capability, no way back."""
    uid, gid = (int(part) for part in user.split(":"))
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if 0 in os.getresuid() or 0 in os.getresgid():
        raise SystemExit("the test process is still root")


def stop_user(uid: int) -> int:
    """Kill every process of `uid` (the test process's descendants, wherever they went) until none is
    left; how many there were at first."""
    first = None
    for _ in range(200):
        pids = []
        for name in os.listdir("/proc"):
            try:
                if name.isdigit() and os.stat(f"/proc/{name}").st_uid == uid and \
                        open(f"/proc/{name}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
                    pids.append(int(name))
            except (OSError, IndexError):  # gone meanwhile
                continue
        first = len(pids) if first is None else first
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return first or 0


def read_reply(data: bytes) -> dict:
    """The test process's reply; more than one line is a forged one (code in that process wrote too)."""
    lines = data.decode("utf-8", "replace").splitlines()
    if not lines:
        return {"tests": None, "changed": []}
    try:
        reply = json.loads(lines[0])
        tests, changed = reply["tests"], list(reply["changed"])
    except (ValueError, KeyError, TypeError):
        return {"tests": None, "changed": ["an unreadable result"]}
    if len(lines) > 1:
        changed.append("a second result line")
    return {"tests": tests, "changed": changed}


def main() -> None:
    user, framework, workdir, ids = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    # bytecode is read only from here, empty and root's: never a `.pyc` the agent's code wrote beside a source
    pycache = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "pycache")
    os.mkdir(pycache, 0o755)
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    child = os.fork()
    if child == 0:  # the test process: never sees the nonce, never root
        os.close(read_end)
        code = 1
        try:
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            drop_root(user)
            sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"] = pycache  # and for processes it starts
            run_tests(framework, workdir, ids, write_end)
            code = 0
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(write_end)
    nonce = sys.stdin.readline().strip()
    received = bytearray()

    def drain() -> None:  # read while the child runs: a reply bigger than the pipe's buffer must not block it
        while chunk := os.read(read_end, 1 << 16):
            received.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    _, status = os.waitpid(child, 0)
    left = stop_user(int(user.split(":")[0]))
    reader.join(timeout=10)  # every writer is dead: the pipe is at its end
    reply = read_reply(bytes(received))
    reply.update(exit=os.waitstatus_to_exitcode(status), processes_left=left)
    sys.stdout.flush()
    # on a line of its own, whatever the tests printed
    sys.stdout.write("\n" + nonce + json.dumps(reply) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
