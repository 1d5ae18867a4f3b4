"""The `swe` environment: software-engineering tasks (olmorl or Harbor task directories), one container per
session (docs/environments-swe.md)."""

from olmorl.rewards.environments.swe._env import SweEnvironment, SweOptions, SweTask
from olmorl.rewards.environments.swe._tasks import TaskSpec, load_task

__all__ = ["SweEnvironment", "SweOptions", "SweTask", "TaskSpec", "load_task"]
