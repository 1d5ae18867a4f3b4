"""A test's time limit is CPU time with a wall-clock backstop (`_connection.TestClock`): a correct program
that waited for a CPU on a loaded machine is not cut short, a program that computes too long still times
out, and one that sleeps or waits ends at the backstop (3 x limit + 1 s).

Real bwrap slots; the load is real processes spinning on every CPU. Each program burns a measured amount of
its own CPU time (`time.process_time`), so its CPU cost does not depend on the machine's speed or load.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import shutil

import pytest

from olmorl.sandbox import SandboxPool
from olmorl.sandbox import TestInput as SandboxTest

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


def spin() -> None:
    while True:
        pass


class CpuHogs:
    """Three spinning processes per CPU this process may use: a program gets about a quarter of a CPU."""

    def __enter__(self) -> CpuHogs:
        count = 3 * len(os.sched_getaffinity(0))
        self.procs = [multiprocessing.get_context("fork").Process(target=spin, daemon=True) for _ in range(count)]
        for proc in self.procs:
            proc.start()
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.join()


def stdio(expected: str = "ok\n") -> list[SandboxTest]:
    return [SandboxTest(stdin="", expected_stdout=expected)]


def test_a_program_that_waits_for_a_cpu_under_load_passes():
    program = BURN.format(seconds=0.6) + "print('ok')\n"
    with CpuHogs():
        [result] = run(program, stdio())
    assert result.status == "passed", (result.status, result.message)
    assert result.runtime_s > LIMIT_S, f"the load did not slow it past the limit ({result.runtime_s:.2f} s): no evidence"


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
