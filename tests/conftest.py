from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from olmorl.rewards._local import LocalRewardServer

TESTS = Path(__file__).parent
# Subprocess servers import test plugins (tests/plugins/...) from here.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH")]))
sys.path.insert(0, str(TESTS))


@pytest.fixture
def reward_server(tmp_path):
    """Factory: `url = reward_server(workers=1, judge=JudgeSettings(...))` starts a real server
    (`python -m olmorl.rewards serve`) on 127.0.0.1 at a random port; all are stopped at teardown."""
    started: list[LocalRewardServer] = []

    def start(**settings) -> str:
        log = tmp_path / f"reward-server-{len(started)}.log"
        server = LocalRewardServer(log_path=str(log), **settings).start()
        started.append(server)
        return server.url

    start.servers = started  # type: ignore[attr-defined]  # for tests that kill or restart one
    yield start
    for server in started:
        server.stop()
