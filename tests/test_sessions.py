"""The session API over real HTTP: a real server subprocess, real sandboxed interpreters (bwrap)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from olmorl.clients import AsyncSessionClient, RewardServerError, SessionClient, SessionNotFound
from olmorl.rewards._settings import SandboxSettings, SessionSettings
from olmorl.sandbox._memory import descendants

IFEVAL_TASK = {"turns": [
    {"prompt": "Describe a cat.", "instruction_id_list": ["change_case:english_lowercase"], "kwargs": [None]},
    {"prompt": "Now a dog.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [None]},
]}


def running(pid: int) -> bool:
    """Whether a process runs (a zombie has ended: only its parent's wait is left)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_for(predicate, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from olmorl.rewards.service._local import LocalRewardServer

    tmp = tmp_path_factory.mktemp("sessions")
    sessions = SessionSettings(max_sessions=600, max_sandboxed=8, call_timeout_s=8.0, max_output_chars=200,
                               cpu_s=1, memory_mb=256, state_dir=str(tmp / "state"),
                               warm_interpreters=0)  # these tests count processes; pools: test_session_pools.py
    examples = str(Path(__file__).resolve().parent.parent / "examples")  # the docs' example environment (docs/sessions.md)
    srv = LocalRewardServer(workers=1, log_path=str(tmp / "server.log"), sessions=sessions, plugins=["counter_env"],
                            sandbox=SandboxSettings(parallelism=1),
                            extra_env={"PYTHONPATH": f"{examples}{os.pathsep}{os.environ['PYTHONPATH']}"}).start()
    yield srv
    srv.stop()


def test_python_state_persists_and_the_answer_is_verified(server):
    with SessionClient(server.url) as client, client.open("python", {"ground_truth": "42"}) as session:
        assert session.tools[0]["function"]["name"] == "python"
        assert session.tools[0]["function"]["parameters"]["required"] == ["code"]
        assert session.call("python", code="x = 6 * 7").output == ""
        assert session.call("python", code="print(x)").output == "42\n"
        assert session.call("python", {"code": "def f(y):\n    return x + y\nf(1)"}).output == "43\n"
        failed = session.call("python", code="1 / 0")
        assert failed.status == "ok" and "ZeroDivisionError: division by zero" in failed.output
        raw = session.call("python", code="import os, sys\nos.write(1, b'fd\\n')\nprint('e', file=sys.stderr)")
        assert "fd" in raw.output and "e" in raw.output
        long = session.call("python", code="print('a' * 1000)\nraise KeyError('k')")
        assert "characters truncated" in long.output and len(long.output) <= 200  # max_output_chars
        assert long.output.startswith("aaa") and long.output.endswith("KeyError: 'k'\n")
        result = session.verify("So the answer is \\boxed{42}.")
        assert (result.status, result.reward) == ("ok", 1.0)
        assert result.details["reward_components"] == {"answer": 1.0}
        assert result.details["tool_calls"] == 6
        with pytest.raises(SessionNotFound, match="closed \\(verified\\)"):
            session.call("python", code="x")


def test_wrong_answer_and_other_verifier(server):
    with SessionClient(server.url) as client:
        session = client.open("python", {"verifier": "string_match", "ground_truth": "paris"})
        assert session.verify("London").reward == 0.0


def test_an_unscored_answer_is_null_over_http_and_zero_with_its_status_in_the_clients(server):
    """The raw API's reward is null unless the status is ok; the session clients keep mapping it to 0.0 (with
    the status and error that say why), as verl-tool, the TRL environments and the trainer expect."""
    task = {"ground_truth": "five"}  # a reference in words: the math check cannot score it (`invalid`)
    with SessionClient(server.url) as client:
        result = client.open("python", task).verify("\\boxed{5}")
        assert (result.status, result.reward) == ("invalid", 0.0) and "five" in result.error
    created = httpx.post(f"{server.url}/v1/sessions", json={"env": "python", "task": task}).json()
    raw = httpx.post(f"{server.url}/v1/sessions/{created['session_id']}/verify", json={"response": "\\boxed{5}"})
    assert raw.json()["status"] == "invalid" and raw.json()["reward"] is None


def test_bad_input_gets_a_clear_error(server):
    url = server.url
    with SessionClient(url, max_retries=0) as client:
        with pytest.raises(RewardServerError, match="unknown environment 'nope'.*python"):
            client.open("nope", {})
        with pytest.raises(RewardServerError, match="unknown verifier 'nah'"):
            client.open("python", {"verifier": "nah", "ground_truth": "1"})
        with pytest.raises(RewardServerError, match="task: ground_truth"):
            client.open("python", {})
        with client.open("python", {"ground_truth": "1"}) as session:
            unknown = session.call("bash", cmd="ls")
            assert unknown.status == "invalid" and "unknown tool 'bash'" in unknown.error
            missing = session.call("python", {"source": "1"})
            assert missing.status == "invalid" and "code" in missing.error
            bad_json = session.call("python", "{not json")
            assert bad_json.status == "invalid" and "not valid JSON" in bad_json.error
            assert session.call("python", code="1 + 1").output == "2\n"  # the session survived all of it
    missing = httpx.post(f"{url}/v1/sessions/missing/tool", json={"name": "python", "arguments": {"code": "1"}})
    assert missing.status_code == 404 and "no session 'missing'" in missing.json()["detail"]
    assert httpx.post(f"{url}/v1/sessions", json={"env": "python", "tsk": {}}).status_code == 422
    assert httpx.delete(f"{url}/v1/sessions/missing").status_code == 404


def test_timeout_memory_and_cpu_limits(server):
    with SessionClient(server.url) as client, client.open("python", {"ground_truth": "1"}) as session:
        session.call("python", code="keep = 1")
        hung = session.call("python", code="import time\ntime.sleep(60)")
        assert hung.status == "timeout" and "8 s" in hung.error
        after = session.call("python", code="print('keep' in globals())")
        assert after.output.startswith("[the interpreter was restarted") and after.output.endswith("False\n")
        huge = session.call("python", code="raise ValueError('v' * 50_000_000)")  # bigger than any reply line
        assert huge.status == "ok" and "characters truncated" in huge.output and len(huge.output) <= 200
        assert huge.output.endswith("vvv\n")  # the exception's tail is what survives the cut
        big = session.call("python", code="b = bytearray(600 * 1024 * 1024)")
        assert big.status == "ok" and "MemoryError" in big.output  # 256 MiB ceiling per session
        assert session.call("python", code="print(1)").output == "1\n"
    with SessionClient(server.url) as client, client.open("python", {"ground_truth": "1"}) as session:
        burned = session.call("python", code="while True: pass")  # killed at cpu_s=1, before the 8 s timeout
        assert burned.status == "error" and "killed by SIG" in burned.error and "1 CPU seconds" in burned.error


@pytest.mark.parametrize("code, how", [("import os\nos._exit(137)", "the code ended it with exit status 137"),
                                       ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "killed by SIGKILL")])
def test_an_interpreter_that_exits_137_is_not_reported_killed(server, code, how):
    """bwrap's exit status reads a kill by signal N as 128 + N: `os._exit(137)` was reported as killed by SIGKILL."""
    with SessionClient(server.url) as client, client.open("python", {"ground_truth": "1"}) as session:
        ended = session.call("python", code=code)
        assert ended.status == "error" and f"the interpreter died ({how})" in (ended.error or ""), ended
        assert session.call("python", code="print(2)").output.endswith("2\n")  # a fresh interpreter


def test_sessions_leave_no_process_behind(server):
    before = descendants(server.process.pid)
    with SessionClient(server.url) as client:
        sessions = [client.open("python", {"ground_truth": "1"}) for _ in range(4)]
        sessions[0].call("python", code="import subprocess\np = subprocess.Popen(['sleep', '60'])")
        assert len(descendants(server.process.pid) - before) >= 4
        for session in sessions:
            session.close()
    assert wait_for(lambda: descendants(server.process.pid) <= before)


def test_a_session_killed_mid_call_leaves_nothing_behind(server):
    before = descendants(server.process.pid)
    with SessionClient(server.url) as client:
        session = client.open("python", {"ground_truth": "1"})
        outcome = {}
        call = threading.Thread(target=lambda: outcome.update(r=session.call(
            "python", code="import subprocess, time\nsubprocess.Popen(['sleep', '60'])\ntime.sleep(2.5)")))
        call.start()
        time.sleep(0.8)
        session.close()
        call.join(10)
    assert outcome["r"].status == "error" and "stopped during the call" in outcome["r"].error
    assert wait_for(lambda: descendants(server.process.pid) <= before)


def test_ifeval_multiturn_needs_no_sandbox(server):
    with SessionClient(server.url) as client:
        session = client.open("ifeval_multiturn", IFEVAL_TASK)
        assert session.observation == "Describe a cat."
        first = session.call("reply", response="a small, soft animal.")
        assert (first.output, first.reward, first.done) == ("Now a dog.", 1.0, False)
        result = session.verify("A loyal friend.")  # uppercase: breaks turn 1's instruction, kept in turn 2
        assert result.reward == pytest.approx(0.75)
        assert result.details["reward_components"] == {"turn_1": 1.0, "turn_2": 0.5}


def test_code_feedback_shows_visible_tests_and_scores_hidden_ones(server):
    task = {"visible_tests": ["assert f(1) == 2"], "hidden_tests": ["assert f(5) == 6", "assert f(-1) == 0"],
            "max_attempts": 2, "attempt_penalty": 0.25}
    with SessionClient(server.url) as client:
        session = client.open("code_feedback", task)
        wrong = session.call("submit", code="def f(x):\n    return x")
        assert "0/1 visible tests passed" in wrong.output and "assert f(1) == 2" in wrong.output
        assert "f(5)" not in wrong.output  # hidden tests are never shown
        right = session.call("submit", code="def f(x):\n    return x + 1")
        assert right.done and right.reward == 1.0
        assert session.call("submit", code="def f(x): return 0").status == "invalid"  # no attempts left
        result = session.verify("I am done.")
        assert result.reward == pytest.approx(0.75)  # hidden pass rate 1.0 minus one extra attempt
        assert result.details["reward_components"] == {"hidden_tests": 1.0, "attempt_penalty": -0.25}
        final = client.open("code_feedback", task)
        partial = final.verify("```python\ndef f(x):\n    return x + 1 if x > 0 else 5\n```")
        assert partial.reward == pytest.approx(0.5) and partial.details["final_from"] == "response"


def test_500_concurrent_sessions_open_and_close(server):
    before = descendants(server.process.pid)

    def gauge() -> str:
        line = [x for x in httpx.get(f"{server.url}/metrics").text.splitlines()
                if x.startswith('olmorl_sessions_open{env="ifeval_multiturn"}')]
        return line[0].split()[-1] if line else "absent"

    async def run() -> list[float | None]:
        async with AsyncSessionClient(server.url, max_connections=500) as client:
            sessions = await asyncio.gather(*(client.open("ifeval_multiturn", IFEVAL_TASK) for _ in range(500)))
            assert len({s.id for s in sessions}) == 500 and gauge() == "500.0"  # all open at once
            replies = await asyncio.gather(*(s.call("reply", response="a small grey cat sleeps all day in the sun.")
                                             for s in sessions[:50]))
            await asyncio.gather(*(s.close() for s in sessions))
            return [r.reward for r in replies]

    assert asyncio.run(run()) == [1.0] * 50
    assert gauge() == "0.0"
    assert 'olmorl_tool_calls_total{env="ifeval_multiturn",status="ok",tool="reply"}' in \
        httpx.get(f"{server.url}/metrics").text
    assert descendants(server.process.pid) <= before


def test_concurrent_sessions_are_spread_over_small_connection_pools(server):
    """httpx's pool looks at every connection it holds on each request (about 3 ms of client CPU a request with
    64 in flight in one pool): 64 sessions calling at once use pools of at most 8 connections (one pool of 64
    before)."""
    def largest_pool(client: AsyncSessionClient) -> int:
        return max(len(http._transport._pool.connections) for http in client._pools)

    async def run() -> tuple[list[float | None], int]:
        async with AsyncSessionClient(server.url, max_connections=512) as client:
            sessions = await asyncio.gather(*(client.open("ifeval_multiturn", IFEVAL_TASK) for _ in range(64)))
            replies = await asyncio.gather(*(s.call("reply", response="a small grey cat sleeps all day in the sun.")
                                             for s in sessions))
            largest = largest_pool(client)
            await asyncio.gather(*(s.close() for s in sessions))
            return [r.reward for r in replies], largest

    rewards, largest = asyncio.run(run())
    assert rewards == [1.0] * 64
    assert 1 <= largest <= 8


def test_limits_ttl_and_token(reward_server, tmp_path):
    url = reward_server(workers=1, api_key="s3cret",
                        sessions=SessionSettings(max_sessions=2, idle_ttl_s=0.6, retry_after_s=1,
                                                 state_dir=str(tmp_path)))
    assert httpx.post(f"{url}/v1/sessions", json={"env": "ifeval_multiturn", "task": IFEVAL_TASK}).status_code == 401
    with SessionClient(url, api_key="s3cret", max_retries=0) as client:
        first, second = (client.open("ifeval_multiturn", IFEVAL_TASK) for _ in range(2))
        full = httpx.post(f"{url}/v1/sessions", json={"env": "ifeval_multiturn", "task": IFEVAL_TASK},
                          headers={"Authorization": "Bearer s3cret"})
        assert full.status_code == 503 and full.headers["retry-after"] == "1"
        assert "max_sessions" in full.json()["detail"]
        with SessionClient(url, api_key="s3cret", max_retries=4) as patient:
            started = time.monotonic()
            patient.open("ifeval_multiturn", IFEVAL_TASK).close()  # waits (Retry-After) until the TTL frees room
            assert time.monotonic() - started >= 0.5
        with pytest.raises(SessionNotFound, match="expired \\(idle over 0.6 s"):
            first.call("reply", response="x")
        third = client.open("ifeval_multiturn", IFEVAL_TASK)  # the expired ones freed their places
        third.close()
    metrics = httpx.get(f"{url}/metrics").text
    assert 'olmorl_sessions_expired_total{env="ifeval_multiturn"} 2.0' in metrics
    assert 'olmorl_sessions_created_total{env="ifeval_multiturn"} 4.0' in metrics
    del second


def test_leftovers_of_a_crashed_server_are_removed_at_next_start(tmp_path):
    """The `process` backend has no die-with-parent: a SIGKILLed server leaves its interpreters running."""
    from olmorl.rewards.service._local import LocalRewardServer

    settings = dict(workers=1, sessions=SessionSettings(state_dir=str(tmp_path / "state")),
                    sandbox=SandboxSettings(backend="process", allow_insecure=True, parallelism=1))
    crashed = LocalRewardServer(log_path=str(tmp_path / "a.log"), **settings).start()
    with SessionClient(crashed.url) as client:
        session = client.open("python", {"ground_truth": "1"})
        pid = int(session.call("python", code="import os\nprint(os.getpid())").output)
        scratch = session.call("python", code="print(os.getcwd())").output.strip()
    os.killpg(crashed.process.pid, signal.SIGKILL)
    crashed.process.wait()
    assert os.path.exists(f"/proc/{pid}") and os.path.isdir(scratch)
    with LocalRewardServer(log_path=str(tmp_path / "b.log"), **settings) as restarted:
        assert wait_for(lambda: not os.path.exists(f"/proc/{pid}"))
        assert not os.path.exists(scratch)
        # the crashed server's records are gone (the restarted server's own warm interpreters have theirs)
        assert not [p for p in (tmp_path / "state").iterdir() if p.name.startswith(f"{crashed.process.pid}-")]
        with SessionClient(restarted.url) as client:  # left open: a clean stop closes it
            session = client.open("python", {"ground_truth": "1"})
            pid = int(session.call("python", code="import os\nprint(os.getpid())").output)
    # killed with its waiter, the interpreter is init's to reap: until init does, it is a zombie, not running
    assert wait_for(lambda: not running(pid)) and list((tmp_path / "state").iterdir()) == []


def test_the_readme_example_environment_is_a_plugin(server):
    envs = {info.name: info for info in SessionClient(server.url).envs()}
    assert envs["counter"].tools[0]["function"]["parameters"]["required"] == ["amount"]
    with SessionClient(server.url) as client:
        session = client.open("counter", {"start": 3, "target": 15})
        assert session.observation == "The counter is at 3. Reach 15."
        assert session.call("add", amount=20).status == "invalid"
        assert [session.call("add", amount=a).output for a in (10, 2)] == ["counter = 13", "counter = 15"]
        result = session.verify("15")
        assert result.reward == 1.0 and result.details["reward_components"] == {"reached": 1.0, "answered": 1.0}
        with pytest.raises(RewardServerError, match="task: target"):
            client.open("counter", {"start": 1})


def test_python_sessions_are_isolated(server):
    """No network, none of the host's files, nothing of another session (its own /tmp and processes)."""
    probe = ("import os, socket\n"
             "try:\n    socket.create_connection(('127.0.0.1', %d), timeout=2); print('net: open')\n"
             "except OSError as exc:\n    print('net: refused', type(exc).__name__)\n"
             "print(sorted(set(os.listdir('/')) & {'work', 'root', 'home'}))\n"
             "print(len([p for p in os.listdir('/proc') if p.isdigit()]) < 5)\n") % int(server.url.rsplit(":", 1)[1])
    with SessionClient(server.url) as client:
        first, second = (client.open("python", {"ground_truth": "1"}) for _ in range(2))
        seen = first.call("python", code=probe).output.splitlines()
        assert seen[0].startswith("net: refused")
        assert seen[1] == "[]"  # none of the host's directories (short: tool output is truncated)
        assert seen[2] == "True"  # only its own processes are visible
        first.call("python", code="open('/tmp/secret', 'w').write('s1')")
        assert second.call("python", code="import os\nprint(os.path.exists('/tmp/secret'))").output == "False\n"
        first.close()
        second.close()


def test_a_verified_sessions_interpreter_is_stopped_shortly_after_the_reply(server):
    before = descendants(server.process.pid)
    with SessionClient(server.url) as client:
        session = client.open("python", {"ground_truth": "1"})
        session.call("python", code="import subprocess\np = subprocess.Popen(['sleep', '60'])")
        assert len(descendants(server.process.pid) - before) >= 1
        assert session.verify("1").reward == 1.0
    assert wait_for(lambda: descendants(server.process.pid) <= before, 5)


def test_verify_replies_before_the_teardown_and_the_servers_stop_waits_for_it(tmp_path):
    """The environment's close takes 3 s: the verify reply does not wait for it (it did: over 3 s), the
    teardown still runs (its marker appears), and stopping the server right after a verify waits for it."""
    from olmorl.rewards.service._local import LocalRewardServer

    tests = str(Path(__file__).resolve().parent)
    srv = LocalRewardServer(workers=1, log_path=str(tmp_path / "server.log"), plugins=["slow_close_env"],
                            sessions=SessionSettings(warm_interpreters=0, state_dir=str(tmp_path / "state")),
                            extra_env={"PYTHONPATH": f"{tests}{os.pathsep}{os.environ['PYTHONPATH']}"}).start()
    try:
        with SessionClient(srv.url) as client:
            first = client.open("slow_close", {"marker": str(tmp_path / "first")})
            started = time.perf_counter()
            assert first.verify("anything").reward == 1.0
            assert time.perf_counter() - started < 1.5
            assert not (tmp_path / "first").exists()
            assert wait_for(lambda: (tmp_path / "first").exists(), 10)
            second = client.open("slow_close", {"marker": str(tmp_path / "second")})
            assert second.verify("anything").reward == 1.0
    finally:
        srv.stop()
    assert (tmp_path / "second").read_text() == "closed"
