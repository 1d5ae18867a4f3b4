"""Per-execution cost of the sandbox vs plain `python3 -c pass`, same run.

- baseline: a fresh `python3 -c pass` subprocess (the cheapest possible "run a program");
- cold sandbox: a fresh bwrap sandbox + interpreter per program (what a naive isolating runner pays);
- warm path: one test in an already-running sandbox (zygote forks a child per test), measured as the
  per-test time of a job of N trivial tests. Target: <= 1 ms per test on the warm path.

Run: python benchmarks/sandbox_overhead.py [--n 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import time

from olmorl.sandbox import SandboxLimits, SandboxPool, TestInput
from olmorl.sandbox._backends import BwrapBackend, sandbox_python


def time_subprocess(argv: list[str], n: int) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        subprocess.run(argv, check=True, env={})
        times.append(time.perf_counter() - started)
    return times


async def warm_per_test(n: int, code: str | None) -> list[float]:
    pool = SandboxPool("bwrap", slots=1, limits=SandboxLimits())
    await pool.start()
    try:
        per_test = []
        await pool.run("pass", [TestInput(code=code)] * 10)
        for _ in range(5):
            started = time.perf_counter()
            runs, failure = await pool.run("x = 1", [TestInput(code=code)] * n)
            assert failure is None and len(runs) == n
            per_test.append((time.perf_counter() - started) / n)
        return per_test
    finally:
        await pool.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    args = parser.parse_args()
    python = sandbox_python(None)
    base = time_subprocess([python, "-c", "pass"], args.n // 4)
    launch = BwrapBackend(None, SandboxLimits()).launch(0)
    bwrap_argv = list(launch.argv)
    for flag, width in (("--seccomp", 2), ("--ro-bind-data", 3)):  # fds are single-use: left out here
        if flag in bwrap_argv:
            at = bwrap_argv.index(flag)
            del bwrap_argv[at:at + width]
    cut = bwrap_argv.index("--")
    cold = time_subprocess(bwrap_argv[:cut + 1] + [python, "-c", "pass"], args.n // 4)
    for step in launch.cleanup:
        step()
    warm_assert = asyncio.run(warm_per_test(args.n, "__probe__(0, x)"))
    warm_stdio = asyncio.run(warm_per_test(args.n, None))
    rows = [
        (f"python3 -c pass (fresh process)", base),
        ("fresh bwrap sandbox + python3 -c pass", cold),
        ("warm sandbox: one assert test (fork per test)", warm_assert),
        ("warm sandbox: one stdio test (fork per test)", warm_stdio),
    ]
    print(f"sandbox per-execution overhead, load average {os.getloadavg()[0]:.1f} (shared machine)")
    print(f"{'path':<50}{'median ms':>11}{'min ms':>9}")
    for name, values in rows:
        print(f"{name:<50}{statistics.median(values) * 1000:>11.2f}{min(values) * 1000:>9.2f}")
    overhead = statistics.median(warm_assert)
    print(f"warm per-test cost: {overhead * 1000:.2f} ms (target <= 1 ms); "
          f"{statistics.median(base) / overhead:.1f}x cheaper than a fresh python3")


if __name__ == "__main__":
    main()
