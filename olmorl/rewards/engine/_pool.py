"""Worker processes that score CPU-bound items in chunks, with a hard time limit per item.

One trip to a worker costs more than checking a typical math or IF item, so items travel in chunks
sized from the measured cost per item (about `chunk_target_s` of work each, never more than
`chunk_max_items`, and enough chunks to keep every worker busy). The time limit stays per item: a
chunk gets the largest deadline among its items; a chunk that passes it (or whose worker dies) has
its worker killed and every item in it retried alone, so only the stuck item times out, after its
own deadline. A killed or dead worker is replaced; the chunks queued behind it go to the front of
its queue.

Each job has an affinity (the engine hashes verifier and ground truth), and each worker its own
queue: items that share a reference go to the same worker, whose caches (parsed references,
normalized answers) then serve them all, as they would in one process. A worker whose queue is
empty takes the oldest chunk of the longest other queue, so affinity never leaves a worker idle.
The processes themselves and the wire to them are in _workers.py.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import math
from collections import deque
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from olmorl.rewards._metrics import RewardMetrics
from olmorl.rewards.engine._registry import ItemError, Score, Task
from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._workers import WorkerProcess, build_pool_verifiers

__all__ = ["ChunkedPool", "PoolJob"]

log = logging.getLogger("olmorl.rewards")

_PREFETCH = 2  # chunks sent to a worker at once: the next is there when one finishes; the rest can be stolen


@dataclass(frozen=True)
class PoolJob:
    verifier: str  # canonical name of a pool verifier
    task: Task
    deadline_s: float
    affinity: int = 0  # jobs with the same value go to the same worker unless another one is idle


@dataclass
class _Chunk:
    jobs: list[PoolJob]
    done: asyncio.Future  # its outcomes, in job order


@dataclass
class _Slot:
    """One worker's place: its live process (None while a replacement starts), the chunks sent to it in the
    order it scores them, and the deadline timer of the first."""

    index: int
    worker: WorkerProcess | None = None
    sent: deque[_Chunk] = field(default_factory=deque)
    timer: asyncio.TimerHandle | None = None
    started: float = 0.0  # loop time the first sent chunk started
    chunks_done: int = 0


class ChunkedPool:
    """`await pool.score(jobs)` -> one (Score or ItemError, seconds the job ran) per job, in order."""

    def __init__(self, settings: Settings, metrics: RewardMetrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self._slots: list[_Slot] = []
        self._queues: list[deque[_Chunk]] = []
        self._cost_s: dict[str, float] = {}  # moving average of worker seconds per item, by verifier
        self._running = False
        self._processes: set[WorkerProcess] = set()  # every worker started and not yet seen to end
        self._spawning: set[asyncio.Task] = set()  # replacements starting

    # -- lifecycle -------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Builds and warms the pool verifiers here, then forks the workers from this warm process; returns once
        every worker is up (readiness turns green only then)."""
        await asyncio.to_thread(build_pool_verifiers, self.settings)  # seconds of imports: the loop stays free
        # Out of the collector's sight, the inherited heap is never walked (or its pages copied) by a worker's
        # full collections.
        gc.freeze()
        self._slots = [_Slot(i) for i in range(self.settings.workers)]
        self._queues = [deque() for _ in self._slots]
        self._running = True
        await asyncio.gather(*(self._spawn(slot, first=True) for slot in self._slots))

    async def stop(self) -> None:
        self._running = False
        stopped = RuntimeError("reward engine stopped")
        for task in self._spawning:
            task.cancel()
        await asyncio.gather(*self._spawning, return_exceptions=True)
        for slot in self._slots:
            if slot.timer is not None:
                slot.timer.cancel()
            for chunk in slot.sent:
                _settle(chunk.done, exception=stopped)
            slot.sent.clear()
            slot.worker = None
        for queue in self._queues:
            for chunk in queue:
                _settle(chunk.done, exception=stopped)
            queue.clear()
        for worker in list(self._processes):  # the slots' workers, and any a timeout or recycling is still reaping
            worker.kill()
            if worker.process is not None:
                await asyncio.to_thread(worker.process.join, 10)
        self._processes.clear()

    async def _spawn(self, slot: _Slot, first: bool = False) -> None:
        """Start the slot's worker. At server start a failure is the server's; a replacement that fails to start
        is retried (the other workers carry on)."""
        attempt = 0
        while True:
            worker = WorkerProcess(self.settings, on_reply=partial(self._replied, slot),
                                   on_exit=partial(self._exited, slot))
            self._processes.add(worker)
            try:
                await worker.start()
                break
            except Exception:
                if first:
                    raise
                attempt += 1
                log.exception("reward worker %d did not start (attempt %d); retrying", slot.index, attempt)
                await asyncio.sleep(min(30.0, 0.5 * 2 ** attempt))
            if not self._running:
                return
        if not self._running:  # stopped while it started
            worker.kill()
            return
        slot.worker, slot.chunks_done = worker, 0
        self._dispatch()

    # -- scoring ---------------------------------------------------------------------------------------
    async def score(self, jobs: list[PoolJob]) -> list[tuple[Score | ItemError, float]]:
        if not jobs:
            return []
        if not self._running:
            raise RuntimeError("reward engine is not started")
        loop = asyncio.get_running_loop()
        placed = []
        for home, indices in self._chunks(jobs):
            chunk = _Chunk([jobs[i] for i in indices], loop.create_future())
            self._queues[home].append(chunk)
            placed.append((indices, chunk))
        self._dispatch()
        outcomes: list[Any] = [None] * len(jobs)
        try:
            for indices, chunk in placed:
                for index, outcome in zip(indices, await chunk.done):
                    outcomes[index] = outcome
        except asyncio.CancelledError:  # the request went away: its queued chunks are dropped, not scored
            for _, chunk in placed:
                chunk.done.cancel()
            raise
        return outcomes

    def _chunks(self, jobs: list[PoolJob]) -> list[tuple[int, list[int]]]:
        """(worker, job indices) per chunk: jobs grouped by affinity, each group cut at about chunk_target_s of
        estimated work, at chunk_max_items, and at the size that still gives every worker a chunk (concurrent
        requests keep them all busy)."""
        settings, count = self.settings, len(self._slots)
        max_items = max(1, min(settings.chunk_max_items, math.ceil(len(jobs) / count)))
        homes: dict[int, list[int]] = {}
        for index, job in enumerate(jobs):
            homes.setdefault(job.affinity % count, []).append(index)
        chunks: list[tuple[int, list[int]]] = []
        for home, indices in homes.items():
            current: list[int] = []
            work = 0.0
            for index in indices:
                current.append(index)
                work += self._cost_s.get(jobs[index].verifier, settings.chunk_target_s / 8)
                if len(current) >= max_items or work >= settings.chunk_target_s:
                    chunks.append((home, current))
                    current, work = [], 0.0
            if current:
                chunks.append((home, current))
        return chunks

    def _dispatch(self) -> None:
        """Send chunks to workers with room: each takes from its own queue, or the oldest chunk of the longest
        other queue. A worker due for recycling gets nothing more and is replaced once it is idle."""
        for slot in self._slots:
            if slot.worker is None:
                continue
            if slot.chunks_done >= self.settings.worker_max_tasks:  # bounds what a leaking verifier can hold
                if not slot.sent:
                    self._replace(slot)
                continue
            while len(slot.sent) < _PREFETCH:
                queue = self._queues[slot.index] or max(self._queues, key=len)
                if not queue:
                    break
                chunk = queue.popleft()
                if chunk.done.done():  # its request went away
                    continue
                try:
                    slot.worker.send([(job.verifier, job.task) for job in chunk.jobs])
                except Exception as exc:  # a task that cannot be pickled: that request sees the error
                    _settle(chunk.done, exception=exc)
                    continue
                slot.sent.append(chunk)
                if len(slot.sent) == 1:
                    self._arm(slot)

    def _arm(self, slot: _Slot) -> None:
        """The first chunk sent to a worker starts now (its predecessor just finished): time it."""
        deadline = max(job.deadline_s for job in slot.sent[0].jobs)
        loop = asyncio.get_running_loop()
        slot.started = loop.time()
        slot.timer = loop.call_later(deadline, self._timed_out, slot, slot.worker, deadline)

    def _replied(self, slot: _Slot, worker: WorkerProcess, outcomes: list, seconds: list[float]) -> None:
        if slot.worker is not worker or not slot.sent:
            return  # a reply that raced the worker's kill
        chunk = slot.sent.popleft()
        if slot.timer is not None:
            slot.timer.cancel()
        if slot.sent:
            self._arm(slot)
        slot.chunks_done += 1
        self._learn_cost(chunk.jobs, sum(seconds))
        _settle(chunk.done, result=list(zip(outcomes, seconds)))
        self._dispatch()

    # -- failures --------------------------------------------------------------------------------------
    def _timed_out(self, slot: _Slot, worker: WorkerProcess | None, deadline: float) -> None:
        if slot.worker is not worker or not slot.sent:
            return
        ran = asyncio.get_running_loop().time() - slot.started
        chunk = self._take_down(slot)
        self._failed(slot, chunk, ItemError("timeout", f"no result within {deadline:g} s", {"reason": "timeout"}), "timeout", ran)

    def _exited(self, slot: _Slot, worker: WorkerProcess) -> None:
        """A worker's process ended. If the server did not end it, it died: its current chunk fails (item by
        item) and a replacement starts."""
        self._processes.discard(worker)
        if worker.killed or slot.worker is not worker:
            return
        ran = asyncio.get_running_loop().time() - slot.started
        chunk = self._take_down(slot) if slot.sent else None
        if chunk is None:
            self._replace(slot)
            return
        self._failed(slot, chunk, ItemError("error", f"worker process died (exit code {worker.exitcode}); memory "
                                                   f"ceiling is {self.settings.worker_memory_mb} MiB"), "died", ran)

    def _take_down(self, slot: _Slot) -> _Chunk:
        """Kill the slot's worker and start its replacement; returns the chunk it was scoring. The chunks sent
        behind it never started: they go back to the front of the slot's queue."""
        chunk = slot.sent.popleft()
        self._queues[slot.index].extendleft(reversed(slot.sent))
        slot.sent.clear()
        self._replace(slot)
        return chunk

    def _replace(self, slot: _Slot) -> None:
        if slot.timer is not None:
            slot.timer.cancel()
        if slot.worker is not None:
            slot.worker.kill()
            slot.worker = None
        if self._running:
            task = asyncio.get_running_loop().create_task(self._spawn(slot))
            self._spawning.add(task)
            task.add_done_callback(self._spawning.discard)

    def _failed(self, slot: _Slot, chunk: _Chunk, failure: ItemError, reason: str, ran: float) -> None:
        """`ran`: seconds the chunk ran before it failed; a lone item's time, else the chunk is retried."""
        if len(chunk.jobs) > 1:  # find the culprit: every item again, alone, with its own deadline
            self.metrics.chunk_splits.inc()
            alone = [_Chunk([job], asyncio.get_running_loop().create_future()) for job in chunk.jobs]
            self._queues[slot.index].extendleft(reversed(alone))
            asyncio.get_running_loop().create_task(_collect(chunk, alone))
        else:
            self.metrics.worker_restarts.labels(reason).inc()
            _settle(chunk.done, result=[(failure, ran)])
        self._dispatch()

    def _learn_cost(self, jobs: list[PoolJob], elapsed: float) -> None:
        per_item = elapsed / len(jobs)
        for name in {job.verifier for job in jobs}:
            previous = self._cost_s.get(name)
            self._cost_s[name] = per_item if previous is None else 0.8 * previous + 0.2 * per_item


async def _collect(chunk: _Chunk, alone: list[_Chunk]) -> None:
    try:
        parts = await asyncio.gather(*(part.done for part in alone))
    except (Exception, asyncio.CancelledError) as exc:
        _settle(chunk.done, exception=exc if isinstance(exc, Exception) else RuntimeError("cancelled"))
    else:
        _settle(chunk.done, result=[part[0] for part in parts])


def _settle(future: asyncio.Future, *, result: Any = None, exception: BaseException | None = None) -> None:
    """Set a chunk's outcome unless its request already went away (cancelled)."""
    if future.done():
        return
    if exception is not None:
        future.set_exception(exception)
    else:
        future.set_result(result)
