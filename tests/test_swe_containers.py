"""Task images and containers on the real Docker engine: the content-hash cache, gVisor, and cleanup on
TTL expiry and after a server crash (a server SIGKILLed, then started again)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import time

import httpx
import pytest

from olmorl.clients import SessionClient
from olmorl.rewards._settings import SessionSettings
from olmorl.rewards.environments.swe import load_task
from olmorl.sandbox._containers import AGENT_USER, ContainerLimits, _discarding, start_task_container
from olmorl.sandbox._task_images import build_context, ensure_image
from swe_support import TASKS, SweSettings, docker_or_skip, pytest_task, task_containers

pytestmark = docker_or_skip()
BASE = SweSettings().base_image


def test_images_are_cached_by_content_hash(tmp_path):
    task = tmp_path / "calc-bug"
    shutil.copytree(TASKS / "calc-bug", task)
    spec = load_task(task, BASE)
    assert build_context(spec.recipe) == build_context(load_task(task, BASE).recipe)  # deterministic
    tag = ensure_image(spec.recipe)
    started = time.perf_counter()
    assert ensure_image(load_task(task, BASE).recipe) == tag
    assert time.perf_counter() - started < 1.0  # found, not built
    os.utime(task / "repo" / "calc" / "ops.py", (0, 0))  # times do not count
    assert ensure_image(load_task(task, BASE).recipe) == tag
    (task / "repo" / "calc" / "ops.py").write_text("def add(a, b):\n    return a + b\n")  # content does
    assert ensure_image(load_task(task, BASE).recipe) != tag


def test_an_image_that_is_not_on_the_engine_is_named(tmp_path):
    from olmorl.sandbox._task_images import ImageBuildFailed, ImageRecipe

    with pytest.raises(ImageBuildFailed, match="'olmorl-nowhere:1' that the task starts FROM is not on this Docker"):
        ensure_image(ImageRecipe(base_image="olmorl-nowhere:1", repo=TASKS / "calc-bug" / "repo", workdir="/w"))


# A `find` that refuses -printf as BusyBox's does (no registry here to fetch an Alpine image), the rest passed on
FIND_WITHOUT_PRINTF = ("FROM olmorl-base:bookworm\nRUN printf '%s\\n' '#!/bin/sh' 'case \" $* \" in *\" -printf \"*) "
                       "echo \"find: unrecognized: -printf\" >&2; exit 1;; esac' 'exec /usr/bin/find \"$@\"' "
                       "> /usr/local/bin/find && chmod 0755 /usr/local/bin/find\n")


def test_a_task_whose_image_find_cannot_pin_fails_its_build_saying_so(tmp_path):
    """Verify pins the repository with GNU find's -printf. Before, an image with another find (BusyBox's, on
    Alpine) built, and every verify then failed at the listing; now its build fails naming what is missing.
    A Harbor task that pins nothing (test.sh as root) still builds on such an image."""
    from olmorl.sandbox._task_images import ImageBuildFailed

    task = shutil.copytree(TASKS / "greeting-dockerfile", tmp_path / "busybox-find")
    (task / "environment" / "Dockerfile").write_text(FIND_WITHOUT_PRINTF)
    with pytest.raises(ImageBuildFailed, match="needs GNU find .* install findutils"):
        ensure_image(load_task(task, BASE).recipe)
    harbor = shutil.copytree(TASKS / "harbor-hello", tmp_path / "harbor-busybox-find")
    (harbor / "environment" / "Dockerfile").write_text(FIND_WITHOUT_PRINTF + "WORKDIR /app\n")
    assert ensure_image(load_task(harbor, BASE).recipe).startswith("olmorl-task:")
    toml = (harbor / "task.toml").read_text()
    (harbor / "task.toml").write_text(toml.replace("[verifier]\n", '[verifier]\nuser = "nobody"\n', 1))
    with pytest.raises(ImageBuildFailed, match="needs GNU find"):
        ensure_image(load_task(harbor, BASE).recipe)


def test_a_task_container_under_gvisor():
    if "runsc" not in os.popen("docker info --format '{{json .Runtimes}}'").read():
        pytest.skip("the Docker engine has no runsc runtime")
    tag = ensure_image(load_task(TASKS / "calc-bug", BASE).recipe)
    before = task_containers()

    async def run() -> tuple[str, int]:
        container = await start_task_container(tag, ContainerLimits(runtime="runsc", disk_mb=32), workdir="/workspace")
        try:
            kernel = await container.exec(["cat", "/proc/version"], timeout_s=10)
            # not `ls`: this runsc answers coreutils' statx with EINVAL
            files = await container.exec(["cat", "calc/ops.py"], timeout_s=10)
            return kernel.stdout + files.stdout, (await container.exec(["sleep", "5"], timeout_s=1)).exit_code
        finally:
            await container.close()

    shown, code = asyncio.run(run())
    assert "Linux version 4.4.0" in shown and "return a - b" in shown and code == 124  # gVisor's own kernel
    assert task_containers() == before


def _server(tmp_path, **sessions):
    from olmorl.rewards.service._local import LocalRewardServer

    return LocalRewardServer(workers=1, log_path=str(tmp_path / "server.log"),
                             sessions=SessionSettings(state_dir=str(tmp_path / "state"), call_timeout_s=90, **sessions),
                             swe=SweSettings(task_root=str(TASKS)))


def test_a_container_is_removed_when_its_session_expires(tmp_path):
    with _server(tmp_path, idle_ttl_s=1.0, reap_interval_s=0.2) as server, SessionClient(server.url, timeout=180) as client:
        before = set(task_containers())  # after the start's sweep of crashed servers' containers
        session = client.open("swe", {"path": "calc-bug"})
        # only this session's container is watched: an earlier test's may still be on its way out
        mine = set(task_containers()) - before
        assert len(mine) == 1, mine
        deadline = time.monotonic() + 20
        while mine & set(task_containers()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not mine & set(task_containers())
        reply = httpx.post(f"{server.url}/v1/sessions/{session.id}/tool", json={"name": "bash",
                                                                               "arguments": {"command": "ls"}})
        assert reply.status_code == 404 and "expired" in reply.text


def test_containers_of_a_crashed_server_are_removed_at_the_next_start(tmp_path):
    before = task_containers()
    server = _server(tmp_path).start()
    try:
        with SessionClient(server.url, timeout=180) as client:
            client.open("swe", {"path": "calc-bug"})
        orphans = sorted(set(task_containers()) - set(before))
        assert len(orphans) == 1
        assert server.process is not None
        os.killpg(server.process.pid, signal.SIGKILL)  # no shutdown code runs
        server.process.wait()
        assert orphans[0] in task_containers()  # nothing else removes it
    finally:
        server.stop()
    with _server(tmp_path):  # ready means started: the sweep ran
        assert orphans[0] not in task_containers()


def test_a_start_cancelled_midway_leaves_no_container():
    tag = ensure_image(load_task(TASKS / "calc-bug", BASE).recipe)
    before = task_containers()

    async def run() -> list[str]:
        with pytest.raises(asyncio.TimeoutError):  # a session's setup past call_timeout_s, a client gone
            await asyncio.wait_for(start_task_container(tag, ContainerLimits(), workdir="/workspace"), 0.05)
        await asyncio.sleep(0)  # the removal is scheduled at the cancel; it waits for the start's thread
        assert _discarding
        await asyncio.wait_for(asyncio.gather(*_discarding), 60)
        return await asyncio.to_thread(task_containers)

    assert asyncio.run(run()) == before


def test_a_repository_snapshot_given_as_an_archive(tmp_path):
    import tarfile

    task = tmp_path / "calc-archive"
    shutil.copytree(TASKS / "calc-bug", task, ignore=shutil.ignore_patterns("repo"))
    with tarfile.open(task / "repo.tar.gz", "w:gz") as tar:
        tar.add(TASKS / "calc-bug" / "repo", arcname=".")
    tag = ensure_image(load_task(task, BASE).recipe)

    async def run() -> str:
        container = await start_task_container(tag, ContainerLimits(), workdir="/workspace")
        try:
            return (await container.exec(["sh", "-c", "cat calc/ops.py; ls tests"], timeout_s=10)).stdout
        finally:
            await container.close()

    assert asyncio.run(run()) == (TASKS / "calc-bug" / "repo" / "calc" / "ops.py").read_text() + \
        "__init__.py\ntest_visible.py\n"


def test_pytest_ids_in_an_image_that_carries_pytest(tmp_path):
    from olmorl.rewards.environments.swe._verify import verify_task

    task = pytest_task(tmp_path / "calc-pytest")
    ids = ["tests/test_hidden.py::AddTest::test_add", "tests/test_hidden.py::AddTest::test_add_negative"]
    (task / "swe.toml").write_text(f'[tests]\nframework = "pytest"\nfail_to_pass = {ids!r}\n'.replace("'", '"') +
                                   'pass_to_pass = ["tests/test_hidden.py::MulTest::test_mul", "tests/test_nope.py::x"]\n')
    spec = load_task(task, BASE)
    tag = ensure_image(spec.recipe)

    async def run(fixed: bool) -> dict:
        agent = await start_task_container(tag, ContainerLimits(), workdir="/workspace")
        fresh = asyncio.ensure_future(start_task_container(tag, ContainerLimits(), workdir="/workspace"))
        try:
            if fixed:
                await agent.write_files({"calc/ops.py": b"def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n"
                                                        b"    return a * b\n", "pytest.py": b"raise SystemExit(3)\n"},
                                        "/workspace", user=AGENT_USER)
            return (await verify_task(agent, fresh, spec, tag, "pass_fail", 60, 1 << 30)).details
        finally:
            await agent.close()
            await (await fresh).close()

    broken, fixed = asyncio.run(run(False)), asyncio.run(run(True))
    assert broken["tests"] == {ids[0]: "failed", ids[1]: "failed", "tests/test_hidden.py::MulTest::test_mul": "passed",
                               "tests/test_nope.py::x": "missing"}, broken["output_tail"]
    assert fixed["fail_to_pass"] == {"passed": 2, "total": 2} and fixed["pass_to_pass"] == {"passed": 1, "total": 2}


@pytest.mark.parametrize("runtime", [None, "runsc"])
def test_the_repository_opens_to_new_files_and_a_file_replaced_there_is_seen(runtime):
    """runc (this kernel) refuses the rename over root's file; this host's gVisor lets it through, and the pins
    name it. Before, gVisor's repository stayed closed: `created` failed there (a test writing files scored 0)."""
    from olmorl.rewards.environments.swe import _writable
    from olmorl.sandbox._containers import ROOT_USER, TEST_USER

    if runtime and runtime not in os.popen("docker info --format '{{json .Runtimes}}'").read():
        pytest.skip(f"the Docker engine has no {runtime} runtime")
    tag = ensure_image(load_task(TASKS / "calc-bug", BASE).recipe)
    # as the test uid: a new file, then a rename of it over a file of root's
    attempt = "echo new > calc/new.py && echo created; mv -f calc/new.py calc/ops.py 2>/dev/null && echo replaced"

    async def run() -> tuple[str, list[str]]:
        container = await start_task_container(tag, ContainerLimits(runtime=runtime, disk_mb=32), workdir="/workspace",
                                               owner=ROOT_USER)
        try:
            pins = await _writable.open_repository(container)
            assert pins.entries and "/workspace/calc/ops.py" in pins.entries, pins
            done = (await container.exec(["sh", "-c", attempt], timeout_s=10, user=TEST_USER)).stdout
            return done, await _writable.replaced(container, pins)
        finally:
            await container.close()

    assert asyncio.run(run()) == (("created\n", []) if runtime is None else
                                  ("created\nreplaced\n", ["/workspace/calc/ops.py"]))
