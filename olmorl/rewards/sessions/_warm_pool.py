"""A warm pool: things that are slow to start (sandboxed interpreters, containers) started ahead of demand.

    pool = WarmPool(start, stop, size=2, healthy=is_alive)   # start(spec) -> T, stop(T), healthy(T) -> bool
    pool.fill(spec)                  # begin filling spec's pool in the background (e.g. at server start)
    item = await pool.take(spec)     # a ready one (a hit), else one started now (a miss); then refills
    await pool.close()               # stop refilling, stop every ready one (started ones are the taker's)

Items are keyed by a hashable `spec` (interpreter limits, an image name), so one pool serves several kinds;
each spec keeps up to `size` ready. An item is handed out once and never comes back: the taker stops it
itself when done (`stop`), so nothing of one user can reach the next. Before an item is handed out, `healthy`
must say it still works; a dead one is stopped, counted as `discarded`, and the next is tried.

Refill runs in the background after each take, one task per spec, with at most `max_starting` starts at once
over all specs (a burst of takes must not start a burst of processes); a failed start is logged and retried
after a growing pause. Each start waits until no take has come for `refill_delay_s`: a start forks the server
(~8 ms of the event loop's time idle, tens under load), and a burst of opens (a trainer's 64 rollouts at once)
must not queue behind forks, nor their replies. So the pool refills once the burst is over, or at latest
`refill_max_wait_s` after its refill began waiting (a steady stream of takes still gets its pool back). A miss
starts its item at once, outside that bound: the caller is waiting for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

log = logging.getLogger("olmorl.rewards")

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
_RETRY_FIRST_S, _RETRY_MAX_S = 0.5, 30.0  # pause after a failed background start, doubling up to the max


@dataclass(frozen=True)
class PoolStats:
    """One spec's pool: items ready and starting now; takes served ready (hits) or started on demand
    (misses); ready items found dead and stopped (discarded); background starts that failed."""

    ready: int
    starting: int
    hits: int
    misses: int
    discarded: int
    failed: int


@dataclass
class _Shelf(Generic[T]):
    ready: deque[T]
    starting: int = 0
    hits: int = 0
    misses: int = 0
    discarded: int = 0
    failed: int = 0
    refill: asyncio.Task[None] | None = None
    last_take: float = 0.0  # time.monotonic() of the latest take: refill starts wait until takes go quiet


class WarmPool(Generic[K, T]):
    def __init__(self, start: Callable[[K], Awaitable[T]], stop: Callable[[T], Awaitable[None]], size: int,
                 healthy: Callable[[T], bool] = lambda _: True, max_starting: int = 1, name: str = "pool",
                 on_take: Callable[[K, bool], None] | None = None, refill_delay_s: float = 0.05,
                 refill_max_wait_s: float = 1.0) -> None:
        if size < 0 or max_starting < 1:
            raise ValueError(f"{name}: size must be >= 0 and max_starting >= 1 (got {size}, {max_starting})")
        self.name = name
        self.size = size
        self.refill_delay_s, self.refill_max_wait_s = refill_delay_s, refill_max_wait_s
        self._start, self._stop, self._healthy, self._on_take = start, stop, healthy, on_take
        self._starts = asyncio.Semaphore(max_starting)
        self._shelves: dict[K, _Shelf[T]] = {}
        self._closed = False

    def fill(self, spec: K, delay_s: float = 0.0) -> None:
        """Start filling `spec`'s pool up to `size` in the background, after `delay_s` (no-op when a fill is
        already running, or size is 0)."""
        if self._closed or self.size == 0:
            return
        shelf = self._shelf(spec)
        if shelf.refill is None or shelf.refill.done():
            shelf.refill = asyncio.ensure_future(self._refill(spec, shelf, delay_s))

    async def take(self, spec: K) -> T:
        """A started item for `spec`: a ready, healthy one if there is one, else one started now."""
        shelf = self._shelf(spec)
        item: T | None = None
        while shelf.ready:
            candidate = shelf.ready.popleft()
            if self._healthy(candidate):
                item = candidate
                break
            shelf.discarded += 1
            log.warning("%s: a ready item died while it waited; stopped and replaced", self.name)
            await self._stop_quietly(candidate)
        hit = item is not None
        shelf.last_take = time.monotonic()
        if hit:
            shelf.hits += 1
        else:
            shelf.misses += 1
        if self._on_take is not None:
            self._on_take(spec, hit)
        self.fill(spec, self.refill_delay_s)  # replace what was taken, in the background, after the reply
        return item if item is not None else await self._start(spec)

    def stats(self, spec: K) -> PoolStats:
        shelf = self._shelf(spec)
        return PoolStats(ready=len(shelf.ready), starting=shelf.starting, hits=shelf.hits, misses=shelf.misses,
                         discarded=shelf.discarded, failed=shelf.failed)

    async def discard(self, spec: K) -> None:
        """Stop keeping `spec` warm: its refill stops, its ready items are stopped, its counts are forgotten."""
        shelf = self._shelves.pop(spec, None)
        if shelf is None:
            return
        if shelf.refill is not None and not shelf.refill.done():
            shelf.refill.cancel()
            await asyncio.gather(shelf.refill, return_exceptions=True)
        ready = list(shelf.ready)
        shelf.ready.clear()
        await asyncio.gather(*(self._stop_quietly(item) for item in ready))

    async def close(self) -> None:
        """Stop refilling and stop every ready item. Takes after this are all misses (nothing is kept)."""
        self._closed = True
        tasks = [s.refill for s in self._shelves.values() if s.refill is not None and not s.refill.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        ready = [item for shelf in self._shelves.values() for item in shelf.ready]
        for shelf in self._shelves.values():
            shelf.ready.clear()
        await asyncio.gather(*(self._stop_quietly(item) for item in ready))

    # -- internals -------------------------------------------------------------------------------------
    def _shelf(self, spec: K) -> _Shelf[T]:
        shelf = self._shelves.get(spec)
        if shelf is None:
            shelf = self._shelves[spec] = _Shelf(ready=deque())
        return shelf

    async def _refill(self, spec: K, shelf: _Shelf[T], delay_s: float) -> None:
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        pause, give_up = _RETRY_FIRST_S, time.monotonic() + self.refill_max_wait_s
        while not self._closed and len(shelf.ready) + shelf.starting < self.size:
            if delay_s > 0:  # after a take (not at server start): let a burst of takes end first
                await self._takes_quiet(shelf, give_up)
            async with self._starts:
                if self._closed or len(shelf.ready) + shelf.starting >= self.size:
                    return
                shelf.starting += 1
                try:
                    item = await self._start(spec)
                except Exception as exc:
                    shelf.failed += 1
                    log.warning("%s: a background start failed (%s: %s); retrying in %.1f s", self.name,
                                type(exc).__name__, exc, pause)
                    item = None
                finally:
                    shelf.starting -= 1
            if item is None:
                await asyncio.sleep(pause)
                pause = min(pause * 2, _RETRY_MAX_S)
                continue
            pause = _RETRY_FIRST_S
            if self._closed:  # closed while it started: nobody will take it
                await self._stop_quietly(item)
                return
            shelf.ready.append(item)

    async def _takes_quiet(self, shelf: _Shelf[T], give_up: float) -> None:
        """Return once no take has come for `refill_delay_s`, or at `give_up` (monotonic) if takes go on."""
        while (wait := min(shelf.last_take + self.refill_delay_s, give_up) - time.monotonic()) > 0:
            await asyncio.sleep(wait)

    async def _stop_quietly(self, item: T) -> None:
        try:
            await self._stop(item)
        except Exception:
            log.exception("%s: stopping an item failed", self.name)
