"""Opens safe to retry and batched closes, over real HTTP (a real server subprocess, real sandboxed python
sessions, the TCP proxy of test_session_retries that loses a reply after the server sent it): an open whose
reply was lost is answered with the session it opened, not a second one (single and batched, sync and async);
a refused open is not kept, so its retry opens; `POST /v1/sessions/batch/close` closes each item as DELETE
would (200, 404 for an unknown or closed session), and the clients' `close_many` return each outcome."""

from __future__ import annotations

import asyncio
import re

import httpx

from olmorl.clients import AsyncSessionClient, SessionClient, SessionClosed, SessionNotFound
from test_session_retries import DroppingProxy, server  # noqa: F401  (server: python sessions, max_sandboxed 4)

PY = {"env": "python", "task": {"ground_truth": "3"}}


def _metric(url: str, name: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=30).text
    return sum(float(v) for v in re.findall(rf'^{name}\{{[^}}]*\}} (\S+)$', text, re.M))


def _created(url: str) -> float:
    return _metric(url, "olmorl_sessions_created_total")


def test_an_open_whose_reply_was_lost_opens_one_session_per_item(server):
    """Before, the retry of a batch open whose reply the proxy dropped opened every item again (4 sessions for
    2, the first two leaked until their idle TTL, holding 2 of the server's 4 sandbox slots)."""
    proxy = DroppingProxy(server.url)
    try:
        with SessionClient(proxy.url, max_retries=3) as client:
            before = _created(server.url)
            proxy.drop("/batch/open")
            sessions = client.open_many([PY, PY])
            assert proxy.dropped == 1 and _created(server.url) - before == 2
            assert len({s.id for s in sessions}) == 2
            assert [r.output for r in client.call_many([(s, "python", {"code": "print(3)"}) for s in sessions])] \
                == ["3\n", "3\n"]
            proxy.drop("/v1/sessions HTTP")  # the single route, its key in the header
            single = client.open("python", {"ground_truth": "3"})
            assert proxy.dropped == 2 and _created(server.url) - before == 3
            client.close_many([*sessions, single])
            assert _metric(server.url, "olmorl_sessions_open") == 0

        async def run() -> None:
            async with AsyncSessionClient(proxy.url, max_retries=3) as client:
                proxy.drop("/batch/open")
                opened = await client.open_many([PY])
                proxy.drop("/v1/sessions HTTP")
                one = await client.open("python", {"ground_truth": "3"})
                assert proxy.dropped == 4 and _created(server.url) - before == 5
                closed = await client.close_many([*opened, one])
                assert [c.closed for c in closed] == [True, True]

        asyncio.run(run())
    finally:
        proxy.close()


def test_a_refused_open_is_not_kept_so_its_retry_opens(server):
    """max_sandboxed 4: with 4 open, a keyed open is refused (503); once one closes, the same key opens."""
    with SessionClient(server.url, max_retries=0) as client:
        held = client.open_many([PY] * 4)
        key = {"Idempotency-Key": "open-once"}
        refused = httpx.post(f"{server.url}/v1/sessions", json=PY, headers=key, timeout=30)
        assert refused.status_code == 503, refused.text
        client.close_many(held[:1])
        first = httpx.post(f"{server.url}/v1/sessions", json=PY, headers=key, timeout=30)
        again = httpx.post(f"{server.url}/v1/sessions", json=PY, headers=key, timeout=30)
        assert first.status_code == again.status_code == 200, (first.text, again.text)
        assert first.json()["session_id"] == again.json()["session_id"]
        item = {**PY, "idempotency_key": "open-once"}  # the header's key and an item's are the same open
        batched = httpx.post(f"{server.url}/v1/sessions/batch/open", json={"items": [item]}, timeout=30).json()
        assert batched["results"][0]["result"]["session_id"] == first.json()["session_id"]
        httpx.delete(f"{server.url}/v1/sessions/{first.json()['session_id']}", timeout=30)
        client.close_many(held[1:])


def test_batch_close_gives_each_item_its_single_routes_status(server):
    with SessionClient(server.url, max_retries=0) as client:
        a, b = client.open_many([PY, PY])
        reply = httpx.post(f"{server.url}/v1/sessions/batch/close", timeout=30, json={"items": [
            {"session_id": a.id}, {"session_id": "no-such-session"}, {"sesion_id": b.id}, {"session_id": a.id},
            {"session_id": b.id, "idempotency_key": "c1"}, {"session_id": b.id, "idempotency_key": "c1"}]})
        assert reply.status_code == 200, reply.text
        results = reply.json()["results"]
        # a's second item finds it closed (the items run at once: either may be the one that closes it); b's two
        # items share a key: one close, both answered 200
        assert sorted(r["status_code"] for i, r in enumerate(results) if i in (0, 3)) == [200, 404]
        assert [results[i]["status_code"] for i in (1, 2, 4, 5)] == [404, 422, 200, 200], results
        assert "no session 'no-such-session'" in results[1]["error"] and "session_id" in results[2]["error"]
        assert results[4]["result"] == {"session_id": b.id, "closed": True}

        c, d = client.open_many([PY, PY])
        client.verify_many([(d, "3")])
        closed = client.close_many([c, d])
        assert isinstance(closed[0], SessionClosed) and closed[0].session_id == c.id
        assert isinstance(closed[1], SessionNotFound), closed  # verify had ended it
        assert c.closed and d.closed
        assert isinstance(client.call_many([(c, "python", {"code": "1"})])[0], SessionNotFound)
        assert client.close_many([]) == []
        assert _metric(server.url, "olmorl_sessions_open") == 0


def test_an_open_item_key_over_the_limit_is_that_items_error(server):
    item = {**PY, "idempotency_key": "k" * 201}
    results = httpx.post(f"{server.url}/v1/sessions/batch/open", json={"items": [item]}, timeout=30).json()["results"]
    assert results[0]["status_code"] == 422 and "Idempotency-Key" in results[0]["error"]


def test_the_trainers_rollouts_close_their_sessions_in_one_batched_request(server):
    """Rollouts that end without a verify (an error, a cancel) close their sessions: those ready together go out
    as one POST /v1/sessions/batch/close (before: one DELETE each)."""
    from olmorl.trainer import SessionCalls

    async def run() -> dict[str, int]:
        calls = SessionCalls([server.url])
        sessions = await asyncio.gather(*(calls.create("python", {"ground_truth": "1"}) for _ in range(3)))
        assert _metric(server.url, "olmorl_sessions_open") == 3
        await asyncio.gather(*(calls.close(s.id) for s in sessions))
        await calls.aclose()
        return calls.requests

    assert asyncio.run(run()) == {"open": 1, "tool": 0, "verify": 0, "close": 1}
    assert _metric(server.url, "olmorl_sessions_open") == 0
