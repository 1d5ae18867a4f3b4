"""What a program process costs is mostly its fork: the pages it copies on write (the zygote warms the
program path before it forks any, `_program.warm_up`) and the zygote's memory that every fork maps and
every exit unmaps (the harness is compiled, not run as a script that keeps its syntax tree)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest

SCRIPT = """
import dis, sys
from olmorl.sandbox import _program

def specialized(function):
    return [a.opname for a, b in zip(dis.get_instructions(function, adaptive=True), dis.get_instructions(function))
            if a.opname != b.opname]

paths = (_program.run_program, _program._Server.ready, _program._Server.serve, _program._Server.handle)
assert not any(specialized(f) for f in paths), "specialized before the warm-up"
before = sys.stdin, sys.stdout, sys.stderr, sys.argv, sys.modules["__main__"]
_program.warm_up(_program.open_stdio())
assert (sys.stdin, sys.stdout, sys.stderr, sys.argv, sys.modules["__main__"]) == before, "sys changed"
print(" ".join(str(len(specialized(f))) for f in paths))
"""


@pytest.mark.skipif(sys.version_info < (3, 11), reason="bytecode specialization is CPython 3.11+")
def test_warm_up_specializes_the_program_path_and_leaves_sys_as_it_was():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    counts = [int(n) for n in done.stdout.split()]
    assert len(counts) == 4 and all(n > 0 for n in counts), counts


async def test_a_program_starts_from_a_fresh_main_after_the_warm_up():
    from olmorl.sandbox import SandboxLimits, SandboxPool, TestInput

    pool = SandboxPool(backend="bwrap", slots=1, limits=SandboxLimits())
    await pool.start()
    try:
        program = ("import sys\nprint(sorted(k for k in vars(sys.modules['__main__']) if not k.startswith('__')),"
                   " sys.argv, __name__)")
        runs, failure = await pool.run(program, [TestInput(expected_stdout="['sys'] ['main.py'] __main__\n")] * 2)
        assert failure is None
        assert [r.status for r in runs] == ["passed", "passed"], runs[0]
    finally:
        await pool.stop()


def _status(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/status") as f:
            return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    except FileNotFoundError:  # ended since it was listed
        return {}


def _zygote(pool) -> int:
    """The pid of the zygote of `pool`'s first slot."""
    from olmorl.sandbox._memory import descendants

    # this pool's slot only: in the full suite other pools (some preloading numpy) run under this process too
    slot_pid = pool._slots[0].channel.proc.pid
    pythons = {pid: _status(pid) for pid in descendants(slot_pid) if _status(pid)["Name"] == "python3"}
    return next(pid for pid, status in pythons.items() if int(status["PPid"]) not in pythons)


async def test_the_zygote_binds_symbols_at_start_and_programs_never_see_the_setting():
    """Lazy binding would resolve each libc/libpython symbol on first call in every program process: a
    lookup and a copied page each time. The zygote starts with LD_BIND_NOW; its environment (which
    programs inherit, and pass to the commands they run) no longer has it."""
    from olmorl.sandbox import SandboxLimits, SandboxPool, TestInput

    pool = SandboxPool(backend="bwrap", slots=1, limits=SandboxLimits())
    await pool.start()
    try:
        program = ("import os, subprocess\n"
                   "print(os.environ.get('LD_BIND_NOW'), subprocess.run(['env'], capture_output=True).stdout.count(b'LD_'))")
        runs, failure = await pool.run(program, [TestInput(expected_stdout="None 0\n")])
        assert failure is None and runs[0].status == "passed", runs[0]
        with open(f"/proc/{_zygote(pool)}/environ", "rb") as f:
            assert b"LD_BIND_NOW=1" in f.read().split(b"\0")
    finally:
        await pool.stop()


async def test_the_zygote_holds_no_compiled_syntax_tree():
    from olmorl.sandbox import SandboxLimits, SandboxPool, TestInput

    pool = SandboxPool(backend="bwrap", slots=1, limits=SandboxLimits())
    await pool.start()
    try:
        runs, failure = await pool.run("x = 1", [TestInput(code="assert x == 1")])
        assert failure is None and runs[0].status == "passed"
        anonymous_kb = int(_status(_zygote(pool))["RssAnon"].split()[0])
        # 11.9 MB when the harness ran as a script (its syntax tree alive for good), 7.1 MB now.
        assert anonymous_kb < 9 * 1024, anonymous_kb
    finally:
        await pool.stop()


async def test_the_benchmarks_split_a_slots_cpu_by_process():
    """`benchmarks/_measure.slot_cpu` (what `sandbox_overhead.py` prints a slot's CPU by): the program's own work
    counts to the program processes the zygote reaped, the test's to the test process, neither to the zygote."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    from _measure import slot_cpu

    from olmorl.sandbox import SandboxLimits, SandboxPool, TestInput

    pool = SandboxPool(backend="bwrap", slots=1, limits=SandboxLimits(test_timeout_s=10.0))
    await pool.start()
    try:
        slot = pool._slots[0].channel.proc.pid
        before = slot_cpu(slot)
        busy = "sum(i * i for i in range(1_500_000))"
        runs, failure = await pool.run(f"x = {busy}", [TestInput(code=f"assert x > 0 and {busy} > 0")] * 6)
        assert failure is None and [r.status for r in runs] == ["passed"] * 6, runs[0]
        used = {part: slot_cpu(slot)[part][0] - cpu for part, (cpu, _) in before.items()}
        assert used["program processes"] > 0.1 and used["test process"] > 0.1, used  # ~0.2 s each here
        assert used["zygote"] < 0.05, used
    finally:
        await pool.stop()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
async def test_a_code_tests_program_runs_on_its_test_processs_cpu_and_the_slot_gets_its_cpus_back():
    """A code test's requests and answers go back and forth between two processes: on one CPU, each wakes the
    other without an interrupt to another CPU. For a job, its test process stays on the CPU it started on and
    its program processes run there; a stdio test's program runs alone, on any CPU; after the job every
    process of the slot may run anywhere again."""
    from olmorl.sandbox import SandboxLimits, SandboxPool, TestInput
    from olmorl.sandbox._memory import descendants

    everywhere = os.sched_getaffinity(0)
    pool = SandboxPool(backend="bwrap", slots=1, limits=SandboxLimits())
    await pool.start()
    try:
        program = "import os\ncpus = sorted(os.sched_getaffinity(0))\nif __name__ == '__main__': print(len(cpus))"
        runs, failure = await pool.run(program, [TestInput(code="assert len(cpus) == 1")] * 2)
        assert failure is None and [r.status for r in runs] == ["passed"] * 2, runs
        runs, failure = await pool.run(program, [TestInput(expected_stdout=f"{len(everywhere)}\n")])
        assert failure is None and runs[0].status == "passed", runs
        slot = pool._slots[0].channel.proc.pid
        # the test process unpins itself after it has sent the job's last record, and a program process may
        # still be exiting: wait (bounded) for the state, not a fixed time
        deadline = time.monotonic() + 10
        while True:
            pythons = [pid for pid in descendants(slot) if _status(pid).get("Name") == "python3"]
            pinned = [pid for pid in pythons if _affinity(pid) not in (None, everywhere)]
            if not pinned or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.02)
        assert len(pythons) >= 2  # the zygote and the test process
        assert not pinned, pinned
    finally:
        await pool.stop()


def _affinity(pid: int) -> set[int] | None:
    """The CPUs `pid` may run on, or None once it has exited."""
    try:
        return os.sched_getaffinity(pid)
    except ProcessLookupError:
        return None


def _children(pid: int) -> list[int]:
    """`pid`'s live children, oldest first."""
    from olmorl.sandbox._memory import descendants

    found = [child for child in descendants(pid) if _status(child).get("PPid") == str(pid)]

    def started(child: int) -> tuple[int, int]:  # clock ticks (10 ms): two forks often share one, so then the pid
        with open(f"/proc/{child}/stat") as f:  # (else a tie is left to the set's hash order)
            return int(f.read().rsplit(")", 1)[1].split()[19]), child

    return sorted(found, key=started)


def _memory_holds(pid: int, needle: bytes) -> bool:
    """Whether `needle` is anywhere in the readable memory of `pid` (root reads a non-dumpable process too)."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("r"):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                if needle in mem.read(end - start):
                    return True
            except OSError:  # [vvar] and the like
                continue
    return False


async def test_the_next_jobs_program_process_waits_forked_before_the_job_and_holds_nothing_of_the_last():
    """A one-test job (a HumanEval problem) would wait for the zygote to fork its program process. After each job
    the test process has the next job's forked: a child of the zygote under the zygote's uid (never the program's),
    which holds nothing of any job, waits for its `go`, and runs the next job's first test; it dies with the slot."""
    from olmorl.sandbox import SandboxLimits, SandboxPool, TestInput

    pool = SandboxPool(backend="bwrap", slots=1, limits=SandboxLimits())
    await pool.start()
    try:
        marker = "first-job-marker-7f3a"
        runs, failure = await pool.run(f"x = {marker!r}", [TestInput(code=f"assert x == {marker!r}")])
        assert failure is None and runs[0].status == "passed", runs[0]
        zygote = _zygote(pool)
        deadline = time.monotonic() + 10
        while len(children := _children(zygote)) < 2 and time.monotonic() < deadline:  # test process, spare
            await asyncio.sleep(0.02)
        assert len(children) == 2, children
        spare = children[1]
        status = _status(spare)
        assert status["Uid"].split()[0] == _status(zygote)["Uid"].split()[0]  # not yet the program's uid
        assert _memory_holds(children[0], marker.encode())  # the test process keeps the test's plan: the check sees
        assert not _memory_holds(spare, marker.encode())
        inner_pid = int(status["NSpid"].split()[-1])  # its pid inside the slot's pid namespace
        runs, failure = await pool.run("import os\npid = os.getpid()", [TestInput(code=f"assert pid == {inner_pid}")])
        assert failure is None and runs[0].status == "passed", runs[0]
    finally:
        await pool.stop()
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{spare}") and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert not os.path.exists(f"/proc/{spare}")
