"""The trainer's sessions: `olmorl.clients.AsyncSessionClient`, with its failures turned into `RolloutError`, and
the opens, tool calls, verifies and closes of rollouts that are ready together sent as one batched request
each (`_session_batching`).

Failures are never rewards: a request the server refuses (a 4xx other than auth / a lost session) raises
`RolloutError(status="invalid")`; an unreachable or failing server (after the client's retries; a full
server's 503 is waited out by the client), a lost session or a failed auth raises `RolloutError("error")`.
The loop drops the group either way.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Literal

from olmorl.clients import AsyncSession, AsyncSessionClient, OlmorlError, RewardServerError, VerifyResult
from olmorl.clients import SessionClosed, SessionNotFound, ToolResult
from olmorl.trainer._session_batching import Coalescer


class RolloutError(RuntimeError):
    """The session or its server failed (not the model's fault): the rollout's group is dropped, not scored 0."""

    def __init__(self, message: str, status: Literal["invalid", "error"] = "error") -> None:
        super().__init__(message)
        self.status = status  # invalid: the row/env refused it | error: infrastructure


@contextlib.contextmanager
def _as_rollout_error(what: str):
    try:
        yield
    except SessionNotFound as exc:
        raise RolloutError(f"{what}: {exc}") from exc
    except RewardServerError as exc:
        refused = 400 <= exc.status_code < 500 and exc.status_code not in (401, 403)
        raise RolloutError(f"{what}: {exc}", "invalid" if refused else "error") from exc
    except (OlmorlError, OSError) as exc:
        raise RolloutError(f"{what}: {type(exc).__name__}: {exc}") from exc


class SessionCalls:
    """Sessions by id over one or more reward servers (each session stays on the server that opened it)."""

    def __init__(self, urls: list[str], *, api_key: str | None = None, timeout_s: float = 60.0,
                 batch_window_s: float = 0.002) -> None:
        self._client = AsyncSessionClient(urls, api_key=api_key, timeout=timeout_s, max_connections=512)
        self._open: dict[str, AsyncSession] = {}
        # session opens in flight, and closes of sessions whose rollout was cancelled mid-request: a shutdown lets
        # them finish, so no session outlives the run on the server
        self.cleanup: set[asyncio.Future] = set()
        client, track = self._client, self._later
        self._opens: Coalescer[dict[str, Any], AsyncSession] = Coalescer(client.open_many, batch_window_s, track)
        self._tools: Coalescer[tuple[AsyncSession, str, Any], ToolResult] = Coalescer(
            client.call_many, batch_window_s, track)
        self._verifies: Coalescer[tuple[AsyncSession, str, list[dict]], VerifyResult] = Coalescer(
            client.verify_many, batch_window_s, track)
        # the sessions of rollouts that ended without a verify (an error, a cancel), closed together
        self._closes: Coalescer[AsyncSession, SessionClosed] = Coalescer(client.close_many, batch_window_s, track)

    @property
    def requests(self) -> dict[str, int]:
        """Batched requests sent so far, by kind."""
        return {"open": self._opens.requests, "tool": self._tools.requests, "verify": self._verifies.requests,
                "close": self._closes.requests}

    async def create(self, env: str, task: Any, options: dict | None = None) -> AsyncSession:
        opening = self._opens.submit({"env": env, "task": task, "options": options or {}})
        try:
            with _as_rollout_error(f"opening a {env!r} session"):
                session = await asyncio.shield(opening)
        except asyncio.CancelledError:  # the server may open it anyway: close it once it answers
            self._later(self._close_when_open(opening))
            raise
        self._open[session.id] = session
        return session

    async def tool(self, session_id: str, name: str, arguments: dict):
        with _as_rollout_error(f"tool {name!r}"):
            return await self._tools.submit((self._open[session_id], name, arguments))

    async def verify(self, session_id: str, response: str, messages: list[dict]) -> VerifyResult:
        session = self._open.pop(session_id)  # /verify ends it (the server's idle TTL, if the call fails)
        try:
            with _as_rollout_error("verify"):
                return await self._verifies.submit((session, response, messages))
        except asyncio.CancelledError:  # the server may not have got to it: end it (a 404 if it did)
            self._later(self._close_quietly(session))
            raise

    async def close(self, session_id: str) -> None:
        session = self._open.pop(session_id, None)
        if session is not None:
            await self._close_quietly(session)

    def _later(self, request) -> asyncio.Future:
        task = asyncio.ensure_future(request)
        self.cleanup.add(task)
        task.add_done_callback(self.cleanup.discard)
        return task

    async def aclose(self) -> None:
        if self.cleanup:  # the closes of cancelled rollouts' sessions go out before the client does
            await asyncio.wait(set(self.cleanup), timeout=15)
        await self._client.aclose()

    async def _close_quietly(self, session: AsyncSession) -> None:
        """Close it with the other closes ready at once; a failure is ignored (the server's idle TTL ends it)."""
        with contextlib.suppress(OlmorlError, OSError):
            await self._closes.submit(session)

    async def _close_when_open(self, opening: asyncio.Future) -> None:
        try:
            session = await opening
        except (OlmorlError, OSError, asyncio.CancelledError):
            return
        await self._close_quietly(session)
