"""The memory budget of idle sessions.

An idle `python` session keeps its interpreter (and what its code allocated) until the idle TTL; with
the defaults, `max_sandboxed` × `memory_mb` can exceed the machine. So the reaper measures each
session's sandbox (its cgroup's charge, else its process tree's PSS: real figures, not the limits) and,
while the idle ones together hold more than the budget, closes the longest idle first. A later call on
an evicted session gets the 404 of any lost session, saying why. Sessions in a call are measured (for
/readyz) but never evicted, and do not count against the budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from olmorl.sandbox._memory import children_map, machine_memory_bytes

if TYPE_CHECKING:
    from olmorl.rewards.sessions._sessions import Session
    from olmorl.rewards._settings import SessionSettings


@dataclass(frozen=True)
class MemoryUse:
    """The last reaper pass's figures, for /readyz."""

    budget_bytes: int  # what idle sessions may hold in all
    idle_bytes: int = 0  # what idle sessions hold (after that pass's evictions)
    total_bytes: int = 0  # what all sessions holding a sandbox hold, those in a call included
    evicted: int = 0  # sessions evicted since the server started

    def readiness(self) -> dict[str, int]:
        return {"idle_memory_budget_bytes": self.budget_bytes, "idle_memory_bytes": self.idle_bytes,
                "memory_bytes": self.total_bytes, "evicted": self.evicted}


def idle_memory_budget(config: SessionSettings) -> int:
    """`idle_memory_mb`, or `idle_memory_fraction` of the machine's memory (its cgroup limit if lower)."""
    if config.idle_memory_mb is not None:
        return config.idle_memory_mb << 20
    return int(machine_memory_bytes() * config.idle_memory_fraction)


def measure(sessions: list[Session]) -> dict[str, int]:
    """Each session's memory now: the sum over the live sandboxes it opened. Reads /proc and cgroups only
    (blocking file reads: run it in a thread)."""
    children = children_map()  # one pass over /proc for every process tree measured
    return {s.id: sum(i.memory_bytes(children) for i in list(s.services.interpreters)) for s in sessions}


def to_evict(idle: list[Session], usage: dict[str, int], budget_bytes: int) -> list[Session]:
    """The longest-idle sessions whose closing brings the idle ones within the budget."""
    excess = sum(usage[s.id] for s in idle) - budget_bytes
    chosen = []
    for session in sorted(idle, key=lambda s: s.last_used):
        if excess <= 0:
            break
        chosen.append(session)
        excess -= usage[session.id]
    return chosen
