"""Warm session pools: the generic `WarmPool` (real coroutines, no mocks of it), and python sessions served warm
interpreters by a real server subprocess with real bwrap sandboxes."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import httpx
import pytest

from olmorl.clients import SessionClient
from olmorl.rewards._settings import SandboxSettings, SessionSettings
from olmorl.rewards.sessions import PoolStats, WarmPool
from olmorl.sandbox._memory import descendants
from test_sessions import wait_for


class Thing:
    """What a pool holds in the unit tests: a started, stoppable object."""

    def __init__(self, n: int) -> None:
        self.n, self.alive, self.stopped = n, True, 0


class Factory:
    def __init__(self, delay_s: float = 0.01, fail_first: int = 0) -> None:
        self.made: list[Thing] = []
        self.running = self.most_running = 0
        self.delay_s, self.fail_first = delay_s, fail_first

    async def start(self, spec: str) -> Thing:
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await asyncio.sleep(self.delay_s)
            if self.fail_first > 0:
                self.fail_first -= 1
                raise OSError("no room")
            thing = Thing(len(self.made))
            self.made.append(thing)
            return thing
        finally:
            self.running -= 1

    async def stop(self, thing: Thing) -> None:
        thing.stopped += 1
        thing.alive = False


async def settle(pool: WarmPool, spec: str, ready: int, timeout_s: float = 5.0) -> PoolStats:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and (pool.stats(spec).ready, pool.stats(spec).starting) != (ready, 0):
        await asyncio.sleep(0.005)
    return pool.stats(spec)


def test_a_filled_pool_hands_out_ready_items_once_and_refills_after_each_take():
    async def run() -> None:
        factory = Factory()
        pool = WarmPool(factory.start, factory.stop, size=2, healthy=lambda t: t.alive)
        pool.fill("a")
        assert (await settle(pool, "a", 2)).ready == 2
        first, second = await pool.take("a"), await pool.take("a")
        assert {first.n, second.n} == {0, 1}
        third = await pool.take("a")  # the refill started after the takes, but none has finished: a miss
        assert third.n >= 2
        stats = await settle(pool, "a", 2)
        assert (stats.hits, stats.misses, stats.ready) == (2, 1, 2)
        handed = {first.n, second.n, third.n}
        ready_now = {t.n for t in factory.made} - handed
        assert len(ready_now) == 2 and not ready_now & handed  # nothing handed out comes back
        await pool.close()
        assert all(t.stopped == 1 for t in factory.made if t.n in ready_now)  # drained
        assert all(t.stopped == 0 for t in (first, second, third))  # the takers' own

    asyncio.run(run())


def test_a_dead_ready_item_is_stopped_and_replaced_not_handed_out():
    async def run() -> None:
        factory = Factory()
        pool = WarmPool(factory.start, factory.stop, size=2, healthy=lambda t: t.alive)
        pool.fill("a")
        await settle(pool, "a", 2)
        for thing in factory.made:
            thing.alive = False  # e.g. killed by the OOM killer while it waited
        taken = await pool.take("a")
        assert taken.alive and taken.n == 2
        stats = await settle(pool, "a", 2)
        assert (stats.discarded, stats.misses, stats.hits) == (2, 1, 0)
        assert [t.stopped for t in factory.made[:2]] == [1, 1]
        await pool.close()

    asyncio.run(run())


def test_refill_is_bounded_keyed_by_spec_and_survives_failed_starts():
    async def run() -> None:
        factory = Factory(delay_s=0.02, fail_first=2)
        pool = WarmPool(factory.start, factory.stop, size=3, max_starting=1)
        pool.fill("a")
        pool.fill("b")
        a, b = await settle(pool, "a", 3, 10), await settle(pool, "b", 3, 10)
        assert factory.most_running == 1  # one background start at a time, over both specs
        assert a.ready == b.ready == 3 and a.failed + b.failed == 2
        await pool.close()
        assert await pool.take("a") is not None  # after close: started on demand, nothing kept
        assert pool.stats("a").ready == 0

    asyncio.run(run())


def test_the_refill_after_a_take_waits_for_the_takers_reply_to_go_out():
    """A start forks (it holds the event loop), so the refill begins refill_delay_s after the take, not at once."""
    async def run() -> None:
        factory = Factory()
        pool = WarmPool(factory.start, factory.stop, size=1, refill_delay_s=0.3)
        pool.fill("a")  # at server start: no delay
        await settle(pool, "a", 1)
        await pool.take("a")
        await asyncio.sleep(0.1)
        assert len(factory.made) == 1 and factory.running == 0  # nothing started yet
        assert (await settle(pool, "a", 1)).ready == 1 and len(factory.made) == 2
        await pool.close()

    asyncio.run(run())


def test_a_burst_of_takes_starts_nothing_until_it_is_over():
    """A start forks the server (it holds the event loop): while takes keep coming (64 rollouts opening at once),
    the refill waits for them to stop, so no open queues behind a fork."""
    async def run() -> None:
        factory = Factory()
        pool = WarmPool(factory.start, factory.stop, size=12, refill_delay_s=0.1, refill_max_wait_s=5.0)
        pool.fill("a")
        await settle(pool, "a", 12)
        for _ in range(12):  # one take every 40 ms: 0.48 s of takes, each gap under refill_delay_s
            await pool.take("a")
            await asyncio.sleep(0.04)
        assert len(factory.made) == 12 and factory.running == 0  # not one start during the burst
        assert (await settle(pool, "a", 12)).ready == 12 and len(factory.made) == 24  # refilled after it
        await pool.close()

    asyncio.run(run())


def test_takes_that_never_stop_still_get_the_pool_refilled():
    async def run() -> None:
        factory = Factory()
        pool = WarmPool(factory.start, factory.stop, size=50, refill_delay_s=0.1, refill_max_wait_s=0.2)
        pool.fill("a")
        await settle(pool, "a", 50)
        for _ in range(20):  # 0.6 s of takes, never quiet for refill_delay_s: starts begin at refill_max_wait_s
            await pool.take("a")
            await asyncio.sleep(0.03)
        assert len(factory.made) > 50
        await pool.close()

    asyncio.run(run())


def test_a_discarded_spec_stops_its_ready_items_and_its_refill():
    async def run() -> None:
        factory = Factory(delay_s=0.05)
        pool = WarmPool(factory.start, factory.stop, size=2, refill_delay_s=0)
        pool.fill("a")
        pool.fill("b")
        await settle(pool, "a", 2)
        await settle(pool, "b", 2)
        taken = await pool.take("a")  # starts a's refill
        await pool.discard("a")
        await asyncio.sleep(0.2)  # a cancelled refill starts nothing more
        a_things = [t for t in factory.made if t is not taken and t.stopped == 0 and t.alive]
        assert pool.stats("a").ready == 0 and len(a_things) == 2  # b's two; a's ready one was stopped
        assert taken.stopped == 0  # the taker's item is the taker's
        assert pool.stats("b").ready == 2
        await pool.close()

    asyncio.run(run())


def test_a_pool_of_size_zero_starts_on_demand_only():
    async def run() -> None:
        factory = Factory()
        pool = WarmPool(factory.start, factory.stop, size=0)
        pool.fill("a")
        await pool.take("a")
        await asyncio.sleep(0.05)
        assert len(factory.made) == 1 and pool.stats("a").misses == 1
        with pytest.raises(ValueError, match="size must be >= 0"):
            WarmPool(factory.start, factory.stop, size=-1)

    asyncio.run(run())


# -- python sessions served warm interpreters ----------------------------------------------------------
WARM = 2


def warm_ready(url: str) -> int:
    return httpx.get(f"{url}/readyz").json()["sessions"]["warm_interpreters_ready"]


def takes(url: str, result: str) -> float:
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("olmorl_session_pool_takes_total{") and f'result="{result}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from olmorl.rewards.service._local import LocalRewardServer

    tmp = tmp_path_factory.mktemp("pools")
    sessions = SessionSettings(max_sandboxed=2, warm_interpreters=WARM, call_timeout_s=8.0, cpu_s=5, memory_mb=256,
                               state_dir=str(tmp / "state"))
    srv = LocalRewardServer(workers=1, log_path=str(tmp / "server.log"), sessions=sessions,
                            sandbox=SandboxSettings(parallelism=1)).start()
    srv.state_dir = tmp / "state"
    assert wait_for(lambda: warm_ready(srv.url) == WARM, 30)
    yield srv
    srv.stop()


SECRET_WRITE = ("import os, subprocess\nsecret = 'pool-secret-41'\nopen('/tmp/secret', 'w').write(secret)\n"
                "os.environ['POOL_SECRET'] = secret\nsubprocess.Popen(['sleep', '60'])\nprint('written')")
SECRET_READ = ("import os\nprint('secret' in globals(), os.path.exists('/tmp/secret'), 'POOL_SECRET' in os.environ, "
               "[f for f in os.listdir('/tmp') if not f.startswith('.cell-')])")  # but its own output files


def test_a_warm_interpreter_has_never_seen_another_sessions_data(server):
    """A session leaves a secret in its globals, /tmp, environment and a process; none of the next sessions,
    all served warm, sees any of it: a used interpreter is stopped, never put back in the pool."""
    steady = len(descendants(server.process.pid))  # the server, its worker, and WARM warm interpreters
    hits = takes(server.url, "hit")
    with SessionClient(server.url) as client:
        with client.open("python", {"ground_truth": "1"}) as first:
            assert first.call("python", code=SECRET_WRITE).output == "written\n"
        for _ in range(WARM + 2):  # more than the pool holds: a recycled interpreter would come round again
            assert wait_for(lambda: warm_ready(server.url) == WARM)
            with client.open("python", {"ground_truth": "1"}) as later:
                assert later.call("python", code=SECRET_READ).output == "False False False []\n"
    assert takes(server.url, "hit") - hits == WARM + 3  # every one of those sessions was served warm
    # the used interpreters (and the `sleep` the first one started) are gone: only the refilled pool is left
    assert wait_for(lambda: warm_ready(server.url) == WARM and len(descendants(server.process.pid)) == steady, 20)


def test_sessions_restarting_their_interpreter_do_not_run_out_of_slots(server):
    """max_sandboxed=2 and 2 warm: every restart frees the dead interpreter's slot before taking another."""
    with SessionClient(server.url) as client:
        sessions = [client.open("python", {"ground_truth": "1"}) for _ in range(2)]
        for _ in range(3):
            for session in sessions:
                died = session.call("python", code="import os\nos._exit(3)")
                assert died.status == "error" and "exit status 3" in died.error
                again = session.call("python", code="print('alive')")
                assert again.output.endswith("alive\n") and "restarted" in again.output
        for session in sessions:
            session.close()
    assert wait_for(lambda: warm_ready(server.url) == WARM)


def test_stopping_the_server_drains_the_pool(tmp_path):
    from olmorl.rewards.service._local import LocalRewardServer

    state = tmp_path / "state"
    srv = LocalRewardServer(workers=1, log_path=str(tmp_path / "server.log"), sandbox=SandboxSettings(parallelism=1),
                            sessions=SessionSettings(warm_interpreters=WARM, state_dir=str(state))).start()
    try:
        assert wait_for(lambda: warm_ready(srv.url) == WARM, 30)
        pids = [json.loads(p.read_text())["pid"] for p in state.iterdir()]  # one record per live sandbox
        assert len(pids) == WARM and all(os.path.exists(f"/proc/{pid}") for pid in pids)
    finally:
        srv.stop()
    assert wait_for(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in pids), 10)
    assert list(Path(state).iterdir()) == []
