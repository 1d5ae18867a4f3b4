"""The idle sessions' memory budget: real sessions on a real server, measured, evicted longest idle first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from olmorl.clients import SessionClient, SessionNotFound
from olmorl.rewards._settings import SandboxSettings, SessionSettings
from olmorl.sandbox._memory import process_tree_bytes
from test_sessions import wait_for

MiB = 1 << 20
HOLD = "kept = b'x' * (64 << 20)"  # 64 MiB, written (not pages the kernel would map lazily)


def sessions_state(url: str) -> dict[str, int]:
    return httpx.get(f"{url}/readyz", timeout=10).json()["sessions"]


def test_idle_sessions_over_the_budget_are_evicted_longest_idle_first(reward_server, tmp_path):
    url = reward_server(workers=1, sandbox=SandboxSettings(parallelism=1),
                        sessions=SessionSettings(idle_memory_mb=180, reap_interval_s=0.2, state_dir=str(tmp_path)))
    state = sessions_state(url)
    assert state["idle_memory_budget_bytes"] == 180 * MiB and state["evicted"] == 0
    with SessionClient(url) as client, httpx.Client(base_url=url, timeout=30) as gym:
        gym.post("/seed_session", json={"env": "python", "task": {"ground_truth": "1"}}).raise_for_status()
        assert gym.post("/python", json={"code": HOLD}).json()["status"] == "ok"
        first = client.open("python", {"ground_truth": "1"})
        assert first.call("python", code=HOLD).status == "ok"
        # two sessions of ~70 MiB each fit in 180 MiB: measured, nothing evicted
        assert wait_for(lambda: sessions_state(url)["idle_memory_bytes"] >= 2 * 64 * MiB)
        assert sessions_state(url)["evicted"] == 0
        assert gym.post("/python", json={"code": "len(kept)"}).json()["output"] == f"{64 * MiB}\n"  # now the newer

        second = client.open("python", {"ground_truth": "1"})
        assert second.call("python", code=HOLD).status == "ok"  # a third: over the budget
        assert wait_for(lambda: sessions_state(url)["evicted"] == 1)
        with pytest.raises(SessionNotFound, match="evicted: idle sessions held .* over their budget of 180 MiB"):
            first.call("python", code="len(kept)")  # the longest idle, though not the first opened

        third = client.open("python", {"ground_truth": "1"})
        assert third.call("python", code=HOLD).status == "ok"
        assert wait_for(lambda: sessions_state(url)["evicted"] == 2)
        lost = gym.post("/verify", json={"response": "1"}).json()  # the gym session was the longest idle now
        assert lost["failure_kind"] == "olmorl:session_lost" and lost["mask_sample"] is True
        assert "evicted" in lost["failure_reason"]
        for kept in (second, third):  # the newest survive, with their state
            assert kept.call("python", code="len(kept)").output == f"{64 * MiB}\n"

        state = sessions_state(url)
        assert state["open"] == 2 and 2 * 64 * MiB <= state["memory_bytes"] <= 180 * MiB
        assert state["idle_memory_bytes"] <= state["idle_memory_budget_bytes"]
    assert 'olmorl_sessions_evicted_total{env="python"} 2.0' in httpx.get(f"{url}/metrics").text


def test_the_default_budget_is_a_quarter_of_the_machine(reward_server, tmp_path):
    url = reward_server(workers=1, sessions=SessionSettings(state_dir=str(tmp_path)))
    mem_total = next(int(line.split()[1]) * 1024 for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemTotal:"))
    state = sessions_state(url)
    assert mem_total // 8 < state["idle_memory_budget_bytes"] <= mem_total // 4  # less only under a cgroup limit
    assert (state["open"], state["idle_memory_bytes"], state["evicted"]) == (0, 0, 0)


def test_a_process_tree_is_measured_children_included():
    child = "import time; kept = b'y' * (48 << 20); print(1, flush=True); time.sleep(60)"
    parent = (f"import subprocess, sys, time; kept = b'x' * (32 << 20); "
              f"p = subprocess.Popen([sys.executable, '-c', {child!r}]); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", parent], start_new_session=True)
    try:
        assert wait_for(lambda: process_tree_bytes(proc.pid) >= 80 * MiB, 10)
        assert process_tree_bytes(proc.pid) < 200 * MiB
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the child too
        proc.wait()
