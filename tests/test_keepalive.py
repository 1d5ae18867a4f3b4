"""Idle connections outlive a training step: the reward and session clients reuse the connection they opened
before a pause longer than uvicorn's and httpx's 5 s defaults, and the client always drops an idle connection
before the server does (never sending on one the server is closing)."""

from __future__ import annotations

import time
from pathlib import Path

from olmorl.clients import RewardClient, SessionClient
from olmorl.clients._policy import KEEPALIVE_EXPIRY_S
from olmorl.rewards._settings import Settings

PAUSE_S = 6.5  # longer than both 5 s defaults


def _client_ports(server_port: int) -> set[int]:
    """The client-side ports of the established TCP connections to `server_port` on loopback."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, state = fields[1], fields[2], fields[3]
            if state == "01" and int(local.rsplit(":", 1)[1], 16) == server_port:  # ESTABLISHED, server side
                ports.add(int(remote.rsplit(":", 1)[1], 16))
    return ports


def test_the_client_expires_idle_connections_before_the_server_does() -> None:
    assert KEEPALIVE_EXPIRY_S < Settings().keep_alive_s


def test_clients_reuse_their_connection_after_a_pause_longer_than_5_s(reward_server) -> None:
    url = reward_server(workers=1)
    port = int(url.rsplit(":", 1)[1])
    item = {"id": "a", "verifier": "math", "response": "\\boxed{2}", "ground_truth": "2"}
    with RewardClient(url) as rewards, SessionClient(url) as sessions:
        assert rewards.verify([item])[0].reward == 1.0
        session = sessions.open("python", {"verifier": "math", "ground_truth": "6"})
        assert session.call("python", code="x = 6").status == "ok"
        before = _client_ports(port)
        assert before, "no connection to the server was seen"
        time.sleep(PAUSE_S)
        assert _client_ports(port) == before, "the server closed an idle connection within the pause"
        assert rewards.verify([item])[0].reward == 1.0
        assert session.call("python", code="print(x)").output.strip() == "6"
        after = _client_ports(port)
        session.close()
    assert after == before, f"new connections after the pause: {sorted(after - before)}"
