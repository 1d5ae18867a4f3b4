"""The zygote runs the program process's path before it forks any (`_program.warm_up`), so that a
program process does not pay for specializing and caching that path itself (page faults per fork)."""

from __future__ import annotations

import subprocess
import sys

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
