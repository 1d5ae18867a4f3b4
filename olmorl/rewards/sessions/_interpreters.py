"""Where sessions get their sandboxed interpreters: started on demand, or taken warm from a pool.

Every live interpreter holds a sandbox slot (its uid and cgroup) of its own: `max_sandboxed` slots for the
sessions' interpreters plus `warm_interpreters` for the pool's, so a warm one never shares a uid with a
session's. A pooled interpreter is started fresh, handed to one session, and stopped when that session is
done with it (closed, restarted, or the session ends): it never goes back to the pool, so nothing one
session left in its namespace, /tmp, environment or processes can reach another.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olmorl.rewards.sessions._warm_pool import PoolStats, WarmPool
from olmorl.sandbox._session import Interpreter, InterpreterFailed, InterpreterLimits

if TYPE_CHECKING:
    from olmorl.rewards._metrics import RewardMetrics

log = logging.getLogger("olmorl.rewards")


class SessionInterpreters:
    def __init__(self, settings: Any, state_dir: Path, metrics: RewardMetrics) -> None:
        self.settings = settings
        self.config = settings.sessions
        self.state_dir = state_dir
        self.limits = InterpreterLimits(memory_mb=self.config.memory_mb, cpu_s=self.config.cpu_s)
        self._free_slots = list(range(self.config.max_sandboxed + self.config.warm_interpreters))
        self._slot_of: dict[Interpreter, int] = {}  # live interpreters and the slot each holds
        self._backend: Any = None
        self._metrics = metrics
        self.pool: WarmPool[InterpreterLimits, Interpreter] = WarmPool(
            self._start, self.release, size=self.config.warm_interpreters, healthy=lambda i: i.alive,
            max_starting=self.config.warm_max_starting, name="warm python interpreters", on_take=self._count)

    def fill(self) -> None:
        """Begin starting the warm interpreters (at server start; a no-op when `warm_interpreters` is 0)."""
        self.pool.fill(self.limits)

    async def open(self) -> Interpreter:
        """A started interpreter, never used before: warm when the pool has one."""
        if self.pool.size == 0:
            return await self._start(self.limits)
        return await self.pool.take(self.limits)

    async def release(self, interpreter: Interpreter) -> None:
        """Stop the interpreter (if it still runs) and free its slot. Idempotent."""
        await interpreter.close()
        slot = self._slot_of.pop(interpreter, None)
        if slot is not None:
            self._free_slots.append(slot)

    async def close(self) -> None:
        await self.pool.close()

    def stats(self) -> PoolStats:
        return self.pool.stats(self.limits)

    # -- internals -------------------------------------------------------------------------------------
    async def _start(self, limits: InterpreterLimits) -> Interpreter:
        if not self._free_slots:  # the session and pool limits keep this from happening; say so if it does
            raise InterpreterFailed(f"no sandbox slot is free ({self.config.max_sandboxed} max_sandboxed + "
                                    f"{self.config.warm_interpreters} warm_interpreters are in use)")
        if self._backend is None:
            self._backend = _session_backend(self.settings)
        slot = self._free_slots.pop()
        try:
            interpreter = Interpreter(self._backend, slot, limits, self.state_dir)
        except BaseException:
            self._free_slots.append(slot)
            raise
        self._slot_of[interpreter] = slot
        try:
            await interpreter.start()
        except BaseException:  # cancelled (setup timeout, client gone, server stop) or failed: nothing outlives it
            await asyncio.shield(self.release(interpreter))
            raise
        return interpreter

    def _count(self, _limits: InterpreterLimits, hit: bool) -> None:
        self._metrics.session_pool_takes.labels("python", "hit" if hit else "miss").inc()


def _session_backend(settings: Any) -> Any:
    """The code sandbox's backend, sized for one session (memory, processes) instead of one test."""
    from olmorl.sandbox._backends import SandboxLimits
    from olmorl.sandbox._pool import _pick_backend

    sandbox, cfg = settings.sandbox, settings.sessions
    limits = SandboxLimits(test_timeout_s=cfg.call_timeout_s, memory_mb=cfg.memory_mb,
                           max_processes=cfg.max_processes, scratch_mb=sandbox.scratch_mb)
    return _pick_backend(sandbox.backend, sandbox.allow_insecure, sandbox.python, limits)
