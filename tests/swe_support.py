"""Shared by the swe tests: the task directories written here, and the Docker engine they need."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from olmorl.rewards._settings import SweSettings
from olmorl.sandbox._containers import TASK_LABEL

TASKS = Path(__file__).parent / "swe_tasks"
__all__ = ["TASKS", "SweSettings", "docker_or_skip", "task_containers"]


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


def containers_back_to(before: list[str], deadline_s: float = 30.0) -> list[str]:
    """The task containers once they are `before` again, or after `deadline_s`: a verified session's container
    is removed after the reply goes out (the teardown runs in the background)."""
    end = time.monotonic() + deadline_s
    while (now := task_containers()) != before and time.monotonic() < end:
        time.sleep(0.2)
    return now


def task_containers() -> list[str]:
    """Ids of the task containers on the engine, running or not."""
    out = subprocess.run(["docker", "ps", "-aq", "--no-trunc", "--filter", f"label={TASK_LABEL}"],
                         capture_output=True, text=True, check=True).stdout
    return sorted(out.split())
