"""A test's time limit is CPU time with a wall-clock backstop (`_connection.TestClock`): a correct program
that waited for a CPU on a loaded machine is not cut short, a program that computes too long still times
out, and one that sleeps or waits ends at the backstop (3 x limit + 1 s).

Real bwrap slots. Each program burns a measured amount of its own CPU time (`time.process_time`), so its
CPU cost does not depend on the machine's speed or load; a wait for a CPU is made exact by stopping the
program's processes (spinning processes do not do it reliably: the slot's cgroup gets its own CPU share).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from olmorl.sandbox import SandboxPool
from olmorl.sandbox import TestInput as SandboxTest
from test_code_containment import _descendants, is_program_uid

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

LIMIT_S = 1.0
BURN = "import time\n_end = time.process_time() + {seconds}\nwhile time.process_time() < _end:\n    pass\n"


def run(program: str, tests: list[SandboxTest], timeout_s: float = LIMIT_S) -> list:
    async def main():
        pool = SandboxPool("bwrap", slots=1)
        await pool.start()
        try:
            runs, failure = await pool.run(program, tests, timeout_s=timeout_s)
            assert failure is None, failure
            return runs
        finally:
            await pool.stop()
    return asyncio.run(main())


class _ProgramHold:
    """Waits (up to 30 s) for the program's processes to appear, holds each with `_hold`, then keeps them held
    for `seconds` with `_keep` and lets go. The pool runs in this process, so the program's processes are this
    process's descendants with a program uid."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.held = seconds, set()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        deadline = time.monotonic() + 30
        while not self.held and time.monotonic() < deadline:
            for pid in _descendants(os.getpid()):
                try:
                    uid = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
                    if is_program_uid(uid):
                        self._hold(pid)
                        self.held.add(pid)
                except (OSError, IndexError):
                    continue
            time.sleep(0.01)
        self._keep()

    def _hold(self, pid: int) -> None:
        raise NotImplementedError

    def _keep(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.thread.join()


class StalledProgram(_ProgramHold):
    """Stops the program's processes (SIGSTOP) for `seconds`, as a loaded machine's scheduler would keep them
    waiting for a CPU: wall-clock time passes and no CPU time is used."""

    def _hold(self, pid: int) -> None:
        os.kill(pid, signal.SIGSTOP)

    def _keep(self) -> None:
        time.sleep(self.seconds)
        for pid in self.held:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass


class StarvedProgram(_ProgramHold):
    """Keeps the program's processes runnable but off the CPU for `seconds`, as a loaded machine's scheduler does: each
    is pinned to CPU 0, where a SCHED_FIFO spinner (this process's child, as root) holds the CPU (the kernel's
    real-time throttling leaves them about 5% of it). Unlike a stopped process, a starved one is counted by the kernel
    as waiting on the run queue."""

    SPIN = ("import os, sys, time\nos.sched_setaffinity(0, {0})\n"
            "os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))\n"
            "end = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n")

    def _hold(self, pid: int) -> None:
        os.sched_setaffinity(pid, {0})

    def _keep(self) -> None:
        subprocess.run([sys.executable, "-c", self.SPIN, str(self.seconds)], check=True)


def stdio(expected: str = "ok\n") -> list[SandboxTest]:
    return [SandboxTest(stdin="", expected_stdout=expected)]


@pytest.mark.skipif(os.geteuid() != 0, reason="a program uid of its own needs a root server")
def test_a_program_kept_waiting_for_a_cpu_passes():
    program = "import time\ntime.sleep(0.3)\n" + BURN.format(seconds=0.3) + "print('ok')\n"
    with StalledProgram(1.5) as stall:
        [result] = run(program, stdio())
    assert stall.held, "the program's process was never seen"
    assert result.status == "passed", (result.status, result.message)
    assert result.runtime_s > LIMIT_S + 0.5, result.runtime_s


@pytest.mark.skipif(os.geteuid() != 0 or len(os.sched_getaffinity(0)) < 2,
                    reason="starving a program needs root (SCHED_FIFO) and a second CPU for the rest")
def test_a_program_starved_of_cpu_past_the_backstop_passes():
    """Kept runnable without a CPU past the wall-clock backstop (3 x 1 + 1 s), a program that needs 0.6 s of CPU
    still passes: the time it waited on the run queue is not counted against the backstop."""
    program = "import time\ntime.sleep(0.3)\n" + BURN.format(seconds=0.6) + "print('ok')\n"
    with StarvedProgram(5.0) as starve:
        [result] = run(program, stdio())
    assert starve.held, "the program's process was never seen"
    assert result.status == "passed", (result.status, result.message, result.runtime_s)
    assert result.runtime_s > 3 * LIMIT_S + 1.0, result.runtime_s


def test_waiting_is_not_cpu_time_but_the_wall_clock_backstop_holds():
    [napped] = run("import time\ntime.sleep(1.5)\nprint('ok')\n", stdio())
    assert napped.status == "passed", (napped.status, napped.message)
    assert napped.runtime_s > LIMIT_S
    [stuck] = run("import time\ntime.sleep(30)\nprint('ok')\n", stdio())
    assert stuck.status == "timeout" and stuck.timed_out
    assert 3 * LIMIT_S + 1.0 <= stuck.runtime_s < 3 * LIMIT_S + 3.0, stuck.runtime_s


def test_a_program_that_computes_past_the_limit_times_out():
    [result] = run(BURN.format(seconds=1.5) + "print('ok')\n", stdio())
    assert result.status == "timeout" and result.timed_out, (result.status, result.message)
    assert result.stdout == ""  # its CPU time reached the limit before it could print


def test_cpu_time_of_the_programs_children_counts():
    """The work moved into a child the program does not wait for still counts (every process in the slot's
    pid namespace that is not the harness's is the program's)."""
    program = ("import os, time\nr, w = os.pipe()\nif os.fork() == 0:\n"
               + "".join("    " + line + "\n" for line in BURN.format(seconds=1.5).splitlines())
               + "    os.write(w, b'ok\\n')\n    os._exit(0)\n"
               "os.close(w)\nprint(os.read(r, 16).decode(), end='')\n")
    [result] = run(program, stdio())
    assert result.status == "timeout", (result.status, result.message, result.stdout)


def test_code_tests_count_cpu_time_and_the_load_has_its_own():
    program = ("import time\ntime.sleep(1.5)  # the load: its own limit\n"
               "def napper():\n    time.sleep(1.5)\n    return 1\n"
               "def burner():\n" + "".join("    " + line + "\n" for line in BURN.format(seconds=1.5).splitlines())
               + "    return 1\n")
    napped, burned = run(program, [SandboxTest(call="napper", args=[], expected=1),
                                   SandboxTest(code="assert burner() == 1")])
    assert napped.status == "passed", (napped.status, napped.message)
    assert burned.status == "timeout", (burned.status, burned.message)


def test_cpu_time_of_detached_short_lived_workers_counts():
    """Work split into short-lived detached processes (each double-forked, so its parent is gone and it exits
    before the clock looks) still counts: the zygote adopts orphans (a child subreaper) and leaves them as
    zombies, whose CPU time /proc still shows, until the test's cleanup."""
    worker = "".join("        " + line + "\n" for line in BURN.format(seconds=0.1).splitlines())
    program = ("import os\nfor _ in range(15):\n    r, w = os.pipe()\n    if os.fork() == 0:\n"
               "        if os.fork() != 0:\n            os._exit(0)\n" + worker
               + "        os.write(w, b'.')\n        os._exit(0)\n"
               "    os.wait()\n    os.close(w)\n    os.read(r, 1)\n    os.close(r)\nprint('ok')\n")
    [result] = run(program, stdio())
    assert result.status == "timeout", (result.status, result.message, result.runtime_s)
