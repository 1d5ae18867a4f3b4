"""Stateful tool sessions: the store behind `/v1/sessions`, its limits and its reaper.

A session is one environment instance. Calls on one session run one at a time (a lock), each under
the per-call timeout; sessions past the idle TTL are closed by a reaper; `max_sessions` bounds how
many are open (past it: `SessionsFull`, a 503 with Retry-After); idle sessions holding more memory
than their budget are evicted by the same reaper (see `_session_memory`). Every exit path (delete,
verify, expiry, eviction, server stop) goes through `_close`, which calls the environment's `close`
exactly once. After verify the teardown (the environment's `close`, stopping its interpreters) runs in the
background, off the reply's path; the session's sandbox slot stays counted until it is done, and the
server's stop waits for it.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olmorl.rewards.sessions._environment import Environment, Step
from olmorl.rewards.sessions._interpreters import SessionInterpreters
from olmorl.rewards._models import Status, VerifyResult
from olmorl.rewards.engine._registry import InvalidInput, ItemError, load_environments
from olmorl.rewards.sessions._replies import Replies
from olmorl.rewards.sessions._session_memory import MemoryUse, idle_memory_budget, measure, to_evict
from olmorl.rewards.sessions._session_models import EnvInfo, SessionCreated, ToolResult
from olmorl.sandbox import SandboxUnavailable
from olmorl.sandbox._session import InterpreterFailed

if TYPE_CHECKING:
    from olmorl.rewards.engine._engine import RewardEngine
    from olmorl.sandbox._session import Interpreter

log = logging.getLogger("olmorl.rewards")
_FORGOTTEN = 10_000  # closed session ids remembered, so a late call hears why it gets 404


class SessionNotFound(LookupError):
    """Unknown, expired or closed session (HTTP 404); the message says which."""


class SessionsFull(RuntimeError):
    """`max_sessions` (or `max_sandboxed`) reached (HTTP 503 with Retry-After)."""


class SessionFailed(RuntimeError):
    """The environment could not set the session up; nothing was left open. `status_code`: 503 when
    the sandbox is unavailable or did not start (a server-side condition), else 500."""

    def __init__(self, message: str, status_code: int = 500) -> None:
        super().__init__(message)
        self.status_code = status_code


@dataclass
class Session:
    id: str
    env_name: str
    env: Environment
    services: SessionServices
    last_used: float = field(default_factory=time.monotonic)
    calls: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    closed: bool = False


class SessionServices:
    """What an environment may use: the server's verifiers, settings and session sandboxes."""

    def __init__(self, manager: SessionManager, sandboxed: bool) -> None:
        self._manager = manager
        self.settings = manager.settings
        self.sandboxed = sandboxed
        self.interpreters: list[Interpreter] = []  # what it opened, measured against the idle memory budget

    async def verify(self, item: dict[str, Any]) -> VerifyResult:
        """Score one /v1/verify item with any registered verifier (same result, same errors)."""
        return (await self._manager.engine.verify_batch([item]))[0]

    def check_item(self, verifier: str, ground_truth: Any, options: dict[str, Any] | None = None) -> str:
        """Validate a verifier name + ground truth + options at session creation; the canonical name."""
        return self._manager.engine.check_item(verifier, ground_truth, options or {})

    async def open_interpreter(self) -> Interpreter:
        """A started persistent interpreter in this session's own sandbox (sandboxed environments only),
        never used by anyone before (warm from the pool when it has one). Interpreters this session opened
        that are no longer running are released first (their sandbox slots freed)."""
        if not self.sandboxed:
            raise RuntimeError("this environment is not marked sandboxed, so its sessions get no sandbox")
        await self.release_interpreters(only_dead=True)
        interpreter = await self._manager.interpreters.open()
        self.interpreters.append(interpreter)
        return interpreter

    async def release_interpreters(self, only_dead: bool = False) -> None:
        """Stop this session's interpreters (all, or those no longer running) and free their slots."""
        gone = [i for i in self.interpreters if not (only_dead and i.alive)]
        self.interpreters = [i for i in self.interpreters if i not in gone]
        for interpreter in gone:
            await self._manager.interpreters.release(interpreter)


def truncate(text: str, limit: int, keep: str = "head") -> str:
    """Cut to `limit` characters with a marker saying how many were dropped (keep the head or the tail)."""
    if len(text) <= limit:
        return text
    marker = f"\n...[{len(text) - limit} characters truncated]...\n"
    return text[:limit] + marker if keep == "head" else marker + text[-limit:]


class SessionManager:
    def __init__(self, engine: RewardEngine) -> None:
        self.engine = engine
        self.settings = engine.settings
        self.config = engine.settings.sessions
        self.metrics = engine.metrics
        self.envs = load_environments(self.settings.plugins)
        self._sessions: dict[str, Session] = {}
        self._gone: OrderedDict[str, str] = OrderedDict()  # closed id -> why
        self._sandboxed_open = 0  # sessions of sandboxed environments (at most max_sandboxed)
        self._pending = 0  # sessions being set up (they count against the limits)
        self._reaper: asyncio.Task[None] | None = None
        self._teardowns: set[asyncio.Task[None]] = set()  # verified sessions being closed after their reply
        self.memory = MemoryUse(budget_bytes=idle_memory_budget(self.config))
        self.replies = Replies(self.config.idempotent_replies)  # tool/verify/close replies kept for retries
        self.state_dir = Path(self.config.state_dir or Path(tempfile.gettempdir()) / "olmorl-sessions")
        self.interpreters = SessionInterpreters(self.settings, self.state_dir, self.metrics)

    # -- lifecycle -------------------------------------------------------------------------------------
    async def start(self) -> None:
        from olmorl.sandbox._session import sweep_leftovers

        swept = await asyncio.to_thread(sweep_leftovers, self.state_dir)
        if swept:
            log.warning("removed %d session sandboxes left by a server that did not stop cleanly", swept)
        for cls in self.envs.values():
            await cls.on_server_start(self.settings, self.metrics)
        self._reaper = asyncio.ensure_future(self._reap_forever())
        if any(cls.sandboxed for cls in self.envs.values()):
            self.interpreters.fill()

    async def stop(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        await asyncio.gather(*(self._close(s, "server stopped") for s in list(self._sessions.values())))
        await asyncio.gather(*list(self._teardowns))  # verified sessions still being torn down
        await self.interpreters.close()
        for cls in self.envs.values():
            await cls.on_server_stop()

    def readiness(self) -> dict[str, int]:
        """For /readyz: open sessions, the idle memory budget (as of the reaper's last pass) and the warm
        interpreters ready now."""
        return {"open": len(self._sessions), **self.memory.readiness(),
                "warm_interpreters_ready": self.interpreters.stats().ready}

    def describe(self) -> list[EnvInfo]:
        return [cls.info() for cls in self.envs.values()]

    @property
    def open_count(self) -> int:
        return len(self._sessions)

    # -- the API ---------------------------------------------------------------------------------------
    async def create(self, env_name: str, task: Any, options: dict[str, Any]) -> SessionCreated:
        cls = self.envs.get(env_name.strip().lower())
        if cls is None:
            raise InvalidInput(f"unknown environment {env_name!r}; known: {', '.join(sorted(self.envs))} "
                               "(GET /v1/envs)")
        typed_task, typed_options = cls.validate(task, options)
        if len(self._sessions) + self._pending >= self.config.max_sessions:
            raise SessionsFull(f"{self.config.max_sessions} sessions are open (max_sessions); retry later")
        if cls.sandboxed:
            if self._sandboxed_open >= self.config.max_sandboxed:
                raise SessionsFull(f"{self.config.max_sandboxed} sandboxed sessions are open (max_sandboxed); "
                                   "retry later")
            self._sandboxed_open += 1
        self._pending += 1
        started = time.perf_counter()
        env: Environment | None = None
        services = SessionServices(self, cls.sandboxed)
        try:
            env = cls(typed_task, typed_options, services)
            observation = await asyncio.wait_for(env.setup(), self.config.call_timeout_s)
        except BaseException as exc:
            await self._release(env, services)
            if isinstance(exc, InvalidInput):
                raise
            if isinstance(exc, asyncio.TimeoutError):
                raise SessionFailed(f"setting up {cls.name!r} took over {self.config.call_timeout_s:g} s",
                                    503) from None
            if isinstance(exc, (SandboxUnavailable, InterpreterFailed, ItemError)):
                raise SessionFailed(f"{cls.name!r} session: {exc}", 503) from None
            if isinstance(exc, Exception):
                log.exception("setting up a %s session failed", cls.name)
                raise SessionFailed(f"setting up {cls.name!r} failed: {type(exc).__name__}: {exc}") from None
            raise
        finally:
            self._pending -= 1
        session = Session(id=secrets.token_urlsafe(16), env_name=cls.name, env=env, services=services)
        self._sessions[session.id] = session
        self.metrics.session_open_latency.labels(cls.name).observe(time.perf_counter() - started)
        self.metrics.sessions_created.labels(cls.name).inc()
        self.metrics.sessions_open.labels(cls.name).inc()
        return SessionCreated(session_id=session.id, env=cls.name, tools=[t.schema() for t in cls.tools],
                              observation=observation)

    async def call_tool(self, session_id: str, name: str, arguments: Any) -> ToolResult:
        session = self._get(session_id)
        async with session.lock:
            self._check_open(session)
            started = time.perf_counter()
            step = await self._step(session, name, arguments)
            session.last_used = time.monotonic()
            elapsed = time.perf_counter() - started
        tool = name if session.env.tool(name) is not None else "(unknown)"
        self.metrics.tool_calls.labels(session.env_name, tool, step.status).inc()
        self.metrics.tool_latency.labels(session.env_name, tool).observe(elapsed)
        return ToolResult(output=truncate(step.output, self.config.max_output_chars), status=step.status,
                          error=step.error, reward=step.reward, done=step.done,
                          elapsed_ms=round(elapsed * 1000, 3))

    async def verify(self, session_id: str, response: str, messages: list[Any] | None) -> VerifyResult:
        session = self._get(session_id)
        async with session.lock:
            self._check_open(session)
            started = time.perf_counter()
            status: Status
            try:
                if len(response) > self.settings.max_response_chars:
                    raise InvalidInput(f"response has {len(response)} characters; the limit is "
                                       f"{self.settings.max_response_chars} (max_response_chars)")
                score = await asyncio.wait_for(session.env.verify(response, messages), self.config.call_timeout_s)
                status, error, reward, details = "ok", None, float(score.reward), score.details
                self.metrics.count_tamper(session.env_name, details)  # an agent probing its verifier
            except ItemError as exc:
                status, error, reward, details = exc.status, exc.message, 0.0, exc.details
            except asyncio.TimeoutError:
                status, error, reward, details = "timeout", f"no result within {self.config.call_timeout_s:g} s", \
                    0.0, {"reason": "timeout"}
            except Exception as exc:
                log.exception("verify of a %s session failed", session.env_name)
                status, error, reward, details = "error", f"{type(exc).__name__}: {exc}", 0.0, {}
            finally:
                self._close_in_background(session, "verified")
        return VerifyResult(verifier=session.env_name, reward=reward if status == "ok" else None, status=status,
                            error=error, details={"env": session.env_name, "tool_calls": session.calls, **details},
                            elapsed_ms=round((time.perf_counter() - started) * 1000, 3))

    async def delete(self, session_id: str) -> None:
        session = self._get(session_id)
        await self._close(session, "deleted")

    # -- internals -------------------------------------------------------------------------------------
    async def _step(self, session: Session, name: str, arguments: Any) -> Step:
        tool = session.env.tool(name)
        if tool is None:
            known = ", ".join(t.name for t in session.env.tools)
            return Step("", "invalid", f"unknown tool {name!r}; this session's tools: {known}")
        if session.calls >= self.config.max_calls:
            return Step("", "invalid", f"this session made {session.calls} tool calls (max_calls); call verify",
                        done=True)
        session.calls += 1
        try:
            parsed = tool.parse(arguments)
            return await asyncio.wait_for(session.env.step(name, parsed), self.config.call_timeout_s)
        except ItemError as exc:
            return Step("", exc.status, exc.message)
        except asyncio.TimeoutError:
            await session.env.interrupt()
            return Step("", "timeout", f"the call ran past {self.config.call_timeout_s:g} s and was stopped")
        except Exception as exc:
            log.exception("tool %s of a %s session failed", name, session.env_name)
            return Step("", "error", f"{type(exc).__name__}: {exc}")

    def _get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            why = self._gone.get(session_id)
            raise SessionNotFound(f"session {session_id!r} is {why}" if why else
                                  f"no session {session_id!r} on this server (unknown id, or the server restarted)")
        return session

    def _check_open(self, session: Session) -> None:
        if session.closed:  # closed while this call waited for the lock
            raise SessionNotFound(f"session {session.id!r} is {self._gone.get(session.id, 'closed')}")

    async def _close(self, session: Session, why: str) -> None:
        if self._forget(session, why):
            await self._release(session.env, session.services)

    def _close_in_background(self, session: Session, why: str) -> None:
        """`_close`, its teardown in a task (the reply need not wait for it); `stop` waits for the task."""
        if self._forget(session, why):
            task = asyncio.ensure_future(self._release(session.env, session.services))
            self._teardowns.add(task)
            task.add_done_callback(self._teardown_done)

    def _teardown_done(self, task: asyncio.Task[None]) -> None:
        self._teardowns.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("tearing down a verified session failed", exc_info=task.exception())

    def _forget(self, session: Session, why: str) -> bool:
        """Mark the session closed and unreachable (a later call hears `why`); False if it already was."""
        if session.closed:
            return False
        session.closed = True
        self._sessions.pop(session.id, None)
        self._gone[session.id] = f"closed ({why})" if why != "expired" else \
            f"expired (idle over {self.config.idle_ttl_s:g} s, idle_ttl_s)"
        while len(self._gone) > _FORGOTTEN:
            self._gone.popitem(last=False)
        self.metrics.sessions_open.labels(session.env_name).dec()
        if why == "expired":
            self.metrics.sessions_expired.labels(session.env_name).inc()
        return True

    async def _release(self, env: Environment | None, services: SessionServices) -> None:
        try:
            if env is not None:
                await env.close()
        except Exception:
            log.exception("closing a %s session failed", env.name if env is not None else "?")
        try:  # whatever the environment left running is stopped here; never handed to another session
            await services.release_interpreters()
        finally:
            if services.sandboxed:
                self._sandboxed_open -= 1

    async def _reap_forever(self) -> None:
        interval = max(min(self.config.idle_ttl_s / 4, self.config.reap_interval_s), 0.05)
        while True:
            await asyncio.sleep(interval)
            cutoff = time.monotonic() - self.config.idle_ttl_s
            idle = [s for s in self._sessions.values() if s.last_used < cutoff and not s.lock.locked()]
            for session in idle:
                await self._close(session, "expired")
            try:
                await self._enforce_memory_budget()
            except Exception:  # the TTL must go on even if measuring fails
                log.exception("measuring the sessions' memory failed")

    async def _enforce_memory_budget(self) -> None:
        holding = [s for s in self._sessions.values() if s.services.interpreters]
        usage = await asyncio.to_thread(measure, holding) if holding else {}
        idle = [s for s in holding if not s.closed and not s.lock.locked()]
        idle_bytes = sum(usage[s.id] for s in idle)
        budget, evicted = self.memory.budget_bytes, 0
        for session in to_evict(idle, usage, budget):
            if session.closed or session.lock.locked():  # closed, or a call began, while we measured
                continue
            idle_s = time.monotonic() - session.last_used
            why = (f"evicted: idle sessions held {idle_bytes / 2**20:.0f} MiB, over their budget of "
                   f"{budget / 2**20:.0f} MiB (idle_memory_mb), and this one was the longest idle ({idle_s:.1f} s, "
                   f"{usage[session.id] / 2**20:.0f} MiB)")
            log.warning("session %s (%s) %s", session.id[:8], session.env_name, why)
            idle_bytes -= usage[session.id]
            evicted += 1
            self.metrics.sessions_evicted.labels(session.env_name).inc()
            await self._close(session, why)
        self.memory = MemoryUse(budget_bytes=budget, idle_bytes=idle_bytes,
                                total_bytes=sum(usage[s.id] for s in holding if not s.closed),
                                evicted=self.memory.evicted + evicted)
