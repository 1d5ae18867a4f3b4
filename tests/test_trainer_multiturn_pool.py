"""olmorl-train sizes its embedded reward server's python pool from the rollouts open at once: every rollout of
every group the loop may have pending ((async_steps + 1) x prompts_per_step groups), up to the server's
`sessions.max_sandboxed`; the server it starts fills that pool."""

import time

import httpx

from olmorl.trainer._config import TrainConfig
from olmorl.trainer._multiturn import warm_interpreters
from olmorl.trainer._rewards import embedded_reward_server


def _cfg(tmp_path, **kw):
    return TrainConfig(model="unused", output_dir=str(tmp_path), **kw)


def test_the_pool_holds_one_interpreter_per_rollout_open_at_once(tmp_path, monkeypatch):
    monkeypatch.delenv("OLMORL_SESSIONS_MAX_SANDBOXED", raising=False)
    assert warm_interpreters(_cfg(tmp_path, async_steps=1, prompts_per_step=4, group_size=8)) == 64
    assert warm_interpreters(_cfg(tmp_path, async_steps=0, prompts_per_step=3, group_size=5)) == 15
    assert warm_interpreters(_cfg(tmp_path, async_steps=2, prompts_per_step=32, group_size=8)) == 64  # max_sandboxed
    monkeypatch.setenv("OLMORL_SESSIONS_MAX_SANDBOXED", "10")
    assert warm_interpreters(_cfg(tmp_path, async_steps=1, prompts_per_step=4, group_size=8)) == 10


def test_the_embedded_server_fills_the_sized_pool(tmp_path, monkeypatch):
    monkeypatch.delenv("OLMORL_SESSIONS_WARM_INTERPRETERS", raising=False)
    cfg = _cfg(tmp_path, async_steps=0, prompts_per_step=2, group_size=3)
    assert "OLMORL_SESSIONS_WARM_INTERPRETERS" not in embedded_reward_server(cfg, multiturn=False).env
    with embedded_reward_server(cfg, multiturn=True) as server:
        assert server.env["OLMORL_SESSIONS_WARM_INTERPRETERS"] == "6"
        deadline, ready = time.monotonic() + 90, 0
        while ready < 6 and time.monotonic() < deadline:
            ready = httpx.get(f"{server.url}/readyz", timeout=5).json()["sessions"]["warm_interpreters_ready"]
            time.sleep(0.2)
        assert ready == 6  # the default pool is 2
        time.sleep(1.0)
        assert httpx.get(f"{server.url}/readyz", timeout=5).json()["sessions"]["warm_interpreters_ready"] == 6


def test_an_explicit_pool_size_in_the_environment_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("OLMORL_SESSIONS_WARM_INTERPRETERS", "1")
    server = embedded_reward_server(_cfg(tmp_path, async_steps=0, prompts_per_step=2, group_size=3), multiturn=True)
    assert server.env["OLMORL_SESSIONS_WARM_INTERPRETERS"] == "1"
