"""Faults from outside: a worker killed mid-batch, a replica killed during a run, the judge upstream
failing, the server restarted while a client retries. Real servers, real processes, real signals."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import threading
import time
from pathlib import Path

import httpx
from fake_openai import FakeOpenAI

from olmorl.clients import AsyncRewardClient, RewardClient
from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import JudgeSettings

PLUGINS = ["plugins.blocking"]


def string_items(count: int, prefix: str = "s") -> list[dict]:
    return [{"id": f"{prefix}{i}", "verifier": "string_match", "response": f"<answer>{i}</answer>",
             "ground_truth": str(i)} for i in range(count)]


def wait_for_file(path: Path, timeout_s: float = 30.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.02)
    raise TimeoutError(f"{path} was never written")


def items_total(url: str, verifier: str) -> float:
    text = httpx.get(f"{url}/metrics").text
    return sum(float(v) for v in re.findall(rf'olmorl_items_total{{[^}}]*verifier="{verifier}"[^}}]*}} (\S+)', text))


def test_worker_killed_mid_batch_costs_that_item_only(reward_server, tmp_path):
    url = reward_server(workers=2, item_timeout_s=60, plugins=PLUGINS)
    pid_file = tmp_path / "worker.pid"
    items = [{"id": "victim", "verifier": "test_block",
              "ground_truth": {"pid_file": str(pid_file), "seconds": 60}, "response": ""}, *string_items(30)]
    replies: list[httpx.Response] = []
    sender = threading.Thread(target=lambda: replies.append(
        httpx.post(f"{url}/v1/verify", json={"items": items}, timeout=90)))
    sender.start()
    victim = int(wait_for_file(pid_file))
    pid_file.unlink()
    os.kill(victim, signal.SIGKILL)
    # The victim travelled in a chunk with other items; the dead chunk is retried item by item, so the
    # victim runs again, alone, in a new worker, and dies there too: only then is it known to be the one.
    second_victim = int(wait_for_file(pid_file))
    assert second_victim != victim
    os.kill(second_victim, signal.SIGKILL)
    sender.join(90)

    results = replies[0].json()["results"]
    assert replies[0].status_code == 200 and len(results) == 31
    assert results[0]["status"] == "error" and "worker process died" in results[0]["error"]
    assert [r["id"] for r in results[1:]] == [f"s{i}" for i in range(30)]
    assert all(r["status"] == "ok" and r["reward"] == 1.0 for r in results[1:])
    # The pool replaced the worker: a new batch is scored, by workers none of which is the dead one.
    again = httpx.post(f"{url}/v1/verify", json={"items": [
        {"verifier": "test_sleep", "response": "", "ground_truth": 0.05} for _ in range(8)]}, timeout=30).json()
    assert {r["status"] for r in again["results"]} == {"ok"}
    assert not {victim, second_victim} & {r["details"]["pid"] for r in again["results"]}


async def test_replica_killed_during_a_run_loses_no_item():
    # Each item costs 5 ms in the single worker of each replica, so 1,200 items take several seconds.
    items = [{"id": str(i), "verifier": "test_sleep", "response": "", "ground_truth": 0.005} for i in range(1200)]
    with LocalRewardServer(workers=1, plugins=PLUGINS) as first, LocalRewardServer(workers=1, plugins=PLUGINS) as second:
        async with AsyncRewardClient([first.url, second.url], max_batch_size=20, max_concurrency=4,
                                     max_retries=6) as client:
            run = asyncio.create_task(client.verify(items))
            await asyncio.sleep(1.0)
            assert not run.done()
            os.killpg(first.process.pid, signal.SIGKILL)  # the server and its workers, no goodbye
            results = await run
        assert [r.id for r in results] == [str(i) for i in range(1200)]
        assert {r.status for r in results} == {"ok"}
        # the survivor scored what the dead one did not finish: more than its round-robin half
        assert items_total(second.url, "test_sleep") > 600


def test_judge_upstream_errors_fail_judge_items_only(reward_server):
    with FakeOpenAI(models=("judge-model",), default_script="500") as judge:
        url = reward_server(workers=1, judge=JudgeSettings(base_url=judge.url, model="judge-model", max_retries=1,
                                                            retry_backoff_s=0.01, timeout_s=5))
        items = [{"id": "j1", "verifier": "judge", "prompt": "Hi?", "response": "Hello."},
                 {"id": "m", "verifier": "math", "response": "\\boxed{3}", "ground_truth": "3"},
                 {"id": "j2", "verifier": "general-quality", "prompt": "Hi?", "response": "Hey."},
                 *string_items(5)]
        with RewardClient(url) as client:
            results = client.verify(items)
    by_id = {r.id: r for r in results}
    for judged in ("j1", "j2"):
        assert by_id[judged].status == "error" and by_id[judged].reward is None and by_id[judged].error
    assert by_id["m"].status == "ok" and by_id["m"].reward == 1.0
    assert all(by_id[f"s{i}"].status == "ok" for i in range(5))


async def test_server_restarted_while_the_client_retries(tmp_path):
    server = LocalRewardServer(workers=1, log_path=str(tmp_path / "first.log")).start()
    port = server.port
    server.stop()
    restarted: list[LocalRewardServer] = []

    def restart() -> None:
        time.sleep(1.0)  # the client has been failing to connect for a while by now
        restarted.append(LocalRewardServer(port=port, workers=1, log_path=str(tmp_path / "second.log")).start())

    restarter = threading.Thread(target=restart)
    restarter.start()
    try:
        started = time.monotonic()
        async with AsyncRewardClient(server.url, max_retries=10) as client:
            results = await client.verify(string_items(50))
        waited = time.monotonic() - started
        restarter.join()
        assert [r.id for r in results] == [f"s{i}" for i in range(50)]
        assert {r.status for r in results} == {"ok"}, {r.error for r in results}
        assert waited >= 1.0  # it really was down, and the client waited it out
    finally:
        restarter.join()
        for process in restarted:
            process.stop()
