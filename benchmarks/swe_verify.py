"""Time of one `swe` verify (the honest fix of tests/swe_tasks/calc-bug, or with `--task harbor-hello` of the
Harbor task, then verify), on a real server and the real Docker engine, with and without warm containers. Prints the median and p90 of the verify reply time.
With `--baseline DIR` (a checkout of another version) both versions serve at once and their verifies
alternate, so both see the same load: the way to compare on a shared machine.

    PYTHONPATH=$PWD python benchmarks/swe_verify.py [--n 8] [--task harbor-hello] [--baseline /path/to/old/checkout]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from olmorl.clients import SessionClient
from olmorl.rewards._settings import SessionSettings, SweSettings
from olmorl.rewards.service._local import LocalRewardServer

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "tests" / "swe_tasks"


FIXES = {  # each task's honest fix, as one bash command
    "calc-bug": "sed -i 's/return a - b/return a + b/' calc/ops.py",
    "harbor-hello": "echo 'Hello, world!' > /app/hello.txt",
}


def one_verify(client: SessionClient, task: str, warm: int) -> float:
    session = client.open("swe", {"path": task})
    session.call("bash", command=FIXES[task])
    time.sleep(1.0 if warm else 0.0)  # let the pool refill, as between the turns of a rollout
    started = time.perf_counter()
    result = session.verify("done")
    elapsed = time.perf_counter() - started
    assert result.reward == 1.0, result.details
    return elapsed


def verify_times(versions: dict[str, Path], task: str, warm: int, n: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        clients = {}
        for name, checkout in versions.items():
            server = stack.enter_context(LocalRewardServer(
                workers=1, log_path=f"{tmp}/{name}.log", extra_env={"PYTHONPATH": str(checkout)},
                sessions=SessionSettings(state_dir=f"{tmp}/{name}-state", call_timeout_s=90),
                swe=SweSettings(task_root=str(TASKS), warm_containers=warm)))
            clients[name] = stack.enter_context(SessionClient(server.url, timeout=180))
        times: dict[str, list[float]] = {name: [] for name in versions}
        for i in range(n + 1):  # the first builds the image and fills the pool: not counted
            for name, client in clients.items():
                elapsed = one_verify(client, task, warm)
                if i:
                    times[name].append(elapsed)
        return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--task", choices=sorted(FIXES), default="calc-bug")
    parser.add_argument("--baseline", type=Path, help="a checkout of another version, run alternately with this one")
    args = parser.parse_args()
    versions = {"this": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    for warm in (0, 2):
        for name, times in verify_times(versions, args.task, warm, args.n).items():
            times.sort()
            p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
            print(f"{name:8s} warm_containers={warm}: verify median {statistics.median(times):.3f} s, "
                  f"p90 {p90:.3f} s (n={len(times)})")


if __name__ == "__main__":
    main()
