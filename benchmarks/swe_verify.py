"""Time of one `swe` verify (the honest fix of tests/swe_tasks/calc-bug, then verify), on a real server and the
real Docker engine, with and without warm containers. Prints the median and p90 of the verify reply time.

    PYTHONPATH=$PWD python benchmarks/swe_verify.py [--n 8]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from olmorl.clients import SessionClient
from olmorl.rewards._settings import SessionSettings, SweSettings
from olmorl.rewards.service._local import LocalRewardServer

TASKS = Path(__file__).resolve().parent.parent / "tests" / "swe_tasks"


def verify_times(warm: int, n: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp, \
            LocalRewardServer(workers=1, log_path=f"{tmp}/server.log",
                              sessions=SessionSettings(state_dir=f"{tmp}/state", call_timeout_s=90),
                              swe=SweSettings(task_root=str(TASKS), warm_containers=warm)) as server, \
            SessionClient(server.url, timeout=180) as client:
        times = []
        for i in range(n + 1):  # the first builds the image and fills the pool: not counted
            session = client.open("swe", {"path": "calc-bug"})
            session.call("str_replace", path="calc/ops.py", old_str="return a - b", new_str="return a + b")
            time.sleep(1.0 if warm else 0.0)  # let the pool refill, as between the turns of a rollout
            started = time.perf_counter()
            result = session.verify("done")
            elapsed = time.perf_counter() - started
            assert result.reward == 1.0, result.details
            if i:
                times.append(elapsed)
        return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=8)
    args = parser.parse_args()
    for warm in (0, 2):
        times = sorted(verify_times(warm, args.n))
        p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
        print(f"warm_containers={warm}: verify median {statistics.median(times):.3f} s, p90 {p90:.3f} s "
              f"(n={len(times)})")


if __name__ == "__main__":
    main()
