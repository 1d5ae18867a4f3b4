"""A rollout cancelled in the middle of a session request (the trainer's shutdown cancels rollouts in flight)
leaves no session open on the server. Cancelled mid-open, the server still finishes the setup: the client lets
the open finish and closes the session before it closes itself (before, that session stayed until its TTL)."""

from __future__ import annotations

import asyncio
import re
import time

import httpx
import pytest

from olmorl.trainer._sessions import SessionCalls


def _sessions_open(url: str) -> float:
    text = httpx.get(f"{url}/metrics").text
    return sum(float(v) for v in re.findall(r'^olmorl_sessions_open\{[^}]*\} (\S+)$', text, re.M))


def test_a_rollout_cancelled_while_its_session_opens_leaves_nothing_open(reward_server):
    url = reward_server(workers=1, plugins=["plugins.slow_env"])

    async def cancel_mid_open() -> None:
        calls = SessionCalls([url])
        opening = asyncio.ensure_future(calls.create("test_slow_start", {"delay_s": 2.0}))
        await asyncio.sleep(0.5)  # the request is on the server, inside the environment's 2 s setup
        opening.cancel()
        with pytest.raises(asyncio.CancelledError):
            await opening
        await calls.aclose()

    asyncio.run(cancel_mid_open())
    time.sleep(2.5)  # past the setup the server went on with
    assert _sessions_open(url) == 0


def test_a_rollout_cancelled_while_its_session_verifies_leaves_nothing_open(reward_server):
    url = reward_server(workers=1, plugins=["plugins.slow_env"])

    async def cancel_mid_verify() -> None:
        calls = SessionCalls([url])
        session = await calls.create("test_slow_start", {"delay_s": 0.0, "verify_delay_s": 2.0})
        verifying = asyncio.ensure_future(calls.verify(session.id, "done", []))
        await asyncio.sleep(0.5)  # the request is on the server, inside the environment's 2 s verify
        verifying.cancel()
        with pytest.raises(asyncio.CancelledError):
            await verifying
        await calls.aclose()

    asyncio.run(cancel_mid_verify())
    time.sleep(2.5)  # past the verify the server went on with
    assert _sessions_open(url) == 0
