"""Per-execution cost of the sandbox vs plain `python3 -c pass`, same run.

- baseline: a fresh `python3 -c pass` subprocess (the cheapest possible "run a program");
- cold sandbox: a fresh bwrap sandbox + interpreter per program (what a naive isolating runner pays);
- warm path: one test in an already-running sandbox (a fresh program process per test, the test
  judged in the separate test process), measured as the per-test time of a job of N trivial tests,
  for bwrap and (when an engine and the image are there) the docker backend's warm container, rounds
  interleaved so both see the same machine load. Target: <= 1.5 ms per test on the warm path.
- what the uid separation costs: the same warm path with harness and program under one uid.
- where a bwrap slot's time goes, whatever the machine's load: CPU time and page faults per test of
  the slot's processes (zygote, test process and every program process the zygote reaped), from /proc.
- the cost of the hardening: a bare fork per test inside the same bwrap sandbox, program and test run
  in the forked child with nothing reported (the floor of the unhardened design, where the test ran
  in the program's own process), against the warm path.
- docker, for reference: starting a slot (container create + start + zygote ready), and a
  `docker exec python3 -c pass` into a warm container (the per-test cost without a zygote).

Run: python benchmarks/sandbox_overhead.py [--n 200] [--no-docker]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time

from olmorl.sandbox import SandboxLimits, SandboxPool, TestInput
from olmorl.sandbox._backends import BwrapBackend, sandbox_python

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import SLOT_PARTS, slot_cpu, tree_cpu  # noqa: E402


def time_subprocess(argv: list[str], n: int) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        subprocess.run(argv, check=True, env={})
        times.append(time.perf_counter() - started)
    return times


POOLS = {  # backend label -> SandboxPool arguments
    "bwrap": {"backend": "bwrap"},
    "bwrap, one uid": {"backend": "bwrap"},  # harness and program share a uid: what the separation costs
    "docker": {"backend": "docker"},
    "docker+runsc": {"backend": "docker", "docker_runtime": "runsc"},
}


# In the sandbox: fork a child per test that runs the program and the test in its own process and
# reports nothing (the least an unhardened fork-per-test runner can do); prints per-test seconds.
BARE_FORK_LOOP = """
import os, sys, time
program, test = compile("x = 1", "<program>", "exec"), compile("assert x == 1", "<test>", "exec")
n = int(sys.argv[1])
started = time.perf_counter()
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        namespace = {}
        exec(program, namespace)
        exec(test, namespace)
        os._exit(0)
    os.waitpid(pid, 0)
print((time.perf_counter() - started) / n)
"""


def bare_fork_per_test(argv: list[str], rounds: int) -> list[float]:
    return [float(subprocess.run(argv, check=True, env={}, capture_output=True, text=True).stdout)
            for _ in range(rounds)]


def measure_slots() -> dict[str, tuple[float, int]]:
    return {"all": tree_cpu(os.getpid(), include_root=False), **slot_cpu(os.getpid())}


async def warm_per_test(backends: list[str], n: int, code: str | None, rounds: int = 5
                        ) -> tuple[dict[str, list[float]], dict[str, dict[str, tuple[float, float]]]]:
    """Per-test wall time of an n-test job in a warm slot, per backend, rounds interleaved; and for the
    bwrap slots, their CPU seconds and page faults per test over all rounds: in all (`tree_cpu`: bwrap's own
    processes too) and by part (`slot_cpu`)."""
    pools = {name: SandboxPool(**POOLS[name], slots=1, limits=SandboxLimits()) for name in backends}
    if "bwrap, one uid" in pools:
        pools["bwrap, one uid"].backend.separate_uids = False
    per_test: dict[str, list[float]] = {name: [] for name in backends}
    used = {name: {part: [0.0, 0] for part in ("all", *SLOT_PARTS)} for name in backends}
    try:
        for pool in pools.values():
            await pool.start()
            await pool.run("pass", [TestInput(code=code)] * 10)
        for _ in range(rounds):
            for name, pool in pools.items():
                before = measure_slots()  # this process's bwrap sandboxes (other pools idle)
                started = time.perf_counter()
                runs, failure = await pool.run("x = 1", [TestInput(code=code)] * n)
                assert failure is None and len(runs) == n
                per_test[name].append((time.perf_counter() - started) / n)
                for part, (cpu, faults) in measure_slots().items():
                    used[name][part][0] += cpu - before[part][0]
                    used[name][part][1] += faults - before[part][1]
        costs = {name: {part: (cpu / (rounds * n), faults / (rounds * n)) for part, (cpu, faults) in parts.items()}
                 for name, parts in used.items() if name.startswith("bwrap")}
        return per_test, costs
    finally:
        for pool in pools.values():
            await pool.stop()


async def docker_slot_start(n: int) -> list[float]:
    """A fresh slot: container create + start + the zygote's ready line (and its removal after)."""
    times = []
    for _ in range(n):
        pool = SandboxPool("docker", slots=1, limits=SandboxLimits())
        started = time.perf_counter()
        await pool.start()
        times.append(time.perf_counter() - started)
        await pool.stop()
    return times


def docker_exec_per_run(n: int) -> list[float]:
    """`docker exec python3 -c pass` into a warm container: one exec per test instead of a fork."""
    import docker

    from olmorl.sandbox._docker import DEFAULT_IMAGE

    api = docker.APIClient(version="auto")
    container = api.create_container(DEFAULT_IMAGE, command=["sleep", "infinity"], network_disabled=True,
                                     labels={"org.olmorl.benchmark": "1"},
                                     host_config=api.create_host_config(network_mode="none", auto_remove=True))["Id"]
    try:
        api.start(container)
        times = []
        for _ in range(n):
            started = time.perf_counter()
            exec_id = api.exec_create(container, ["/usr/bin/python3", "-c", "pass"], user="65534:65534")["Id"]
            api.exec_start(exec_id)
            times.append(time.perf_counter() - started)
        return times
    finally:
        api.remove_container(container, force=True)
        api.close()


def docker_reason(runtime: str | None = None) -> str | None:
    """Why the docker rows (with `runtime`) cannot run here, or None."""
    try:
        from olmorl.sandbox._docker import DockerBackend
    except ImportError as exc:
        return str(exc)
    return DockerBackend(None, SandboxLimits(), runtime=runtime).unavailable()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--no-docker", action="store_true", help="leave out the docker backend's rows")
    args = parser.parse_args()
    reason = "left out (--no-docker)" if args.no_docker else docker_reason()
    gvisor = reason or docker_reason("runsc")  # paranoid mode: only where the engine has runsc
    backends = ["bwrap"] + ["bwrap, one uid"] * (os.geteuid() == 0) + ([] if reason else ["docker"]) + ([] if gvisor else ["docker+runsc"])
    python = sandbox_python(None)
    base = time_subprocess([python, "-c", "pass"], args.n // 4)
    naive = BwrapBackend(None, SandboxLimits())
    naive.separate_uids = False  # a naive runner's sandbox: one uid, bwrap's own user namespace
    claim = naive.claim_uids()  # held until this process exits
    launch = naive.launch(0, claim.uids if claim is not None else None)
    bwrap_argv = list(launch.argv)
    for flag, width in (("--seccomp", 2), ("--ro-bind-data", 3)):  # fds are single-use: left out here
        if flag in bwrap_argv:
            at = bwrap_argv.index(flag)
            del bwrap_argv[at:at + width]
    cut = bwrap_argv.index("--")
    cold = time_subprocess(bwrap_argv[:cut + 1] + [python, "-c", "pass"], args.n // 4)
    for step in launch.cleanup:
        step()
    bare = bare_fork_per_test(bwrap_argv[:cut + 1] + [python, "-c", BARE_FORK_LOOP, str(args.n)], 5)
    warm_assert, assert_costs = asyncio.run(warm_per_test(backends, args.n, "assert x == 1"))
    warm_stdio, stdio_costs = asyncio.run(warm_per_test(backends, args.n, None))
    rows = [
        ("python3 -c pass (fresh process)", base),
        ("fresh bwrap sandbox + python3 -c pass", cold),
        ("bare fork per test in bwrap (unhardened floor)", bare),
        ("warm bwrap sandbox: one assert test", warm_assert["bwrap"]),
        ("warm bwrap sandbox: one stdio test", warm_stdio["bwrap"]),
    ]
    if "bwrap, one uid" in backends:
        rows += [("warm bwrap, one uid (no separation): assert", warm_assert["bwrap, one uid"]),
                 ("warm bwrap, one uid (no separation): stdio", warm_stdio["bwrap, one uid"])]
    if "docker" in backends:
        rows += [
            ("warm docker container: one assert test", warm_assert["docker"]),
            ("warm docker container: one stdio test", warm_stdio["docker"]),
            ("docker slot start (create+start+ready)", asyncio.run(docker_slot_start(5))),
            ("docker exec python3 -c pass (warm container)", docker_exec_per_run(max(args.n // 10, 5))),
        ]
    if "docker+runsc" in backends:
        rows += [
            ("warm docker+runsc (gVisor): one assert test", warm_assert["docker+runsc"]),
            ("warm docker+runsc (gVisor): one stdio test", warm_stdio["docker+runsc"]),
        ]
    print(f"sandbox per-execution overhead, load average {os.getloadavg()[0]:.1f} (shared machine), "
          f"{os.cpu_count()} cores")
    print(f"{'path':<50}{'median ms':>11}{'min ms':>9}")
    for name, values in rows:
        print(f"{name:<50}{statistics.median(values) * 1000:>11.2f}{min(values) * 1000:>9.2f}")
    for name in backends:
        overhead = statistics.median(warm_assert[name])
        print(f"{name} warm per-test cost: {overhead * 1000:.2f} ms (target <= 1.5 ms); "
              f"{statistics.median(base) / overhead:.1f}x cheaper than a fresh python3")
    for kind, costs in (("assert", assert_costs), ("stdio", stdio_costs)):
        for name, parts in costs.items():
            cpu, faults = parts.pop("all")
            print(f"{name} slot, one {kind} test: {cpu * 1000:.2f} ms CPU, {faults:.0f} page faults (zygote, test "
                  f"process and program process together); " + ", ".join(
                      f"{part} {part_cpu * 1000:.2f} ms" for part, (part_cpu, _) in parts.items()))
    print(f"cost of the hardening (bwrap, one assert test): "
          f"{(statistics.median(warm_assert['bwrap']) - statistics.median(bare)) * 1000:.2f} ms per test over a bare fork")
    if reason:
        print(f"docker rows: not measured: {reason}")
    elif gvisor:
        print(f"docker+runsc rows: not measured: {gvisor}")


if __name__ == "__main__":
    main()
