"""Many rollouts' session calls of one kind coalesced into one batched request (`Coalescer`).

Every HTTP request costs the multi-turn loop's thread about 2 ms of client CPU, under the interpreter lock the
engine thread needs for its forwards; a rollout made three or more (open, each tool call, verify). Rollouts
that finish a turn in the same engine step resume in the same event-loop pass and reach their next session
call together: the first call of a kind waits `window_s` for others (0: the rest of that pass), and they go
out as one request to the batch route (`AsyncSessionClient.open_many` / `call_many` / `verify_many`), each
item keeping its own outcome. A rollout's own calls stay in order: it awaits each before making the next.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Generic, Sequence, TypeVar

from olmorl.clients._session_transport import count_mismatch

A = TypeVar("A")  # one call's arguments
R = TypeVar("R")  # its result
MAX_ITEMS = 256  # per request: a full batch goes out at once


class Coalescer(Generic[A, R]):
    """`submit(args)` returns a future of that call's result (or its error); calls submitted within `window_s` of
    the first pending one are sent together by `send` (one outcome per call, in order: a result or an
    exception; a send that answers another count fails every call of the request, naming both). `track` receives each request's task, so a shutdown can let it finish."""

    def __init__(self, send: Callable[[list[A]], Awaitable[Sequence[R | BaseException]]], window_s: float,
                 track: Callable[[asyncio.Future[Any]], object], max_items: int = MAX_ITEMS) -> None:
        if window_s < 0 or max_items < 1:
            raise ValueError("window_s must be >= 0 and max_items >= 1")
        self._send, self.window_s, self._track, self.max_items = send, window_s, track, max_items
        self._pending: list[tuple[A, asyncio.Future[R]]] = []
        self._timer: asyncio.Handle | None = None
        self.requests = 0  # batched requests sent (each one HTTP request per replica)

    def submit(self, args: A) -> asyncio.Future[R]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._pending.append((args, future))
        if len(self._pending) >= self.max_items:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self.window_s, self._flush) if self.window_s else \
                loop.call_soon(self._flush)
        return future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        calls, self._pending = self._pending, []
        if calls:
            self.requests += 1
            self._track(asyncio.ensure_future(self._deliver(calls)))

    async def _deliver(self, calls: list[tuple[A, asyncio.Future[R]]]) -> None:
        try:
            outcomes = await self._send([args for args, _ in calls])
        except Exception as exc:  # the whole request failed: so did every call in it
            for _, future in calls:
                if not future.done():
                    future.set_exception(exc)
            return
        except BaseException:  # cancelled (a shutdown): so are its calls
            for _, future in calls:
                future.cancel()
            raise
        mismatch = count_mismatch(len(calls), len(outcomes))
        if mismatch is not None:  # unpaired, a call would wait forever or take another's outcome
            outcomes = [mismatch] * len(calls)
        for (_, future), outcome in zip(calls, outcomes):
            if future.done():  # its rollout was cancelled while the request was out
                continue
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
