"""Replies of session calls kept by idempotency key, so a client may retry a call whose reply it lost.

A tool call runs code: when the connection drops after the server ran it, the client cannot know whether it
ran. It sends the same `Idempotency-Key` again; `Replies.once` answers that retry with the first call's reply
(or its error) without running the call again, and a duplicate that arrives while the first still runs waits
for it. The call runs in a task of its own, so a client that hangs up mid-call does not cancel it: the retry
then finds it running and waits. Keys are per session (the same key on another session is another call);
the newest `capacity` replies over all sessions are kept, so memory is bounded (a tool reply is cut to
`max_output_chars`). A verify or close reply outlives its session, so their retries are answered too. Opens
have no session yet: their keys share one scope of their own (`OPENS`), and only a successful open is kept.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, Awaitable, Callable, TypeVar

T = TypeVar("T")
MAX_KEY_CHARS = 200  # a longer Idempotency-Key is refused (422): keys are kept in memory
OPENS = "(opens)"  # the scope of opens' keys: no session id has parentheses


class InvalidKey(ValueError):
    """An Idempotency-Key the server will not keep (HTTP 422)."""


class Replies:
    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        self.capacity = capacity
        self._calls: OrderedDict[tuple[str, str], asyncio.Future[Any]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._calls)

    async def once(self, session_id: str, key: str | None, call: Callable[[], Awaitable[T]],
                   keep_failures: bool = True) -> T:
        """`call()`'s result, run at most once per (session, key); no key (or capacity 0): just run it.
        `keep_failures=False`: a call that failed is forgotten once it ends, so a retry runs it again (an open
        refused by a full server opened nothing; its retry must try again, not get the refusal back)."""
        if key is None or self.capacity == 0:
            return await call()
        if len(key) > MAX_KEY_CHARS:
            raise InvalidKey(f"Idempotency-Key has {len(key)} characters; the limit is {MAX_KEY_CHARS}")
        slot = (session_id, key)
        running = self._calls.get(slot)
        if running is None:
            running = asyncio.ensure_future(call())
            running.add_done_callback(_retrieve)
            if not keep_failures:
                running.add_done_callback(lambda done: self._forget_failed(slot, done))
            self._calls[slot] = running
            self._evict()
        else:
            self._calls.move_to_end(slot)
        return await asyncio.shield(running)  # a client hanging up cancels its wait, not the call

    def _forget_failed(self, slot: tuple[str, str], done: asyncio.Future[Any]) -> None:
        if (done.cancelled() or done.exception() is not None) and self._calls.get(slot) is done:
            del self._calls[slot]

    def _evict(self) -> None:
        # the oldest finished replies go first; calls still running stay (their retries must wait for them)
        excess = len(self._calls) - self.capacity
        for slot in list(self._calls) if excess > 0 else ():
            if excess == 0:
                break
            if self._calls[slot].done():
                del self._calls[slot]
                excess -= 1


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # read, so a failed call nobody retries logs no "exception was never retrieved"
