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


@pytest.mark.parametrize("cancelled_in", ["open", "verify"])
def test_a_rollout_cancelled_mid_request_leaves_no_session_open(reward_server, cancelled_in):
    url = reward_server(workers=1, plugins=["plugins.slow_env"])
    task = {"delay_s": 2.0} if cancelled_in == "open" else {"delay_s": 0.0, "verify_delay_s": 2.0}

    async def cancel_mid_request() -> None:
        calls = SessionCalls([url])
        if cancelled_in == "open":
            request = asyncio.ensure_future(calls.create("test_slow_start", task))
        else:
            session = await calls.create("test_slow_start", task)
            request = asyncio.ensure_future(calls.verify(session.id, "done", []))
        await asyncio.sleep(0.5)  # the request is on the server, inside the environment's 2 s setup or verify
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        await calls.aclose()

    asyncio.run(cancel_mid_request())
    # past the setup or verify the server went on with (2 s; longer on a loaded machine): a leaked session
    # would stay open for the idle TTL (600 s), far past this wait
    deadline = time.monotonic() + 30
    while _sessions_open(url) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _sessions_open(url) == 0
