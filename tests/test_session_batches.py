"""The session batch routes (/v1/sessions/batch/open, .../tool, .../verify) over real HTTP: a real server
subprocess, real sandboxed python sessions. Each item gets the status its single route would have answered (one
bad item never fails the batch); a batch's items run at once; a retried batch runs no tool twice (each item
keeps its idempotency key); the clients' `open_many` / `call_many` / `verify_many` return each item's result
or its error, in order."""

from __future__ import annotations

import asyncio
import time

import httpx

from olmorl.clients import (AsyncSessionClient, RewardServerError, RewardServerUnavailable, SessionClient,
                            SessionNotFound, ToolResult, VerifyResult)
from test_session_retries import COUNT, DroppingProxy, server  # noqa: F401  (server: python sessions, max_sandboxed 4)

PY = {"env": "python", "task": {"ground_truth": "3"}}


def _post(url: str, route: str, items: list) -> list[dict]:
    reply = httpx.post(f"{url}/v1/sessions/batch/{route}", json={"items": items}, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()["results"]


def test_each_item_gets_its_own_status_and_a_bad_one_fails_no_other(server):
    opened = _post(server.url, "open", [PY, {"env": "no_such_env"}, {"env": "python", "tsk": {}}, 7, PY])
    assert [r["status_code"] for r in opened] == [200, 422, 422, 422, 200]
    assert "no_such_env" in opened[1]["error"] and "tsk" in opened[2]["error"]
    first, second = (r["result"]["session_id"] for r in (opened[0], opened[4]))
    assert opened[0]["result"]["tools"][0]["function"]["name"] == "python"

    tools = _post(server.url, "tool", [
        {"session_id": first, "name": "python", "arguments": {"code": "x = 3\nprint(x)"}},
        {"session_id": "no-such-session", "name": "python", "arguments": {"code": "print(1)"}},
        {"session_id": second, "name": "no_such_tool"},  # the model's mistake: a result, as the single route
        {"name": "python"},  # malformed: no session
        {"session_id": second, "name": "python", "arguments": {"code": "print(2)"}, "idempotency_key": "k" * 201},
        {"session_id": second, "name": "python", "arguments": {"code": "print(4)"}},
    ])
    assert [r["status_code"] for r in tools] == [200, 404, 200, 422, 422, 200]
    assert tools[0]["result"]["output"] == "3\n" and tools[5]["result"]["output"] == "4\n"
    assert tools[2]["result"]["status"] == "invalid" and "no_such_tool" in tools[2]["result"]["error"]
    assert "no session 'no-such-session'" in tools[1]["error"] and "session_id" in tools[3]["error"]
    assert "Idempotency-Key" in tools[4]["error"]

    verified = _post(server.url, "verify", [{"session_id": first, "response": "\\boxed{3}"},
                                            {"session_id": second, "response": "\\boxed{4}"},
                                            {"session_id": first, "response": "\\boxed{3}"}])
    assert [r["status_code"] for r in verified] == [200, 200, 404]
    assert verified[0]["result"]["reward"] == 1.0 and verified[1]["result"]["reward"] == 0.0
    assert "closed (verified)" in verified[2]["error"]  # the first item ended the session

    envelope = httpx.post(f"{server.url}/v1/sessions/batch/tool", json={"calls": []}, timeout=30)
    assert envelope.status_code == 422 and "items" in envelope.text


def test_a_batchs_tool_calls_run_at_once(server):
    with SessionClient(server.url) as client:
        sessions = client.open_many([PY] * 3)
        sleep = "import time\ntime.sleep(0.6)\nprint('up')"
        started = time.perf_counter()
        results = client.call_many([(s, "python", {"code": sleep}) for s in sessions])
        elapsed = time.perf_counter() - started
        assert [r.output for r in results] == ["up\n"] * 3
        assert elapsed < 1.5, f"3 calls of 0.6 s took {elapsed:.2f} s: not run at once"
        client.verify_many([(s, "3") for s in sessions])


def test_the_clients_return_each_items_result_or_error_in_order(server):
    with SessionClient(server.url, max_retries=0) as client:
        opened = client.open_many([PY, {"env": "no_such_env"}, PY])
        assert isinstance(opened[1], RewardServerError) and opened[1].status_code == 422
        a, b = opened[0], opened[2]
        calls = client.call_many([(a, "python", {"code": "print(1 + 2)"}), (b, "python", "not json"),
                                  (b, "python", {"code": "print(5)"})])
        assert isinstance(calls[0], ToolResult) and calls[0].output == "3\n"
        assert calls[1].status == "invalid" and calls[2].output == "5\n"
        scored = client.verify_many([(a, "\\boxed{3}"), (b, "\\boxed{4}", [{"role": "user", "content": "1+2"}])])
        assert [r.reward for r in scored] == [1.0, 0.0] and all(isinstance(r, VerifyResult) for r in scored)
        again = client.verify_many([(a, "\\boxed{3}")])
        assert isinstance(again[0], SessionNotFound)
        assert client.call_many([]) == [] and client.open_many([]) == []

    async def run() -> list:
        async with AsyncSessionClient(server.url) as client:
            sessions = await client.open_many([PY, PY])
            outs = await client.call_many([(s, "python", {"code": f"print({i})"}) for i, s in enumerate(sessions)])
            scored = await client.verify_many([(s, "3") for s in sessions])
            return [o.output for o in outs] + [r.reward for r in scored]

    assert asyncio.run(run()) == ["0\n", "1\n", 1.0, 1.0]


def test_items_a_full_server_refuses_are_retried_then_named(server):
    """max_sandboxed 4: a batch of 6 opens 4; the other 2 get 503 each, are sent again, and past the retries
    each says why (the batch's other items are sessions all the same)."""
    with SessionClient(server.url, max_retries=1) as client:
        opened = client.open_many([PY] * 6)
        sessions = [s for s in opened if not isinstance(s, Exception)]
        refused = [e for e in opened if isinstance(e, Exception)]
        assert len(sessions) == 4 and len(refused) == 2
        assert all(isinstance(e, RewardServerUnavailable) and "after 2 attempts" in str(e)
                   and "503" in str(e) and "max_sandboxed" in str(e) for e in refused), refused
        client.verify_many([(s, "3") for s in sessions])


def test_a_retried_batch_runs_no_tool_twice(server):
    """The server runs a batch and answers; the reply is lost (connection reset). The client sends the batch
    again with each item's key: it gets the first replies, and no tool ran twice."""
    proxy = DroppingProxy(server.url)
    try:
        with SessionClient(proxy.url, max_retries=3) as client:
            sessions = client.open_many([PY, PY])
            proxy.drop("/batch/tool")
            first = client.call_many([(s, "python", {"code": COUNT}) for s in sessions])
            assert proxy.dropped == 1
            assert [r.output.strip() for r in first] == ["1", "1"]  # the first run's replies
            second = client.call_many([(s, "python", {"code": COUNT}) for s in sessions])
            assert [r.output.strip() for r in second] == ["2", "2"]  # so each tool ran once before
            proxy.drop("/batch/verify")
            scored = client.verify_many([(s, "\\boxed{3}") for s in sessions])
            assert proxy.dropped == 2
            assert [(r.status, r.details["tool_calls"]) for r in scored] == [("ok", 2), ("ok", 2)]
    finally:
        proxy.close()


def test_a_batch_the_trainer_could_not_send_is_each_rollouts_infrastructure_error():
    """Three rollouts' opens go out as one batched request; no server answers it: each rollout gets a
    RolloutError of status `error` naming the cause (never a reward), not a hang."""
    import socket

    from olmorl.trainer import RolloutError, SessionCalls

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"

    async def run() -> tuple[list, dict[str, int]]:
        calls = SessionCalls([url])
        outcomes = await asyncio.gather(*(calls.create("python", {"ground_truth": "1"}) for _ in range(3)),
                                        return_exceptions=True)
        await calls.aclose()
        return outcomes, calls.requests

    outcomes, requests = asyncio.run(run())
    assert requests["open"] == 1
    for outcome in outcomes:
        assert isinstance(outcome, RolloutError) and outcome.status == "error", outcome
        assert "RewardServerUnavailable" in str(outcome) and "ConnectError" in str(outcome), outcome
        assert f"{url}/v1/sessions/batch/open" in str(outcome), outcome


def test_a_reply_with_another_count_of_outcomes_fails_every_call_of_its_request():
    """A send that answers fewer (or more) outcomes than calls: each call fails naming both counts, none waits
    forever for an outcome (before: zip left the unpaired calls' futures unresolved, a hung rollout) and none
    takes another call's outcome."""
    from olmorl.trainer._session_batching import Coalescer

    async def run(outcomes: int) -> list:
        async def send(calls: list) -> list:
            return [f"result {i}" for i in range(outcomes)]

        coalescer = Coalescer(send, 0.0, track=lambda task: None)
        futures = [coalescer.submit(i) for i in range(3)]
        return await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), timeout=5)

    for outcomes in (2, 4):
        replies = asyncio.run(run(outcomes))
        assert all(isinstance(r, RewardServerError) for r in replies), replies
        assert all(f"{outcomes} outcomes for 3 items" in str(r) for r in replies), replies


def test_the_clients_fail_each_item_of_a_reply_with_another_count_of_outcomes():
    """A real HTTP server that answers a batch of 3 with 2 outcomes: each item is that error, named by counts."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Short(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers["Content-Length"]))
            created = {"session_id": "s", "env": "python", "tools": []}
            body = json.dumps({"results": [{"status_code": 200, "result": created}] * 2}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Short)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with SessionClient(f"http://127.0.0.1:{httpd.server_address[1]}", max_retries=0) as client:
            opened = client.open_many([PY] * 3)
        assert all(isinstance(o, RewardServerError) and "2 outcomes for 3 items" in str(o) for o in opened), opened
    finally:
        httpd.shutdown()
        httpd.server_close()
