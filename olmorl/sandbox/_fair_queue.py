"""Free sandbox slots shared fairly between the requests that wait for them."""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from typing import Generic, TypeVar

Slot = TypeVar("Slot")


class FairQueue(Generic[Slot]):
    """Free slots, handed out round-robin across owners (requests): each owner's waiters queue in
    order, and a freed slot goes to the waiting owner served least recently, so a request's items
    never wait behind every item of an earlier one. `cap` (0: none) bounds the slots one owner
    holds at once, keeping the others for other requests even while it is busy."""

    def __init__(self, cap: int = 0) -> None:
        self.cap = cap
        self.free: list[Slot] = []
        self.held: dict[object, int] = {}
        self.waiting: OrderedDict[object, deque[asyncio.Future[Slot]]] = OrderedDict()

    def _may_take(self, owner: object) -> bool:
        return self.cap <= 0 or self.held.get(owner, 0) < self.cap

    async def get(self, owner: object) -> Slot:
        if self.free and not self.waiting and self._may_take(owner):
            self.held[owner] = self.held.get(owner, 0) + 1
            return self.free.pop()
        future: asyncio.Future[Slot] = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(owner, deque()).append(future)
        self._dispatch()
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.put(future.result(), owner)
            else:
                queue = self.waiting.get(owner)
                if queue is not None and future in queue:
                    queue.remove(future)
                    if not queue:
                        del self.waiting[owner]
            raise

    def put(self, slot: Slot, owner: object) -> None:
        held = self.held.get(owner, 0) - 1
        if held > 0:
            self.held[owner] = held
        else:
            self.held.pop(owner, None)
        self.free.append(slot)
        self._dispatch()

    def _dispatch(self) -> None:
        while self.free:
            owner = next((o for o in self.waiting if self._may_take(o)), None)
            if owner is None:
                return
            queue = self.waiting[owner]
            future = queue.popleft()
            if queue:
                self.waiting.move_to_end(owner)  # this owner goes behind the others
            else:
                del self.waiting[owner]
            if not future.done():
                self.held[owner] = self.held.get(owner, 0) + 1
                future.set_result(self.free.pop())
