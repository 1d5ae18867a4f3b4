"""Session calls survive a dropped connection: a real server behind a TCP proxy that resets the client's
connection AFTER the server ran the call and answered (the client sees httpx.ReadError, as in
examples/tool_use_grpo). The retry carries the same Idempotency-Key, so it gets the first reply and the
tool ran once: the python interpreter's counter says so."""

from __future__ import annotations

import asyncio
import select
import socket
import struct
import threading

import httpx
import pytest

from olmorl.clients import AsyncSessionClient, RewardServerUnavailable, SessionClient
from olmorl.rewards._settings import SessionSettings

COUNT = "n = globals().get('n', 0) + 1\nprint(n)"


class DroppingProxy:
    """Forwards 127.0.0.1:port to the server; the reply to the next `drops` requests whose first line
    contains `marker` is read from the server and thrown away, and the client's connection is reset."""

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("http://").split(":")
        self.target = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.marker, self.drops, self.dropped = b"", 0, 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def drop(self, marker: str, times: int = 1) -> None:
        with self.lock:
            self.marker, self.drops = marker.encode(), times

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        """One connection, one thread (a socket closed under another thread's recv sends no reset)."""
        upstream = socket.create_connection(self.target)
        doomed = False  # the request in flight on this connection is to be dropped
        try:
            while True:
                readable, _, _ = select.select([client, upstream], [], [])
                if client in readable:
                    data = client.recv(65536)
                    if not data:
                        break
                    with self.lock:
                        if self.drops and self.marker in data.split(b"\r\n", 1)[0]:
                            self.drops -= 1
                            doomed = True
                    upstream.sendall(data)
                if upstream in readable:
                    data = upstream.recv(65536)
                    if not data:
                        break
                    if doomed:  # the server ran the call and answered: the client never hears it
                        with self.lock:
                            self.dropped += 1
                        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        break
                    client.sendall(data)
        except OSError:
            pass
        finally:
            client.close()
            upstream.close()

    def close(self) -> None:
        self.listener.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from olmorl.rewards.service._local import LocalRewardServer

    tmp = tmp_path_factory.mktemp("retries")
    srv = LocalRewardServer(workers=1, log_path=str(tmp / "server.log"),
                            sessions=SessionSettings(max_sandboxed=4, state_dir=str(tmp / "state"))).start()
    yield srv
    srv.stop()


@pytest.fixture
def proxy(server):
    p = DroppingProxy(server.url)
    yield p
    p.close()


def test_a_tool_call_whose_reply_was_lost_is_retried_and_runs_once(proxy):
    with SessionClient(proxy.url, max_retries=3) as client, client.open("python", {"ground_truth": "3"}) as session:
        proxy.drop("/tool")
        assert session.call("python", code=COUNT).output.strip() == "1"  # the first run's reply, not a second run
        assert proxy.dropped == 1
        assert session.call("python", code=COUNT).output.strip() == "2"  # so the tool ran once before this
        proxy.drop("/verify")
        result = session.verify("\\boxed{3}")  # the session ended on the first verify; its reply is kept
        assert proxy.dropped == 2
        assert (result.status, result.reward, result.details["tool_calls"]) == ("ok", 1.0, 2)


def test_the_async_client_retries_tool_verify_and_close_with_their_keys(proxy):
    async def run() -> None:
        async with AsyncSessionClient(proxy.url, max_retries=3) as client:
            session = await client.open("python", {"ground_truth": "1"})
            proxy.drop("/tool")
            assert (await session.call("python", code=COUNT)).output.strip() == "1"
            proxy.drop("/verify")
            assert (await session.verify("\\boxed{1}")).reward == 1.0
            other = await client.open("python", {"ground_truth": "1"})
            proxy.drop("DELETE")
            await other.close()
            assert proxy.dropped == 3

    asyncio.run(run())


def test_a_duplicate_that_arrives_while_the_first_runs_waits_for_it(server):
    with SessionClient(server.url) as client, client.open("python", {"ground_truth": "1"}) as session:
        path = f"{server.url}/v1/sessions/{session.id}/tool"
        body = {"name": "python", "arguments": {"code": "import time; time.sleep(0.5)\n" + COUNT}}

        async def twice() -> list[str]:
            async with httpx.AsyncClient(timeout=30) as http:
                replies = await asyncio.gather(*(http.post(path, json=body, headers={"Idempotency-Key": "k1"})
                                                 for _ in range(2)))
            return [r.json()["output"].strip() for r in replies]

        assert asyncio.run(twice()) == ["1", "1"]
        other_key = httpx.post(path, json=body, headers={"Idempotency-Key": "k2"}, timeout=30).json()
        assert other_key["output"].strip() == "2"
        too_long = httpx.post(path, json=body, headers={"Idempotency-Key": "k" * 201}, timeout=30)
        assert too_long.status_code == 422 and "Idempotency-Key" in too_long.text


def test_no_answer_names_the_cause_the_url_and_the_attempts(proxy):
    with SessionClient(proxy.url, max_retries=2) as client, client.open("python", {"ground_truth": "1"}) as session:
        proxy.drop("/tool", times=3)
        with pytest.raises(RewardServerUnavailable) as info:
            session.call("python", code=COUNT)
        message = str(info.value)
        assert "after 3 attempts" in message and "ReadError" in message, message
        assert f"POST {proxy.url}/v1/sessions/{session.id}/tool" in message, message
        assert "ReadError ()" not in message and not message.rstrip().endswith(":"), message
        assert session.call("python", code=COUNT).output.strip() == "2"  # the three attempts ran it once


def test_a_transport_error_without_a_message_still_says_what_happened():
    from olmorl.clients._policy import transport_failure

    reason = transport_failure(httpx.ReadError(""), "POST", "http://h:1/v1/sessions/s/tool")
    assert reason == "ReadError (the connection closed without a reply) on POST http://h:1/v1/sessions/s/tool"
