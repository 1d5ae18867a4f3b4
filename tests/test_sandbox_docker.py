"""The `docker` sandbox backend end to end: warm containers (one per slot) running the zygote harness.

Through a real server (`OLMORL_SANDBOX_BACKEND=docker`): the four ground-truth formats score right;
a representative set of containment attacks and reward hacks scores 0 and leaves no container and no
process behind; a container that dies or overruns is replaced; stopping the pool or the server
removes every container, and a crashed server's containers go away (by themselves, or at the next
start). Without an engine, an image or a runtime, code items come back `error` naming the problem.

The engine and the base image come from scripts/build-base-image.sh (it starts an engine with
scripts/docker-engine.sh and skips the build when `olmorl-base:bookworm` exists). If no engine can
be had, these tests fail with the script's reason: they never skip.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import SandboxSettings
from olmorl.sandbox import SandboxLimits, SandboxPool
from olmorl.sandbox import TestInput as Input  # (not collected as a test class)
from olmorl.sandbox._docker import DEFAULT_IMAGE, LABEL, OWNER_LABEL
from olmorl.sandbox._engine import owner_id
from test_code_containment import ESCAPES, HOST_CANARY, HealthWatch
from test_code_verifier import HACKS

REPO = Path(__file__).resolve().parent.parent
BUILD_TIMEOUT_S = 900  # cold: debootstrap + import, 1.5-5 min on a loaded 2-core box
SLOTS = 2
CANARY_ENV = "OLMORL_DOCKER_TEST_SECRET"
CANARY_VALUE = "s3cr3t-server-env-4f1c"

pytestmark = [pytest.mark.docker, pytest.mark.timeout(BUILD_TIMEOUT_S + 300)]


# -- engine, image, server ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def api() -> Any:
    """A Docker engine that answers and the default sandbox image on it (built if missing)."""
    try:
        build = subprocess.run([str(REPO / "scripts" / "build-base-image.sh")], cwd=REPO, capture_output=True,
                               text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"scripts/build-base-image.sh did not finish within {BUILD_TIMEOUT_S}s:\n{_tail(exc.stderr)}")
    if build.returncode != 0:
        pytest.fail("the docker sandbox tests need a Docker engine and the olmorl-base:bookworm image; "
                    f"scripts/build-base-image.sh exited {build.returncode}:\n"
                    f"{_tail(build.stderr)}\n{_tail(build.stdout)}")
    import docker

    client = docker.APIClient(version="auto")
    client.inspect_image(DEFAULT_IMAGE)
    yield client
    client.close()


@pytest.fixture(scope="module")
def server(api: Any, tmp_path_factory: pytest.TempPathFactory):
    log = tmp_path_factory.mktemp("srv") / "server.log"
    srv = LocalRewardServer(log_path=str(log), workers=1, extra_env={CANARY_ENV: CANARY_VALUE},
                            sandbox=SandboxSettings(backend="docker", parallelism=SLOTS, test_timeout_s=1.0)).start()
    yield srv
    srv.stop()
    assert server_containers(api, srv) == [], "stopping the server left sandbox containers behind"


def server_containers(api: Any, srv: LocalRewardServer) -> list[dict[str, Any]]:
    assert srv.process is not None
    return api.containers(all=True, filters={"label": f"{OWNER_LABEL}={owner_id(srv.process.pid)}"})


def verify(srv: LocalRewardServer, items: list[dict]) -> list[dict]:
    with HealthWatch(srv.url) as watch:
        response = httpx.post(srv.url + "/v1/verify", json={"items": items}, timeout=300)
    assert response.status_code == 200, response.text
    assert not watch.failures and watch.count > 0, watch.failures
    return response.json()["results"]


def score(srv: LocalRewardServer, response: str, ground_truth: Any, verifier: str = "code", **options) -> dict:
    [result] = verify(srv, [{"verifier": verifier, "response": response, "ground_truth": ground_truth,
                             "options": options}])
    return result


def _idle(procs: list[tuple[int, int]] | None) -> bool:
    """An idle slot: the zygote (PID 1), its test process and the next job's program process forked ahead, all
    of the harness's uid (the container's root) until a job's `go`: no process of a program's uid is left."""
    return procs is None or (procs[:1] == [(1, 0)] and len(procs) <= 3 and all(uid == 0 for _, uid in procs))


def assert_nothing_left_behind(api: Any, srv: LocalRewardServer) -> None:
    """At most one container per slot, each holding only its idle harness processes (`_idle`)."""
    deadline = time.monotonic() + 10
    while True:
        containers = server_containers(api, srv)
        procs = {c["Id"][:12]: _processes(api, c["Id"]) for c in containers}
        ok = len(containers) <= SLOTS and all(_idle(p) for p in procs.values())
        if ok or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert len(containers) <= SLOTS, f"more containers than slots: {[c['Names'] for c in containers]}"
    assert all(_idle(p) for p in procs.values()), f"processes outlived their run: {procs}"


# pid:real uid (from status: a non-dumpable process's /proc entry is owned by root whatever its uid)
_LIST_PIDS = """
import os
for p in os.listdir('/proc'):
    if p.isdigit() and int(p) != os.getpid():
        try:
            status = open(f'/proc/{p}/status').read()
        except OSError:
            continue  # gone meanwhile
        print(f"{p}:{status.split('Uid:')[1].split()[0]}")
"""


def _processes(api: Any, container: str) -> list[tuple[int, int]] | None:
    """The pids and uids in the container's namespace, zombies included (seen from a `docker exec`), or None
    if it is gone meanwhile (`docker top` lists neither zombies nor processes of other cgroups)."""
    import docker

    try:
        exec_id = api.exec_create(container, ["/usr/bin/python3", "-I", "-c", _LIST_PIDS])["Id"]
        out = api.exec_start(exec_id).decode()
    except docker.errors.APIError:
        return None
    return sorted((int(pid), int(uid)) for pid, uid in (p.split(":") for p in out.split()))


# -- formats -------------------------------------------------------------------------------------------
ADD = "```python\ndef add(a, b):\n    return a + b\n```"


def test_four_formats_score_correctly(server: LocalRewardServer) -> None:
    asserts = ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(2, 2) == 5",
               "assert add('a', 'b') == 'ab'"]
    result = score(server, ADD, asserts)
    assert (result["status"], result["reward"], result["details"]["backend"]) == ("ok", 0.75, "docker"), result
    assert [t["status"] for t in result["details"]["tests"]] == ["passed", "passed", "failed", "passed"]
    assert score(server, ADD, asserts, scoring="all")["reward"] == 0.0

    prog = "```python\nimport sys\nnums = list(map(int, sys.stdin.read().split()))\nprint(sum(nums))\n```"
    pairs = [{"input": "1 2 3\n", "output": "6\n"}, {"input": "5\n", "output": "5"}, {"input": "1\n", "output": "2"}]
    assert score(server, prog, pairs, verifier="code_stdio")["reward"] == pytest.approx(2 / 3)

    fn = "```python\ndef pair(x):\n    return (x, x + 1)\n```"
    assert score(server, fn, {"fn_name": "pair", "inputs": [[1], [5]], "outputs": [[1, 2], [[5, 6]]]})["reward"] == 1.0
    assert score(server, fn, {"fn_name": "pair", "inputs": [[1], [5]], "outputs": [[1, 2], [5, 7]]})["reward"] == 0.5

    check = {"test": "def check(candidate):\n    assert candidate([1, 2]) == 3\n    assert candidate([]) == 0\n",
             "entry_point": "total"}
    assert score(server, "```python\ndef total(xs):\n    return sum(xs)\n```", check)["reward"] == 1.0
    assert score(server, "```python\ndef total(xs):\n    return sum(xs) + 1\n```", check)["reward"] == 0.0

    ready = httpx.get(server.url + "/readyz", timeout=5).json()
    sandbox = ready["verifiers"]["code"]
    assert (sandbox["backend"], sandbox["image"], sandbox["alive"]) == ("docker", DEFAULT_IMAGE, SLOTS), ready


def test_legitimate_programs_pass_in_the_container(server: LocalRewardServer) -> None:
    from test_code_verifier import LEGIT_STDIO

    # (a generous time limit: these are right programs, and a loaded CI machine must not time them out)
    items = [{"id": name, "verifier": "code_stdio", "response": f"```python\n{program}```",
              "ground_truth": [{"input": stdin, "output": expected}], "options": {"timeout_s": 10}}
             for name, (program, stdin, expected) in LEGIT_STDIO.items()]
    for result in verify(server, items):
        assert result["reward"] == 1.0, result


# -- containment ----------------------------------------------------------------------------------------
DOCKER_ESCAPES = {
    name: ESCAPES[name]
    for name in ("fork_bomb", "thread_bomb", "memory_bomb", "cpu_spin", "sleep_past_timeout", "stdout_flood",
                 "disk_fill", "write_outside_scratch", "read_shadow", "server_source", "network_outside",
                 "network_loopback_server_port", "dns_lookup", "raw_socket", "kill_everything", "kill_parent",
                 "daemonize_outlive", "ptrace", "mount", "ctypes_unshare_userns", "fd_exhaustion", "zombies")
}
# The image's own variables (PATH, LANG, HOSTNAME) are visible by design; the server's must not be.
DOCKER_ESCAPES["server_env_and_proc_environ"] = f"""
import os
found = [k for k, v in os.environ.items() if k.startswith('OLMORL') or '{CANARY_VALUE[:6]}' in v]
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    try:
        data = open(f'/proc/{{pid}}/environ', 'rb').read()
        if b'OLMORL' in data or b'{CANARY_VALUE[:6]}' in data: found.append(pid)
    except OSError:
        pass
print("PWNED" if found else "blocked: no server variables", found)
"""
DOCKER_ESCAPES["docker_socket"] = """
import glob, os
hits = [p for p in ['/var/run/docker.sock', '/run/docker.sock', '/run/containerd/containerd.sock'] if os.path.exists(p)]
print("PWNED" if hits else "blocked: no engine socket", hits)
"""


# The zygote is the container's PID 1: signals from inside its own namespace cannot kill it, so this
# one harms nothing and the program goes on to print PWNED, its honest output (`kill(-1)`, which skips
# PID 1, ends the slot's test process: reward 0, the container is replaced).
HARMLESS: set[str] = set()  # (kill_parent prints "blocked" now: the harness is another uid's)


@pytest.mark.parametrize("name", sorted(DOCKER_ESCAPES))
def test_escape_attempt_is_contained(api: Any, server: LocalRewardServer, name: str) -> None:
    program = DOCKER_ESCAPES[name].replace("PORT", server.url.rsplit(":", 1)[1])
    started = time.monotonic()
    before = {c["Id"] for c in server_containers(api, server)}
    result = score(server, f"```python\n{program}```", [{"input": "", "output": "PWNED"}], verifier="code_stdio")
    assert result["status"] == "ok", result
    test = result["details"]["tests"][0]
    if name in HARMLESS:
        assert result["reward"] == 1.0 and "sandbox" not in result["details"], result
        assert {c["Id"] for c in server_containers(api, server)} == before, "the zygote was killed"
    else:
        assert result["reward"] == 0.0, result
        assert test["status"] in ("failed", "error", "timeout"), test
    if "blocked" in program and test["status"] == "failed":
        assert "blocked" in test.get("stdout", ""), test  # the attack ran and was stopped
    assert time.monotonic() - started < 30
    assert not HOST_CANARY.exists()
    assert_nothing_left_behind(api, server)
    if name == "daemonize_outlive":
        time.sleep(3.5)  # the daemon would have woken up by now
        assert_nothing_left_behind(api, server)
    # The server and the slots still work after the attack.
    honest = score(server, "def f(x):\n    return x * 2\n", ["assert f(2) == 4"])
    assert honest["reward"] == 1.0, honest


DOCKER_HACKS = ("sys_exit_before_tests", "os_exit_during_test", "always_equal_object", "patched_builtins",
                "fake_pass_markers", "read_tests_from_memory", "forked_daemon_writes_results", "frame_walk_forgery")


@pytest.mark.parametrize("name", DOCKER_HACKS)
def test_reward_hack_earns_nothing(api: Any, server: LocalRewardServer, name: str) -> None:
    tests = ["assert add(1, 2) == 31337", "assert abs(add(1, 1) - 31337) < 1e-9", "assert sorted([add(1, 2)]) == [3]"]
    result = score(server, f"```python\n{HACKS[name]}```", tests)
    assert result["status"] == "ok", result
    assert result["reward"] == 0.0, result["details"]
    assert_nothing_left_behind(api, server)


# -- container lifecycle --------------------------------------------------------------------------------
def test_a_dead_container_is_replaced(api: Any, server: LocalRewardServer) -> None:
    honest = ["assert f(2) == 4"]
    program = "def f(x):\n    return x * 2\n"
    before = {c["Id"] for c in server_containers(api, server)}
    assert before, "no sandbox container is running"
    for container in before:  # between runs: the slots find their containers gone
        api.kill(container)
    results = verify(server, [{"verifier": "code", "response": program, "ground_truth": honest}] * 4)
    assert [r["reward"] for r in results] == [1.0] * 4, results

    # During a run: the item errors (no reward), the slot is replaced, and nothing is left behind.
    slow = "import time\ndef f(x):\n    time.sleep(3)\n    return x * 2\n"
    killer = threading.Timer(1.0, lambda: [api.kill(c["Id"]) for c in server_containers(api, server)])
    killer.start()
    try:
        [result] = verify(server, [{"verifier": "code", "response": slow, "ground_truth": honest,
                                    "options": {"timeout_s": 5}}])
    finally:
        killer.join()
    assert result["status"] == "ok" and result["reward"] == 0.0, result
    assert "died" in result["details"]["sandbox"], result["details"]
    assert score(server, program, honest)["reward"] == 1.0
    after = {c["Id"] for c in server_containers(api, server)}
    assert not (after & before), "killed containers were not removed"
    assert_nothing_left_behind(api, server)


async def test_an_overrunning_container_is_killed_and_replaced(api: Any) -> None:
    pool = SandboxPool("docker", slots=1, limits=SandboxLimits(test_timeout_s=0.5))
    await pool.start()
    try:
        [first] = _pool_containers(api, pool)
        api.pause(first)  # the zygote stops answering: only the pool's deadline can end the run
        started = time.monotonic()
        runs, failure = await pool.run("x = 1", [Input(code="assert x == 1")])
        assert runs == [] and failure is not None and "overran" in failure, failure
        # the job's budget: twice one code test's wall-clock backstops (load 3 x 3.5 + 1, test 3 x 0.5 + 1) + 0.5 + 5 s
        assert time.monotonic() - started < 33.5 + 10
        assert _pool_containers(api, pool) == []  # killed and removed
        runs, failure = await pool.run("x = 1", [Input(code="assert x == 1")])
        assert failure is None and runs[0].status == "passed", runs
        [second] = _pool_containers(api, pool)
        assert second != first and pool.restarts == 1
    finally:
        await pool.stop()
    assert _pool_containers(api, pool) == []


def _pool_containers(api: Any, pool: SandboxPool) -> list[str]:
    owner = pool.backend.owner  # type: ignore[attr-defined]
    return [c["Id"] for c in api.containers(all=True, filters={"label": f"{OWNER_LABEL}={owner}"})]


async def test_leftovers_of_a_crashed_server_are_removed_at_start(api: Any) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    hostname = os.uname().nodename
    leftover = api.create_container(DEFAULT_IMAGE, command=["sleep", "600"], network_disabled=True,
                                    labels={LABEL: "1", OWNER_LABEL: f"{hostname}/{dead.pid}/1"})["Id"]
    foreign = api.create_container(DEFAULT_IMAGE, command=["sleep", "600"], network_disabled=True,
                                   labels={LABEL: "1", OWNER_LABEL: "some-other-host/1/1"})["Id"]
    api.start(leftover)
    try:
        pool = SandboxPool("docker", slots=2)
        await pool.start()
        try:
            ids = {c["Id"] for c in api.containers(all=True, filters={"label": LABEL})}
            assert leftover not in ids, "a crashed server's container survived the next start"
            assert foreign in ids, "a container of another host (owner unknown) was removed"
            assert len(_pool_containers(api, pool)) == 2
        finally:
            await pool.stop()
        assert _pool_containers(api, pool) == []
    finally:
        for container in (leftover, foreign):
            if _exists(api, container):
                api.remove_container(container, force=True)


class _EngineAnswering:
    """An engine whose remove answers one fixed APIError, as Docker does while its own auto-removal of the
    container runs (slow on a loaded host: over 20 s was seen in CI)."""

    def __init__(self, message: str) -> None:
        self.message, self.calls = message, 0

    def remove_container(self, container: str, **_: Any) -> None:
        import docker

        self.calls += 1
        raise docker.errors.APIError(self.message)


def test_a_removal_already_in_progress_is_the_engines_and_does_not_fail(caplog) -> None:
    from olmorl.sandbox._backends import SandboxUnavailable
    from olmorl.sandbox._engine import remove_container

    removing = _EngineAnswering('409 Client Error: Conflict ("removal of container 5d33a8e6 is already in progress")')
    with caplog.at_level("WARNING", logger="olmorl.sandbox"):
        remove_container(removing, "5d33a8e6" * 8, wait_s=0.3)  # raised SandboxUnavailable before
    assert removing.calls > 1, "the removal was not retried while the engine's own ran"
    assert "the engine's removal is still running" in caplog.text
    with pytest.raises(SandboxUnavailable, match="could not remove sandbox container"):  # any other error still fails
        remove_container(_EngineAnswering("500 Server Error: driver failed"), "0" * 64, wait_s=0.3)


def _exists(api: Any, container: str) -> bool:
    import docker

    try:
        api.inspect_container(container)
        return True
    except docker.errors.NotFound:
        return False


def test_a_killed_server_leaves_no_container(api: Any, reward_server) -> None:
    reward_server(workers=1, sandbox=SandboxSettings(backend="docker", parallelism=SLOTS))
    [srv] = reward_server.servers
    assert score(srv, ADD, ["assert add(1, 2) == 3"])["reward"] == 1.0
    assert len(server_containers(api, srv)) == SLOTS
    containers = server_containers(api, srv)
    os.killpg(srv.process.pid, signal.SIGKILL)  # no clean stop: the attach connections just drop
    srv.process.wait()
    deadline = time.monotonic() + 30
    while any(_exists(api, c["Id"]) for c in containers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_exists(api, c["Id"]) for c in containers), "a crashed server's containers kept running"


@pytest.mark.parametrize("case", ["no_engine", "no_image", "no_runtime"])
def test_missing_engine_image_or_runtime_gives_error_items(reward_server, case: str) -> None:
    sandbox = SandboxSettings(backend="docker", parallelism=1)
    extra_env: dict[str, str] = {}
    if case == "no_engine":
        extra_env["DOCKER_HOST"] = "unix:///nonexistent/olmorl-test/docker.sock"
    elif case == "no_image":
        sandbox = SandboxSettings(backend="docker", parallelism=1, docker_image="olmorl-no-such-image:missing")
    else:
        sandbox = SandboxSettings(backend="docker", parallelism=1, docker_runtime="olmorl-no-such-runtime")
    if case != "no_engine":
        _engine_or_fail()
    url = reward_server(workers=1, sandbox=sandbox, extra_env=extra_env)
    items = [{"verifier": "code", "response": ADD, "ground_truth": ["assert add(1, 2) == 3"]},
             {"verifier": "math", "response": "\\boxed{4}", "ground_truth": "4"}]
    code, math = httpx.post(url + "/v1/verify", json={"items": items}, timeout=60).json()["results"]
    assert code["status"] == "error" and code["reward"] is None, code
    expected = {"no_engine": "no Docker engine answers", "no_image": "olmorl-no-such-image:missing",
                "no_runtime": "no runtime 'olmorl-no-such-runtime'"}[case]
    assert expected in code["error"], code
    assert (math["status"], math["reward"]) == ("ok", 1.0)  # the rest of the server is unaffected
    assert httpx.get(url + "/healthz", timeout=5).status_code == 200
    state = httpx.get(url + "/readyz", timeout=5).json()["verifiers"]["code"]
    assert state["started"] is False and expected in state["unavailable"], state


def _engine_or_fail() -> None:
    engine = subprocess.run([str(REPO / "scripts" / "docker-engine.sh")], capture_output=True, text=True, timeout=300)
    if engine.returncode != 0:
        pytest.fail(f"no Docker engine; scripts/docker-engine.sh exited {engine.returncode}:\n{_tail(engine.stderr)}")


def _tail(text: str | bytes | None, lines: int = 40) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join((text or "").splitlines()[-lines:])


def test_pool_stop_removes_every_container(api: Any) -> None:
    async def run() -> tuple[list[str], list[str]]:
        pool = SandboxPool("docker", slots=3)
        await pool.start()
        try:
            runs, failure = await pool.run("print(input())", [Input(stdin="hi\n")])
            assert failure is None and runs[0].stdout == "hi\n", runs
            during = _pool_containers(api, pool)
        finally:
            await pool.stop()
        return during, _pool_containers(api, pool)

    during, after = asyncio.run(run())
    assert len(during) == 3 and after == []


# -- paranoid mode: gVisor ------------------------------------------------------------------------------
def test_gvisor_runtime_scores_and_contains(api: Any, reward_server) -> None:
    """`docker_runtime=runsc`: the same zygote under gVisor's kernel. scripts/docker-engine.sh installs
    Debian's `runsc` and registers it with the engine, so a missing runtime is a failure, not a skip."""
    runtimes = api.info().get("Runtimes") or {}
    assert "runsc" in runtimes, (f"the Docker engine has no runsc runtime (it has {sorted(runtimes)}); "
                                 "scripts/docker-engine.sh should have registered it")
    url = reward_server(workers=1, sandbox=SandboxSettings(backend="docker", docker_runtime="runsc", parallelism=1,
                                                           test_timeout_s=2.0))
    [srv] = reward_server.servers
    state = httpx.get(url + "/readyz", timeout=5).json()["verifiers"]["code"]
    assert (state["runtime"], state.get("gvisor")) == ("runsc", True), state
    assert score(srv, ADD, ["assert add(1, 2) == 3", "assert add(2, 2) == 5"])["reward"] == 0.5
    pairs = [{"input": "3\n", "output": "6"}]
    assert score(srv, "print(int(input()) * 2)", pairs, verifier="code_stdio")["reward"] == 1.0
    # Fork bombs leave host pids behind under gVisor: the slot is recycled rather than exhausted.
    for name in ("fork_bomb", "fork_bomb", "fork_bomb", "memory_bomb", "network_outside", "sleep_past_timeout",
                 "write_outside_scratch", "read_shadow", "kill_everything"):
        result = score(srv, f"```python\n{ESCAPES[name]}```", [{"input": "", "output": "PWNED"}], verifier="code_stdio")
        assert result["reward"] == 0.0, (name, result)
        # Under gVisor a bomb can take its slot down with it (the slot is replaced): reported as the run's error
        # (status ok, details.sandbox says why) or, when the slot dies before answering, as an item error.
        slot_lost = name == "fork_bomb" and (result["status"] == "error" or "sandbox" in result["details"])
        if not slot_lost:
            assert result["status"] == "ok", (name, result)
            test = result["details"]["tests"][0]
            if name != "kill_everything":  # kill(-1) also ends the job's harness processes (same uid): the
                assert "sandbox" not in result["details"], (name, result["details"])  # slot is replaced
            if test["status"] == "failed" and "blocked" in ESCAPES[name]:
                assert "blocked" in test.get("stdout", ""), (name, test)
        assert score(srv, "def f(x):\n    return x * 2\n", ["assert f(2) == 4"])["reward"] == 1.0, name


# -- hardening (issue 15): the same attacks as on bwrap ---------------------------------------------------
def test_hacks_earn_nothing_in_the_container(server: LocalRewardServer) -> None:
    from test_code_hardening import HACKS as HARDENING_HACKS, TEST_SHAPES

    items = [{"id": f"{name}/{shape}", "verifier": "code", "response": f"```python\n{program}\n```",
              "ground_truth": TEST_SHAPES[shape]}
             for name, program in HARDENING_HACKS.items() for shape in ("loop", "check", "abs_diff", "isclose")]
    for result in verify(server, items):
        assert result["status"] == "ok" and result["reward"] == 0.0, result


def test_no_foreign_data_and_nothing_survives_in_the_container(api: Any) -> None:
    from test_code_hardening import check_no_foreign_data_in_memory, check_nothing_survives

    check_no_foreign_data_in_memory("docker")
    check_nothing_survives("docker")


# -- issue 23's test semantics, in containers too ---------------------------------------------------------
@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_semantic_attacks_earn_nothing_in_containers(api: Any, reward_server, runtime: str) -> None:
    """The shadowing, comparison and runner attacks of test_code_semantics, as one batch, under runc and
    gVisor: each is a wrong program that scored 1.0 before; each scores 0, its right twin 1."""
    from test_code_semantics import _RIGHT, _WRONG, DECIDED, RUNNERS, SHADOWS

    url = reward_server(workers=1, sandbox=SandboxSettings(backend="docker", docker_runtime=runtime, parallelism=1,
                                                           test_timeout_s=2.0))
    attacks = [(program, tests) for program, tests in SHADOWS.values()]
    attacks += [(program, tests) for program, tests, _ in DECIDED.values()]
    attacks += [(_WRONG, [test]) for test in RUNNERS.values()]
    items = [{"id": str(i), "verifier": "code", "response": f"```python\n{program}\n```", "ground_truth": tests}
             for i, (program, tests) in enumerate(attacks)]
    items += [{"id": f"right-{name}", "verifier": "code", "response": f"```python\n{_RIGHT}\n```", "ground_truth": [test]}
              for name, test in RUNNERS.items()]
    results = httpx.post(url + "/v1/verify", json={"items": items}, timeout=300).json()["results"]
    wrong = [r for r in results if not r["id"].startswith("right-")]
    assert all(r["status"] == "ok" and r["reward"] == 0.0 for r in wrong), [(r["id"], r["status"], r["error"]) for r in wrong if r["reward"] != 0.0]
    assert all(r["reward"] == 1.0 for r in results if r["id"].startswith("right-")), results
