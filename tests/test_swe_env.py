"""The `swe` environment against a real server and the real Docker engine: scripted, model-free agents
working through the tools on the small task repositories of tests/swe_tasks (olmorl layout, a task with a
Dockerfile step, a Harbor-layout task)."""

from __future__ import annotations

import pytest

from swe_support import TASKS, containers_back_to, docker_or_skip, swe_server, task_containers
from swe_support import client  # noqa: F401 (a fixture)

pytestmark = docker_or_skip()


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    server = swe_server(tmp_path_factory.mktemp("swe"), TASKS, bash_timeout_s=3)
    yield server.url
    server.stop()


def test_a_scripted_agent_fixes_the_bug_through_the_tools(client):
    session = client.open("swe", {"path": "calc-bug"})
    assert "calc.add(a, b)" in session.observation
    assert [t["function"]["name"] for t in session.tools] == \
        ["bash", "read_file", "write_file", "str_replace", "run_tests", "submit"]
    assert "test_hidden" not in session.call("bash", command="ls -R").output  # hidden tests are not there
    visible = session.call("run_tests")
    assert visible.status == "ok" and "FAILED (failures=1)" in visible.output and "[exit code 1]" in visible.output
    assert session.call("read_file", path="calc/ops.py", start_line=1, end_line=2).output == \
        "def add(a, b):\n    return a - b\n"
    assert session.call("str_replace", path="calc/ops.py", old_str="a", new_str="x").status == "invalid"  # 4 times
    edit = session.call("str_replace", path="calc/ops.py", old_str="return a - b", new_str="return a + b")
    assert edit.status == "ok", edit.error
    assert "OK" in session.call("run_tests").output
    assert session.call("submit").done
    assert session.call("bash", command="true").status == "invalid"  # nothing after submit
    result = session.verify("done")
    assert result.status == "ok" and result.reward == 1.0, result.details
    assert result.details["tests"] == {"tests.test_hidden.AddTest.test_add_negative": "passed",
                                       "tests.test_hidden.AddTest.test_add": "passed",
                                       "tests.test_hidden.MulTest.test_mul": "passed"}
    assert result.details["fail_to_pass"] == {"passed": 2, "total": 2}
    assert result.details["dropped_paths"] == {} and "tamper" not in result.details


def test_an_agent_that_deletes_or_edits_the_tests_scores_zero(client):
    deleter = client.open("swe", {"path": "calc-bug"})
    assert deleter.call("bash", command="rm -rf tests && ls").output == "calc\n"
    result = deleter.verify("done")
    assert result.status == "ok" and result.reward == 0.0
    assert result.details["fail_to_pass"] == {"passed": 0, "total": 2}
    assert result.details["pass_to_pass"] == {"passed": 1, "total": 1}  # the restored tests ran
    assert result.details["dropped_paths"] == {"tests": "test_file"} and result.details["tamper"] == {"test_file": 1}

    forger = client.open("swe", {"path": "calc-bug"}, {"reward": "fraction"})
    fake = "import unittest\nclass AddTest(unittest.TestCase):\n    def test_add(self): pass\n"
    forger.call("write_file", path="tests/test_hidden.py", content=fake + "    def test_add_negative(self): pass\n")
    # a stand-in for the stdlib's unittest, and a background job that would undo the restored tests
    forger.call("write_file", path="unittest.py", content="raise SystemExit('not the real unittest')\n")
    forger.call("bash", command=f"(while sleep 0.05; do printf %s '{fake}' > tests/test_hidden.py; done) "
                                ">/dev/null 2>&1 &")
    result = forger.verify("done")
    assert result.reward == 0.0 and result.details["fail_to_pass"] == {"passed": 0, "total": 2}, result.details
    assert result.details["dropped_paths"] == {"tests/test_hidden.py": "test_file"}, result.details


def test_fraction_reward_and_a_partial_fix(client):
    session = client.open("swe", {"path": "calc-bug"}, {"reward": "fraction"})
    # right for 40 + 2 only: one FAIL_TO_PASS of two
    session.call("write_file", path="calc/ops.py", content="def add(a, b):\n    return 42\n\n\ndef mul(a, b):\n"
                                                           "    return a * b\n")
    result = session.verify("done")
    assert result.reward == 0.5 and result.details["reward_components"] == {"fail_to_pass": 0.5, "pass_to_pass": 1.0}


def test_bash_keeps_cwd_bounds_output_and_stops_at_its_timeout(client):
    session = client.open("swe", {"path": "calc-bug"})
    assert session.call("bash", command="cd calc && pwd").output == "/workspace/calc\n"
    assert session.call("bash", command="pwd; echo oops >&2; exit 3").output == "/workspace/calc\noops\n[exit code 3]\n"
    flood = session.call("bash", command="yes 0123456789 | head -c 300000; echo END")
    assert len(flood.output) <= 8192 + 100 and "bytes truncated]" in flood.output and flood.output.endswith("END\n")
    slow = session.call("bash", command="echo started; sleep 30 & sleep 30; echo never", timeout_s=2)
    assert slow.status == "timeout" and slow.output == "started\n" and 1.9 < slow.elapsed_ms / 1000 < 15
    assert session.call("bash", command="sleep 5", timeout_s=60).status == "timeout"  # capped at bash_timeout_s (3)
    # an exit status is not a timeout, and a command that outlives TERM's grace is (both were misread before)
    own = session.call("bash", command="exit 124")
    assert (own.status, own.output) == ("ok", "[exit code 124]\n"), own
    stubborn = session.call("bash", command="trap '' TERM; echo started; sleep 30", timeout_s=1)
    assert (stubborn.status, stubborn.output) == ("timeout", "started\n"), stubborn
    # a status of 137 is a kill by the memory limit only when the container's cgroup counted one
    assert session.call("bash", command="exit 137").output == "[exit code 137]\n"
    oom = session.call("bash", command="python3 -c \"b = b'x' * (1 << 30)\"")
    assert oom.output.endswith("[exit code 137 (out of memory: the container's memory limit killed a process)]\n"), oom
    assert session.call("bash", command="pwd").output == "/workspace/calc\n"
    offline = session.call("bash", command="python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 2)\"")
    assert "Network is unreachable" in offline.output
    assert "Read-only file system" in session.call("bash", command="touch /usr/x").output
    big = session.call("bash", command="head -c 100M /dev/zero > /workspace/big")  # disk_mb = 64
    assert "No space left on device" in big.output
    # pids 256 (the default), memory 512 MB + the 64 MB disk + the 64 MB /tmp (tmpfs pages count), 1 CPU
    cgroup = ("cd /sys/fs/cgroup; if [ -f pids.max ]; then cat pids.max memory.max cpu.max; "  # v2, else v1
              "else cat pids/pids.max memory/memory.limit_in_bytes cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us; fi")
    assert session.call("bash", command=cgroup).output.split() == ["256", str(640 << 20), "100000", "100000"]
    session.close()


def test_a_task_with_a_dockerfile_step_and_a_test_command(client):
    session = client.open("swe", {"path": "greeting-dockerfile"})
    assert session.call("bash", command="cat /opt/app/greeting.txt; pwd").output == \
        "  Hello from the image\n/srv/app\n"
    assert session.verify("done").reward == 0.0
    session = client.open("swe", {"path": "greeting-dockerfile"})
    session.call("write_file", path="app/greeting.py",
                 content="def greeting():\n    return open('/opt/app/greeting.txt').read().strip()\n")
    result = session.verify("done")
    assert result.reward == 1.0 and result.details["exit_code"] == 0, result.details


def test_tests_killed_by_the_memory_limit_say_so_and_an_exit_137_does_not(client):
    """A status of 137 is read as out of memory only when the container's cgroup counted an OOM kill (before,
    neither said anything but the status)."""
    reasons = []
    for body in ("b = b'x' * (1 << 30)", "import os\nos._exit(137)"):
        session = client.open("swe", {"path": "greeting-dockerfile"})
        session.call("bash", command=f"printf '%s\\n' \"{body}\" >> app/__init__.py")
        result = session.verify("done")
        assert (result.reward, result.details["exit_code"]) == (0.0, 137), result.details
        reasons.append(result.details.get("reason"))
    assert reasons == ["the tests ended with status 137: out of memory (the container's memory limit)", None]


def test_a_harbor_task_directory_as_it_is(client):
    session = client.open("swe", {"path": "harbor-hello"})
    assert session.observation == "Create a file named hello.txt in /app whose only line is: Hello, world!"
    assert session.call("bash", command="ls; ls /tests 2>&1").output == \
        "README.txt\n"  # the verifier's files are not there yet
    session.call("bash", command="mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt")  # a forged reward
    result = session.verify("done")
    assert result.reward == 0.0 and result.details["exit_code"] == 0, result.details
    session = client.open("swe", {"path": "harbor-hello"})
    session.call("bash", command="bash -c 'echo \"Hello, world!\" > /app/hello.txt'")
    result = session.verify("done")
    assert result.status == "ok" and result.reward == 1.0, result.details


def test_bad_task_paths_are_refused_with_a_reason(client):
    from olmorl.clients import RewardServerError

    for path, why in [("../swe_tasks/calc-bug/..", "not a directory under"), ("nope", "no task directory"),
                      ("calc-bug/repo", "neither swe.toml")]:
        with pytest.raises(RewardServerError, match=why):
            client.open("swe", {"path": path})


def test_containers_are_removed_on_close_and_verify(client):
    before = task_containers()  # an earlier test's may still be going (removed after its reply)
    session = client.open("swe", {"path": "calc-bug"})
    mine = set(task_containers()) - set(before)
    assert len(mine) == 1
    session.close()
    assert not mine & set(task_containers())
    session = client.open("swe", {"path": "calc-bug"})
    session.verify("done")
    assert containers_back_to(before) == before  # the agent's and the verdict's, removed after the verify reply
