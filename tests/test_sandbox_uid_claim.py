"""Sandbox uids are claimed host-wide (issue 23): no two live slots on one host share a uid, whichever
process or pool they belong to, so one server's programs can neither starve (RLIMIT_NPROC counts per uid)
nor signal another's. Real bwrap pools, real subprocesses, real flock'd claims.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from olmorl.sandbox import SandboxLimits, SandboxPool, SandboxUnavailable
from olmorl.sandbox import TestInput as SandboxTest
from olmorl.sandbox._memory import descendants
from olmorl.sandbox._uid_claim import UidClaimFailed, UidClaims

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="slots run as uids of their own only under a root server"),
]
REPO = Path(__file__).resolve().parents[1]
HOLD = "import time\ntime.sleep(20)\n"  # a program that keeps its slot's program uid in use until killed
# claims from a directory of the test's own take a range of their own too: servers running on this host hold
# pairs of the default range, and a pair whose uid runs a process is not claimed
TEST_BASE = 2_100_000_000


def _uids_under(root: int) -> dict[int, int]:
    """pid -> host uid of every process below `root`."""
    uids = {}
    for pid in descendants(root):
        try:
            uids[pid] = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return uids


SERVER = textwrap.dedent(f"""
    import asyncio, sys
    from olmorl.sandbox import SandboxLimits, SandboxPool, TestInput
    async def main():
        pool = SandboxPool("bwrap", slots=2, limits=SandboxLimits(test_timeout_s=30))
        await pool.start()
        print("ready", flush=True)
        await asyncio.gather(*(pool.run({HOLD!r}, [TestInput(stdin="")]) for _ in range(2)))
    asyncio.run(main())
""")


def _start_server() -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", SERVER], cwd=REPO, stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))


def _running_uids(server: subprocess.Popen[str], want: int) -> set[int]:
    """The host uids of `server`'s sandbox processes, once `want` distinct ones (harness and program of
    every slot) run: its slots are started and both hold a program."""
    assert server.stdout is not None and server.stdout.readline() == "ready\n"
    deadline = time.monotonic() + 30
    while True:
        uids = set(_uids_under(server.pid).values()) - {0}
        if len(uids) >= want or time.monotonic() > deadline:
            return uids
        time.sleep(0.05)


def test_two_servers_run_their_slots_as_disjoint_uids_and_a_killed_ones_are_claimed_again():
    """Old code: both processes' slot 0 ran as 61000/63000 and slot 1 as 61001/63001 (shared)."""
    first = _start_server()
    second = _start_server()
    try:
        first_uids = _running_uids(first, 4)
        second_uids = _running_uids(second, 4)
        assert len(first_uids) == 4 and len(second_uids) == 4, (first_uids, second_uids)
        assert not first_uids & second_uids, (first_uids, second_uids)
        first.send_signal(signal.SIGKILL)  # no cleanup runs: the kernel drops its flocks
        first.wait()
        third = _start_server()
        try:
            third_uids = _running_uids(third, 4)
            assert not third_uids & second_uids, (third_uids, second_uids)
        finally:
            third.kill()
            third.wait()
    finally:
        for server in (first, second):
            server.kill()
            server.wait()


CLAIMANT = textwrap.dedent("""
    import sys, time
    from olmorl.sandbox._uid_claim import UidClaimFailed, UidClaims
    claim = UidClaims(sys.argv[1], base=int(sys.argv[2]), pairs=4).claim()
    print(claim.uids.harness, claim.uids.program, flush=True)
    time.sleep(60)
""")


def test_a_sigkilled_claimants_uids_can_be_claimed_again(tmp_path):
    claimant = subprocess.Popen([sys.executable, "-c", CLAIMANT, str(tmp_path), str(TEST_BASE)], stdout=subprocess.PIPE,
                                text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        assert claimant.stdout is not None
        held = tuple(map(int, claimant.stdout.readline().split()))
        claims = UidClaims(str(tmp_path), base=TEST_BASE, pairs=4)
        while_alive = claims.claim()
        assert (while_alive.uids.harness, while_alive.uids.program) != held  # the live claimant's are not free
        while_alive.release()
        claimant.send_signal(signal.SIGKILL)
        claimant.wait()
        again = claims.claim()
        assert (again.uids.harness, again.uids.program) == held  # first free again: no stale claim
        again.release()
    finally:
        claimant.kill()
        claimant.wait()
    assert os.stat(tmp_path).st_mode & 0o777 == 0o700


# claims `count` pairs the moment the file argv[2] appears (every claimant at once), prints them, and holds them
RACER = textwrap.dedent("""
    import os, sys, time
    from olmorl.sandbox._uid_claim import UidClaimFailed, UidClaims
    claims = UidClaims(sys.argv[1], base=int(sys.argv[4]), pairs=64)
    print("waiting", flush=True)
    while not os.path.exists(sys.argv[2]):
        pass
    held = [claims.claim() for _ in range(int(sys.argv[3]))]
    print(" ".join(str(c.uids.harness) for c in held), flush=True)
    time.sleep(30)
""")


def test_claimants_started_at_once_never_share_a_pair(tmp_path):
    """8 processes claim 6 pairs each in the same instant from one directory: 48 distinct pairs (guards the
    flock'd claim; it held on the old code too)."""
    go = tmp_path / "go"
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(tmp_path / "claims"), str(go), "6", str(TEST_BASE)],
                               stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
              for _ in range(8)]
    try:
        for racer in racers:
            assert racer.stdout is not None and racer.stdout.readline() == "waiting\n"
        go.touch()
        held = [racer.stdout.readline().split() for racer in racers if racer.stdout is not None]
        pairs = [int(uid) for claimed in held for uid in claimed]
        assert len(pairs) == 48 and len(set(pairs)) == 48, held
        assert set(pairs) == {TEST_BASE + 2 * i for i in range(48)}  # the first 48: nothing skipped
    finally:
        for racer in racers:
            racer.kill()
            racer.wait()


def test_a_pair_whose_uid_still_runs_a_process_is_not_claimed(tmp_path):
    """A dead claimant's lock is free at once, but its slot's processes may outlive it (a docker slot's container
    is the engine's): a process still running as the pair's program uid keeps the pair out of the next claim.
    The old code gave that pair away (shared RLIMIT_NPROC and per-uid kills with the leftover)."""
    claims = UidClaims(str(tmp_path), base=TEST_BASE, pairs=2)
    leftover = subprocess.Popen(["setpriv", f"--reuid={TEST_BASE + 1}", f"--regid={TEST_BASE + 1}", "--clear-groups",
                                 "sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        while TEST_BASE + 1 not in _uids_under(os.getpid()).values() and time.monotonic() < deadline:
            time.sleep(0.01)
        claim = claims.claim()
        assert claim.uids.harness == TEST_BASE + 2, claim.uids  # pair 0 skipped: its program uid runs `sleep`
        with pytest.raises(UidClaimFailed, match="still run processes of slots whose server is gone"):
            claims.claim()
        claim.release()
        leftover.kill()
        leftover.wait()
        again = claims.claim()
        assert again.uids.harness == TEST_BASE, again.uids  # its last process gone: free again
        again.release()
    finally:
        leftover.kill()
        leftover.wait()


def test_too_few_free_uids_is_a_clear_error_at_pool_start(tmp_path):
    async def main() -> None:
        pool = SandboxPool("bwrap", slots=3)
        pool.backend.uid_claims = claims = UidClaims(str(tmp_path), base=TEST_BASE, pairs=2)
        with pytest.raises(SandboxUnavailable, match=r"all 2 sandbox uid pairs .* are held by live sandbox slots"):
            await pool.start()
        assert pool.readiness()["alive"] == 0
        assert pool.readiness()["slot_uids"] == []  # released: both pairs are free again
        first, second = claims.claim(), claims.claim()
        assert (first.uids.harness, second.uids.harness) == (claims.base, claims.base + 2)
    asyncio.run(main())


BOMB = """
import os, time
n = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)  # (the harness kills them when the test ends)
        os._exit(0)
    n += 1
time.sleep(6)  # holding every process its uid may have, while the other pool's program runs
print("forked", n)
"""
WORKERS = 10
FORK_WORKERS = f"""
import os, time
workers = []
for _ in range({WORKERS}):  # a legitimate program's worker processes, all alive at once
    try:
        pid = os.fork()
    except OSError as exc:
        print("blocked:", exc)
        break
    if pid == 0:
        time.sleep(0.5)
        os._exit(0)
    workers.append(pid)
for pid in workers:
    os.waitpid(pid, 0)
print("ran", len(workers))
"""


def _insecure_pool(limits: SandboxLimits) -> SandboxPool:
    """The `process` backend: no user namespace, so a slot's uid is counted and signalled host-wide (with bwrap,
    kernels since 5.14 count RLIMIT_NPROC per user namespace, and a pid namespace keeps signals in)."""
    return SandboxPool("process", allow_insecure=True, slots=1, limits=limits)


def test_a_fork_bomb_in_one_pool_leaves_another_pools_programs_running():
    """Old code: both pools' slot 0 ran as host uid 61000, so the bomb's processes (as many as its slot's pids
    cgroup allows) counted against the victim's RLIMIT_NPROC (24) too: its workers were refused."""
    limits = SandboxLimits(test_timeout_s=10, max_processes=16)

    async def main() -> tuple[str, str]:
        bomber, victim = _insecure_pool(limits), _insecure_pool(limits)
        await bomber.start()
        await victim.start()
        try:
            bomb = asyncio.ensure_future(bomber.run(BOMB, [SandboxTest(stdin="")]))
            deadline = time.monotonic() + 10
            while max(_count_by_uid().values(), default=0) < limits.max_processes:  # the bomb fills its slot
                assert time.monotonic() < deadline and not bomb.done(), "the bomb never filled its slot"
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)
            runs, failure = await victim.run(FORK_WORKERS, [SandboxTest(stdin="")])
            assert not bomb.done()  # the bomb's processes were there throughout the victim's run
            bombed, bomb_failure = await bomb
            assert failure is None and bomb_failure is None, (failure, bomb_failure)
            return runs[0].stdout, bombed[0].stdout
        finally:
            await bomber.stop()
            await victim.stop()

    victim_out, bomb_out = asyncio.run(main())
    assert bomb_out.startswith("forked ") and victim_out == f"ran {WORKERS}\n", (bomb_out, victim_out)


def test_a_program_killing_every_process_of_its_uid_leaves_another_pools_slot_alive():
    """Old code: both pools' slot 0 ran as host uid 61000, so kill(-1) from one pool's program ended the
    other's zygote too."""
    async def main() -> tuple[int, int]:
        killer, bystander = _insecure_pool(SandboxLimits()), _insecure_pool(SandboxLimits())
        await killer.start()
        await bystander.start()
        try:
            await killer.run("import os, signal\nos.kill(-1, signal.SIGKILL)\n", [SandboxTest(stdin="")])
            alive = bystander.readiness()["alive"]
            runs, failure = await bystander.run("print('still here')", [SandboxTest(stdin="")])
            assert failure is None and runs[0].stdout == "still here\n", (failure, runs)
            return alive, bystander.restarts
        finally:
            await killer.stop()
            await bystander.stop()

    assert asyncio.run(main()) == (1, 0)


def _count_by_uid() -> dict[int, int]:
    counts: dict[int, int] = {}
    for uid in _uids_under(os.getpid()).values():
        if uid != 0:
            counts[uid] = counts.get(uid, 0) + 1
    return counts
