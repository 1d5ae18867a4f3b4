"""Killable worker processes that score CPU-bound items in chunks.

One trip to a worker costs more than checking a typical math or IF item, so items travel in chunks
sized from the measured cost per item (about `chunk_target_s` of work each, never more than
`chunk_max_items`, and enough chunks to keep every worker busy). The time limit stays per item: a
chunk gets the largest deadline among its items; a chunk that passes it (or whose worker dies) is
killed and every item in it is retried alone, so only the stuck item times out, after its own
deadline.

Timeouts are enforced from outside the worker (pebble kills and replaces the process), never with
`signal.alarm`, which only works in the main thread and silently broke SymPy checks in threaded
verifiers.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import resource
import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Literal

from pebble import ProcessExpired, ProcessPool

from olmorl.rewards._metrics import RewardMetrics
from olmorl.rewards._registry import InvalidInput, Score, Task, Verifier, load_verifiers
from olmorl.rewards._settings import Settings

log = logging.getLogger("olmorl.rewards")


@dataclass(frozen=True)
class PoolJob:
    verifier: str  # canonical name of a pool verifier
    task: Task
    deadline_s: float


@dataclass(frozen=True)
class PoolFailure:
    """Why a job has no Score; the engine turns it into the item's status and error."""

    kind: Literal["invalid", "timeout", "died", "memory", "error"]
    message: str = ""


# -- worker side -------------------------------------------------------------------------------------
_worker_verifiers: dict[str, Verifier] = {}


def _init_worker(settings: Settings) -> None:
    """Runs once in each worker: build every pool verifier (imports SymPy etc.) and warm it up, then
    set the memory ceiling that bounds what scoring may add."""
    os.nice(settings.worker_nice)  # the event loop (health checks, I/O verifiers) wins the CPU over a busy worker
    for name, cls in load_verifiers(settings.plugins).items():
        if cls.runs_in == "pool":
            verifier = _worker_verifiers[name] = cls(settings)
            try:
                verifier.warm_up()
            except Exception:  # a failed warm-up only costs the first item its speed-up
                log.exception("warm-up of verifier %s failed", name)
    limit = settings.worker_memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _score_chunk(jobs: list[tuple[str, Task]]) -> tuple[list[Score | PoolFailure], float]:
    """Score a chunk in order; one failing item is that item's PoolFailure. Returns the outcomes and
    the seconds the chunk took (the parent's cost estimate)."""
    started = time.perf_counter()
    outcomes: list[Score | PoolFailure] = []
    for name, task in jobs:
        try:
            outcomes.append(_worker_verifiers[name].score(task))
        except InvalidInput as exc:
            outcomes.append(PoolFailure("invalid", str(exc)))
        except MemoryError:
            outcomes.append(PoolFailure("memory"))
        except Exception as exc:  # a verifier bug must cost one item, not the chunk
            log.exception("verifier %s failed", name)
            outcomes.append(PoolFailure("error", f"{type(exc).__name__}: {exc}"))
    return outcomes, time.perf_counter() - started


def _worker_ready() -> bool:
    return True


# -- server side -------------------------------------------------------------------------------------
class ChunkedPool:
    """`await pool.score(jobs)` -> one Score or PoolFailure per job, in order."""

    def __init__(self, settings: Settings, metrics: RewardMetrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self._pool: ProcessPool | None = None
        self._cost_s: dict[str, float] = {}  # moving average of worker seconds per item, by verifier

    async def start(self) -> None:
        self._pool = ProcessPool(
            max_workers=self.settings.workers,
            max_tasks=self.settings.worker_max_tasks,
            initializer=_init_worker,
            initargs=(self.settings,),
        )
        # One round-trip per worker, so readiness turns green only once every worker has its verifiers.
        warmups = [asyncio.wrap_future(self._pool.schedule(_worker_ready)) for _ in range(self.settings.workers)]
        await asyncio.gather(*warmups)

    async def stop(self) -> None:
        if self._pool is not None:
            self._pool.stop()
            await asyncio.to_thread(self._pool.join, 10)
            self._pool = None

    async def score(self, jobs: list[PoolJob]) -> list[Score | PoolFailure]:
        if not jobs:
            return []
        chunks = self._chunks(jobs)
        parts = await asyncio.gather(*(self._run(chunk) for chunk in chunks))
        return [outcome for part in parts for outcome in part]

    def _chunks(self, jobs: list[PoolJob]) -> list[list[PoolJob]]:
        """Consecutive jobs, cut at about chunk_target_s of estimated work, at chunk_max_items, and
        at the size that still gives every worker a chunk (concurrent requests keep them all busy)."""
        settings = self.settings
        spread = max(1, math.ceil(len(jobs) / settings.workers))
        max_items = max(1, min(settings.chunk_max_items, spread))
        chunks: list[list[PoolJob]] = []
        current: list[PoolJob] = []
        work = 0.0
        for job in jobs:
            current.append(job)
            work += self._cost_s.get(job.verifier, settings.chunk_target_s / 8)
            if len(current) >= max_items or work >= settings.chunk_target_s:
                chunks.append(current)
                current, work = [], 0.0
        if current:
            chunks.append(current)
        return chunks

    async def _run(self, chunk: list[PoolJob]) -> list[Score | PoolFailure]:
        if self._pool is None:
            raise RuntimeError("reward engine is not started")
        deadline = max(job.deadline_s for job in chunk)
        future = self._pool.schedule(_score_chunk, args=([(j.verifier, j.task) for j in chunk],), timeout=deadline)
        try:
            outcomes, elapsed = await asyncio.wrap_future(future)
        except (FutureTimeout, ProcessExpired) as exc:
            if len(chunk) > 1:  # find the culprit: every item again, alone, with its own deadline
                self.metrics.chunk_splits.inc()
                alone = await asyncio.gather(*(self._run([job]) for job in chunk))
                return [outcomes[0] for outcomes in alone]
            return [self._failure(exc, deadline)]
        self._learn_cost(chunk, elapsed)
        return outcomes

    def _failure(self, exc: BaseException, deadline: float) -> PoolFailure:
        if isinstance(exc, ProcessExpired):
            self.metrics.worker_restarts.labels("died").inc()
            return PoolFailure("died", f"worker process died (exit code {exc.exitcode}); memory ceiling is "
                                       f"{self.settings.worker_memory_mb} MiB")
        self.metrics.worker_restarts.labels("timeout").inc()
        return PoolFailure("timeout", f"no result within {deadline:g} s")

    def _learn_cost(self, chunk: list[PoolJob], elapsed: float) -> None:
        per_item = elapsed / len(chunk)
        for name in {job.verifier for job in chunk}:
            previous = self._cost_s.get(name)
            self._cost_s[name] = per_item if previous is None else 0.8 * previous + 0.2 * per_item
