"""Warm swe containers (`swe.warm_containers`) against a real server and the real Docker engine: the next
session of a task takes a container started ahead, and that container has never seen another session."""

from __future__ import annotations

import re
import subprocess
import time

import httpx
import pytest

from olmorl.clients import SessionClient
from olmorl.rewards._settings import SessionSettings
from swe_support import TASKS, SweSettings, docker_or_skip
from swe_support import task_containers as container_ids

pytestmark = docker_or_skip()


def task_containers() -> set[str]:
    return set(container_ids())


def _takes(url: str) -> dict[str, float]:
    metrics = httpx.get(f"{url}/metrics", timeout=10).text
    return {m[1]: float(m[2]) for m in
            re.finditer(r'olmorl_session_pool_takes_total\{kind="swe",result="(hit|miss)"\} ([0-9.]+)', metrics)}


def _wait_for_ready(before: set[str], want: int, deadline_s: float = 60.0) -> set[str]:
    """The ids of containers started beyond `before`, once there are `want` of them."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        extra = task_containers() - before
        if len(extra) >= want:
            return extra
        time.sleep(0.2)
    raise AssertionError(f"the pool did not start {want} container(s) within {deadline_s:g} s")


def test_a_warm_container_serves_the_next_session_and_holds_nothing_of_the_last(tmp_path):
    from olmorl.rewards.service._local import LocalRewardServer

    before = task_containers()
    server = LocalRewardServer(workers=1, log_path=str(tmp_path / "server.log"),
                               sessions=SessionSettings(state_dir=str(tmp_path / "state"), call_timeout_s=90),
                               swe=SweSettings(task_root=str(TASKS), memory_mb=512, disk_mb=64,
                                               warm_containers=1)).start()
    try:
        with SessionClient(server.url, timeout=180) as client:
            first = client.open("swe", {"path": "calc-bug"})  # a miss: then one is started for the next
            secret = "olmorl-secret-" + str(time.time_ns())
            for command in (f"echo {secret} > NOTES.txt", f"echo {secret} > /tmp/left.txt",
                            f"(while sleep 1; do echo {secret}; done) >/dev/null 2>&1 &"):
                assert first.call("bash", command=command).status == "ok"
            workdir = first.call("bash", command="pwd").output.strip()
            started = _wait_for_ready(before, 2)
            warm = {c for c in started if subprocess.run(["docker", "exec", c, "test", "-f", f"{workdir}/NOTES.txt"],
                                                         capture_output=True).returncode != 0}
            assert len(started) == 2 and len(warm) == 1, (workdir, started)
            first.close()

            second = client.open("swe", {"path": "calc-bug"})  # a hit: the container started ahead
            assert task_containers() - before >= warm  # the warm one is the second's (plus its own refill)
            seen = second.call("bash", command="cat NOTES.txt /tmp/left.txt; ps -eo args")
            assert secret not in seen.output and "No such file" in seen.output, seen.output
            assert second.call("bash", command="ls calc").output.split() == ["__init__.py", "ops.py"]
            assert _takes(server.url) == {"hit": 1.0, "miss": 1.0}
            second.close()
    finally:
        server.stop()
    assert task_containers() - before == set()  # server stop removed the ready ones too
