"""Two versions of the reward server at once, fed HumanEval's canonical items in alternating rounds, so both see
the same load: each one's own CPU (the server process) and its tree's (server + sandboxes) per problem, and the
tree's page faults (a count: steadier than CPU under load).

Sequential runs of `code_humaneval.py` on a shared machine move by milliseconds a problem with other users' load;
rounds interleaved at ~1 s resolve a change of a few hundredths of a millisecond in the server process. Each source
tree is put first on the server's PYTHONPATH (`git archive REV | tar -x -C DIR` makes one of a commit). Run:
python benchmarks/code_humaneval_ab.py --before /tmp/base --after . (from a directory holding no `olmorl`, e.g. /tmp,
so that neither server imports the working directory's).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import own_cpu, tree_cpu  # noqa: E402
from code_humaneval import item, load_problems  # noqa: E402
from olmorl.rewards.service._local import LocalRewardServer  # noqa: E402
from olmorl.rewards._settings import SandboxSettings  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", required=True, help="source tree of the code before")
    parser.add_argument("--after", required=True, help="source tree of the code after")
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    trees = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    items = [item(p) for p in load_problems()]
    servers = {name: LocalRewardServer(workers=1, sandbox=SandboxSettings(parallelism=args.slots),
                                       extra_env={"PYTHONPATH": tree}) for name, tree in trees.items()}
    try:
        for server in servers.values():
            server.start()
        clients = {name: httpx.Client(base_url=server.url, timeout=600) for name, server in servers.items()}

        def verify(name: str) -> None:
            results = clients[name].post("/v1/verify", json={"items": items}).json()["results"]
            bad = [r["id"] for r in results if r["reward"] != 1.0]
            assert not bad, f"{name}: canonical solutions not scoring 1: {bad}"

        for name in trees:  # warm-up: the kept test plans, as the timed rounds of code_humaneval.py have them
            verify(name)
            verify(name)
        own = {name: 0.0 for name in trees}
        tree = {name: 0.0 for name in trees}
        faults = {name: 0 for name in trees}  # page faults of the tree (the sandboxes' processes)
        walls: dict[str, list[float]] = {name: [] for name in trees}
        loads = [os.getloadavg()[0]]
        for round_ in range(args.rounds):
            for name in list(trees)[::1 if round_ % 2 == 0 else -1]:  # ABBA: neither always goes first
                assert servers[name].process is not None
                pid = servers[name].process.pid
                own_at, (tree_at, faults_at), started = own_cpu(pid), tree_cpu(pid), time.perf_counter()
                verify(name)
                walls[name].append(time.perf_counter() - started)
                own[name] += own_cpu(pid) - own_at
                tree_now, faults_now = tree_cpu(pid)
                tree[name] += tree_now - tree_at
                faults[name] += faults_now - faults_at
            loads.append(os.getloadavg()[0])
    finally:
        for server in servers.values():
            server.stop()
    n = len(items) * args.rounds
    print(f"HumanEval, {len(items)} problems x {args.rounds} rounds each, {args.slots} slots, alternating; "
          f"load average {min(loads):.1f}-{max(loads):.1f}")
    for name in trees:
        print(f"{name:<7} server process {own[name] * 1000 / n:.3f} ms a problem, server + sandboxes "
              f"{tree[name] * 1000 / n:.2f} ms; round wall median {statistics.median(walls[name]):.2f} s, "
              f"best {min(walls[name]):.2f} s; {faults[name] / n:.0f} page faults a problem  ({trees[name]})")


if __name__ == "__main__":
    main()
