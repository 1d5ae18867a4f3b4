"""Shared by the swe tests: the task directories written here, and the Docker engine they need."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from olmorl.rewards._settings import SessionSettings, SweSettings
from olmorl.sandbox._containers import TASK_LABEL

TASKS = Path(__file__).parent / "swe_tasks"
__all__ = ["TASKS", "SweSettings", "answer_task", "client", "docker_or_skip", "engine_runtimes", "pytest_task",
           "swe_server", "task_containers"]


def docker_or_skip() -> pytest.MarkDecorator:
    """Skip only where no Docker engine answers (`docker info` fails) or the base image is not built."""
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0
        base = info and subprocess.run(["docker", "image", "inspect", SweSettings().base_image],
                                       capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        info = base = False
    reason = ("`docker info` fails: no Docker engine (scripts/docker-engine.sh starts one)" if not info else
              "the base image is not built (scripts/build-base-image.sh)")
    return pytest.mark.skipif(not base, reason=reason)


def engine_runtimes() -> str:
    """The Docker engine's runtime table as `docker info` prints it (JSON), "" where no engine answers."""
    try:
        return subprocess.run(["docker", "info", "--format", "{{json .Runtimes}}"], capture_output=True, text=True,
                              timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def containers_back_to(before: list[str], deadline_s: float = 30.0) -> list[str]:
    """The task containers once none but `before` are left (or after `deadline_s`), as a sorted list of those
    of `before` still there plus any other: a verified session's containers (the agent's and the verdict's) are
    removed after the reply goes out (the teardown runs in the background), and a container of `before` may be
    an earlier test's, going the same way."""
    end = time.monotonic() + deadline_s
    while (now := task_containers()) and not set(now) <= set(before) and time.monotonic() < end:
        time.sleep(0.2)
    return sorted(set(now) - set(before)) or before


def task_containers() -> list[str]:
    """Ids of the task containers on the engine, running or not."""
    out = subprocess.run(["docker", "ps", "-aq", "--no-trunc", "--filter", f"label={TASK_LABEL}"],
                         capture_output=True, text=True, check=True).stdout
    return sorted(out.split())


def pytest_task(task: Path) -> Path:
    """calc-bug copied to `task`, its image carrying pytest (copied from this environment: no registry) and its
    ids pytest node ids."""
    shutil.copytree(TASKS / "calc-bug", task)
    site = task / "environment" / "site"
    for name in ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py"):
        source = Path(str(importlib.import_module(name).__file__))
        if source.name == "__init__.py":
            shutil.copytree(source.parent, site / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            site.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, site / source.name)
    (task / "environment" / "Dockerfile").write_text("FROM olmorl-base:bookworm\nCOPY site/ /usr/lib/python3/dist-packages/\n")
    ids = ["tests/test_hidden.py::AddTest::test_add", "tests/test_hidden.py::AddTest::test_add_negative"]
    (task / "swe.toml").write_text(f'[tests]\nframework = "pytest"\nfail_to_pass = {ids!r}\n'.replace("'", '"') +
                                   'pass_to_pass = ["tests/test_hidden.py::MulTest::test_mul"]\n')
    return task


def answer_task(task: Path, tests: dict[str, str], verifier: str = "") -> Path:
    """A Harbor task at `task`: make answer() in /app/answer.py return 42; `tests`: its tests/ files (test.sh
    among them), `verifier`: lines added to its [verifier] table."""
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "task.toml").write_text(f'version = "1.0"\n\n[verifier]\ntimeout_sec = 60\n{verifier}')
    (task / "instruction.md").write_text("Make answer() in /app/answer.py return 42.\n")
    (task / "environment" / "Dockerfile").write_text(
        "FROM olmorl-base:bookworm\nWORKDIR /app\nRUN printf 'def answer():\\n    return 0\\n' > answer.py\n")
    for name, text in tests.items():
        (task / "tests" / name).write_text(text)
    return task


def swe_server(tmp: Path, task_root: Path, bash_timeout_s: float, runtime: str | None = None) -> Any:
    """A started server (one worker) serving the task directories under `task_root`; small containers, run by the
    OCI `runtime` (None: the engine's default)."""
    from olmorl.rewards.service._local import LocalRewardServer

    return LocalRewardServer(workers=1, log_path=str(tmp / "server.log"),
                             sessions=SessionSettings(state_dir=str(tmp / "state"), call_timeout_s=90),
                             swe=SweSettings(task_root=str(task_root), bash_timeout_s=bash_timeout_s, memory_mb=512,
                                             disk_mb=64, runtime=runtime)).start()


@pytest.fixture
def client(url: str) -> Any:
    """A session client of the test module's `url` fixture (a module imports this fixture by name)."""
    from olmorl.clients import SessionClient

    with SessionClient(url, timeout=180) as c:
        yield c
