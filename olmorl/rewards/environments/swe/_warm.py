"""Warm task containers: for each task recently opened, `swe.warm_containers` containers of its image
started ahead, so the next session of that task (the rest of a GRPO group, the next epoch) opens without
waiting for one. A container is handed out once and removed when its session ends: none ever comes back, so
nothing of one session reaches the next. At most `swe.warm_tasks` tasks are kept warm; opening another lets
the least recently opened one's containers go."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from olmorl.rewards.sessions._warm_pool import PoolStats, WarmPool
from olmorl.sandbox._containers import AGENT_USER, ContainerLimits, TaskContainer, start_task_container


@dataclass(frozen=True)
class ContainerSpec:
    """Everything a task container is started from: two sessions with equal specs can use each other's."""

    image: str
    limits: ContainerLimits
    workdir: str
    scratch: tuple[str, ...] = ()


async def start_container(spec: ContainerSpec, owner: str = AGENT_USER) -> TaskContainer:
    """A container of `spec`, started now (no pool), its working directory owned by `owner`."""
    return await start_task_container(spec.image, spec.limits, workdir=spec.workdir, scratch=spec.scratch,
                                      owner=owner)


async def _stop(container: TaskContainer) -> None:
    await container.close()


class WarmContainers:
    def __init__(self, size: int, max_tasks: int, max_starting: int, metrics: Any = None) -> None:
        self.max_tasks = max_tasks
        self._metrics = metrics
        self._recent: OrderedDict[ContainerSpec, None] = OrderedDict()
        self.pool: WarmPool[ContainerSpec, TaskContainer] = WarmPool(
            start_container, _stop, size=size, healthy=lambda c: not c.closed, max_starting=max_starting,
            name="warm swe containers", on_take=self._count)

    async def open(self, spec: ContainerSpec) -> TaskContainer:
        """A started container of `spec`, never used before: warm when one is ready."""
        if self.pool.size == 0:
            return await start_container(spec)
        self._recent[spec] = None
        self._recent.move_to_end(spec)
        while len(self._recent) > self.max_tasks:
            stale, _ = self._recent.popitem(last=False)
            await self.pool.discard(stale)
        return await self.pool.take(spec)

    def stats(self, spec: ContainerSpec) -> PoolStats:
        return self.pool.stats(spec)

    async def close(self) -> None:
        await self.pool.close()

    def _count(self, _spec: ContainerSpec, hit: bool) -> None:
        if self._metrics is not None:
            self._metrics.session_pool_takes.labels("swe", "hit" if hit else "miss").inc()
