"""Compiled-language throughput: a C++ stdio problem with 20 tests, same run, rounds interleaved.

- sandbox (warm bwrap slot): compile once inside the sandbox, then fork+exec each test there
  (`SandboxPool.run(..., language="cpp")`); what the `code_stdio` verifier pays per program;
- naive: `g++` into a temp dir, then one `subprocess.run` per test, no isolation at all;
- naive isolated: the same, but every test in a fresh bwrap sandbox (what a runner without a warm
  zygote pays for isolation).
Columns: wall time per program (compile + 20 tests), tests/s, the same excluding the compile, and the
ratio against naive.

It also cross-checks verdicts: every language's correct and wrong program from
tests/_language_programs.py is run natively on the host (compiled with the same toolchain, no sandbox)
and through the sandbox; the pass/fail of each test must agree.

Run: python benchmarks/code_languages.py [--rounds 5] [--tests 20]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _language_programs import CORRECT, TESTS, WRONG  # noqa: E402
from olmorl.rewards.code import stdout_matches  # noqa: E402
from olmorl.sandbox import LANGUAGES, SandboxPool, TestInput  # noqa: E402
from olmorl.sandbox._languages import SANDBOX_ENV, host_languages  # noqa: E402

BWRAP = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv",
         "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
         "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


def problem(n_tests: int, seed: int = 0) -> list[dict[str, str]]:
    rng = random.Random(seed)
    tests = []
    for _ in range(n_tests):
        xs = [rng.randint(-10**12, 10**12) for _ in range(rng.randint(1, 2000))]
        tests.append({"input": f"{len(xs)}\n{' '.join(map(str, xs))}\n", "output": f"{sum(xs)}\n"})
    return tests


def native_run(language: str, program: str, tests: list[dict[str, str]],
               isolate: bool = False) -> tuple[list[bool], float]:
    """Compile (if needed) and run `program` on the host with the sandbox's own commands: a plain runner.
    Returns the verdicts and the compile's wall time."""
    lang = LANGUAGES[language]
    compile_argv, run_argv = lang.commands(program)
    env = {**SANDBOX_ENV, **lang.env}
    with tempfile.TemporaryDirectory() as work:
        env = {k: v.replace("{scratch}", work).replace("/tmp", work) for k, v in env.items()}
        Path(work, lang.source_file(program)).write_text(program)
        started = time.perf_counter()
        if compile_argv:
            subprocess.run(compile_argv, cwd=work, env=env, check=True, capture_output=True, timeout=60)
        compile_s = time.perf_counter() - started
        argv = list(run_argv) if language != "python" else ["python3", lang.source_file(program)]
        if isolate:
            argv = [*BWRAP, "--bind", work, work, "--chdir", work, *argv]
        verdicts = []
        for test in tests:
            done = subprocess.run(argv, cwd=work, env=env, input=test["input"], capture_output=True, text=True,
                                  timeout=10)
            verdicts.append(done.returncode == 0 and stdout_matches(done.stdout, test["output"]))
        return verdicts, compile_s


async def sandbox_run(pool: SandboxPool, language: str, program: str,
                      tests: list[dict[str, str]]) -> tuple[list[bool], float]:
    runs, failure = await pool.run(program, [TestInput(stdin=t["input"]) for t in tests], 5.0, language=language)
    assert failure is None, failure
    build = next((r for r in runs if r.index == -1), None)
    by_index = {r.index: r for r in runs}
    verdicts = [by_index[i].exit_code == 0 and stdout_matches(by_index[i].stdout, t["output"])
                for i, t in enumerate(tests)]
    return verdicts, build.runtime_s if build is not None else 0.0


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tests", type=int, default=20)
    args = parser.parse_args()
    available = {name for name, missing in host_languages().items() if not missing}
    if "cpp" not in available or shutil.which("bwrap") is None:
        sys.exit("needs g++ and bwrap (scripts/install-system-deps.sh)")
    tests = problem(args.tests)
    program = CORRECT["cpp"]
    pool = SandboxPool("bwrap", slots=1)
    await pool.start()
    walls: dict[str, list[float]] = {"sandbox": [], "naive": [], "naive isolated": []}
    compiles: dict[str, list[float]] = {"sandbox": [], "naive": [], "naive isolated": []}
    try:
        await sandbox_run(pool, "cpp", program, tests[:1])  # warm the slot
        for _ in range(args.rounds):
            started = time.perf_counter()
            verdicts, compile_s = await sandbox_run(pool, "cpp", program, tests)
            walls["sandbox"].append(time.perf_counter() - started)
            compiles["sandbox"].append(compile_s)
            assert all(verdicts)
            for label, isolate in (("naive", False), ("naive isolated", True)):
                started = time.perf_counter()
                verdicts, compile_s = native_run("cpp", program, tests, isolate=isolate)
                walls[label].append(time.perf_counter() - started)
                compiles[label].append(compile_s)
                assert all(verdicts)
        print(f"C++ stdio problem, {args.tests} tests, {args.rounds} rounds (median; machine shared, under load)\n")
        print(f"{'runner':16} {'wall/program':>13} {'tests/s':>9} {'compile':>9} {'tests/s excl. compile':>22}")
        naive = statistics.median(walls["naive"])
        for label, values in walls.items():
            wall, comp = statistics.median(values), statistics.median(compiles[label])
            print(f"{label:16} {wall * 1e3:10.0f} ms {args.tests / wall:9.1f} {comp * 1e3:6.0f} ms "
                  f"{args.tests / max(wall - comp, 1e-9):22.1f}")
        print(f"\nsandbox / naive wall ratio: {statistics.median(walls['sandbox']) / naive:.2f}x "
              f"(naive isolated / naive: {statistics.median(walls['naive isolated']) / naive:.2f}x)")
        print("\nverdict cross-check (host run vs sandbox), correct and wrong program per language:")
        for language in LANGUAGES:
            if language not in available:
                print(f"  {language:10} skipped: {host_languages()[language]}")
                continue
            for kind, source in (("correct", CORRECT[language]), ("wrong", WRONG[language])):
                host, _ = native_run(language, source, TESTS)
                inside, _ = await sandbox_run(pool, language, source, TESTS)
                print(f"  {language:10} {kind:7} host={''.join('P' if v else '.' for v in host)} "
                      f"sandbox={''.join('P' if v else '.' for v in inside)} {'agree' if host == inside else 'DISAGREE'}")
    finally:
        await pool.stop()


if __name__ == "__main__":
    asyncio.run(main())
