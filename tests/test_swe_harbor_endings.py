"""How a Harbor `tests/test.sh` ended is what was observed, never read from its status number (real server, real
Docker engine): `docker exec` reports a kill by signal N as 128 + N, the same number as the script's own
`exit 128+N`. So a test.sh that writes a reward and `exit 137`s is an exit with code 137 (`ended: exit`), not a
kill, a timeout or out of memory; a run our limit stopped is `timeout`, one that failed while the container's
memory cgroup counted an OOM kill is `oom`; none of them earns the reward it wrote."""

from __future__ import annotations

import shutil

import pytest

from swe_support import TASKS, docker_or_skip, swe_server
from swe_support import client  # noqa: F401 (a fixture)

pytestmark = docker_or_skip()

REWARD = "echo 1 > /logs/verifier/reward.txt\n"
ENDINGS = {  # task -> (test.sh after the reward write, task.toml's [verifier] timeout_sec)
    "exits-137": ("exit 137\n", 60),
    "killed-by-its-code": ("kill -KILL $$\n", 60),  # a kill nobody of ours observed: the exit status is all there is
    "past-the-limit": ("sleep 30\n", 2),
    "out-of-memory": ("exec python3 -c \"b = b'x' * (1 << 30)\"\n", 60),  # test.sh's own process, past 512 MB
}


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("harbor-endings")
    for name, (ending, timeout_s) in ENDINGS.items():
        task = shutil.copytree(TASKS / "harbor-hello", tmp / "tasks" / name)
        (task / "tests" / "test.sh").write_text("#!/bin/bash\n" + REWARD + ending)
        toml = (task / "task.toml").read_text().replace("timeout_sec = 60.0", f"timeout_sec = {timeout_s}.0", 1)
        (task / "task.toml").write_text(toml)
    server = swe_server(tmp, tmp / "tasks", bash_timeout_s=3)
    yield server.url
    server.stop()


@pytest.mark.parametrize("task, exit_code, ended, reason", [
    ("exits-137", 137, "exit", "tests/test.sh exited 137: a reward counts only when it exits 0"),
    ("killed-by-its-code", 137, "exit", "tests/test.sh exited 137: a reward counts only when it exits 0"),
    ("past-the-limit", None, "timeout", "the hidden tests ran past 2 s"),
    ("out-of-memory", 137, "oom", "tests/test.sh ended with status 137: out of memory (the container's memory limit)"),
])
def test_how_test_sh_ended_is_what_was_observed(client, task, exit_code, ended, reason):
    """Before, an `exit 137` read "killed by signal 9, or its own exit 137", a guess from the number."""
    result = client.open("swe", {"path": task}).verify("done")
    details = result.details
    assert result.status == "ok" and result.reward == 0.0 and details["reward_written"] == 1.0, details
    assert (details["ended"], details["reason"]) == (ended, reason), details
    if exit_code is not None:
        assert details["exit_code"] == exit_code, details
