"""HTTP routes of the session API: /v1/sessions and /v1/envs (mounted under the same bearer token).

Tool, verify and close take an optional `Idempotency-Key` header: a retry with the same key gets the first
call's reply and does not run the call again (`olmorl.rewards.sessions._replies`)."""

from __future__ import annotations

from typing import Any, Awaitable, Callable, TypeVar

from fastapi import APIRouter, Header, HTTPException

from olmorl.rewards._models import VerifyResult
from olmorl.rewards.engine._registry import InvalidInput
from olmorl.rewards.sessions._replies import InvalidKey
from olmorl.rewards.sessions._session_models import (
    EnvInfo,
    SessionClosed,
    SessionCreate,
    SessionCreated,
    SessionVerify,
    ToolCall,
    ToolResult,
)
from olmorl.rewards.sessions._sessions import SessionFailed, SessionManager, SessionNotFound, SessionsFull

T = TypeVar("T")
_KEY = Header(None, description="Any string unique per call (at most 200 characters); a retry sends it again")
_ERRORS: dict[int | str, dict[str, Any]] = {404: {"description": "Unknown, expired or closed session"},
           422: {"description": "Malformed body, unknown environment, a task/options the environment refuses, or "
                       "an Idempotency-Key over 200 characters"},
           503: {"description": "Session limit reached (Retry-After), or the sandbox is unavailable"}}


async def create_session(manager: SessionManager, env: str, task: Any, options: dict[str, Any]) -> SessionCreated:
    """Open a session, or raise the HTTPException that says why not (422, 503 + Retry-After, 500)."""
    try:
        return await manager.create(env, task, options)
    except InvalidInput as exc:
        raise HTTPException(422, str(exc)) from None
    except SessionsFull as exc:
        raise HTTPException(503, str(exc), headers={"Retry-After": str(manager.config.retry_after_s)}) from None
    except SessionFailed as exc:
        raise HTTPException(exc.status_code, str(exc)) from None


def build_session_routes(manager: SessionManager) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["sessions"], responses=_ERRORS)

    async def _once(session_id: str, key: str | None, call: Callable[[], Awaitable[T]]) -> T:
        try:
            return await manager.replies.once(session_id, key, call)
        except SessionNotFound as exc:
            raise HTTPException(404, str(exc)) from None
        except InvalidKey as exc:
            raise HTTPException(422, str(exc)) from None

    @router.post("/sessions", response_model=SessionCreated, summary="Open a session of an environment")
    async def create(body: SessionCreate) -> SessionCreated:
        return await create_session(manager, body.env, body.task, body.options)

    @router.post("/sessions/{session_id}/tool", response_model=ToolResult, summary="Call one of the session's tools")
    async def tool(session_id: str, body: ToolCall, idempotency_key: str | None = _KEY) -> ToolResult:
        """A bad call (unknown tool, bad arguments) is a result with status `invalid`, not an HTTP error."""
        return await _once(session_id, idempotency_key, lambda: manager.call_tool(session_id, body.name,
                                                                                   body.arguments))

    @router.post("/sessions/{session_id}/verify", response_model=VerifyResult,
                 summary="Score the final answer and end the session")
    async def verify(session_id: str, body: SessionVerify, idempotency_key: str | None = _KEY) -> VerifyResult:
        return await _once(session_id, idempotency_key, lambda: manager.verify(session_id, body.response,
                                                                                body.messages))

    @router.delete("/sessions/{session_id}", response_model=SessionClosed, summary="Close a session")
    async def delete(session_id: str, idempotency_key: str | None = _KEY) -> SessionClosed:
        await _once(session_id, idempotency_key, lambda: manager.delete(session_id))
        return SessionClosed(session_id=session_id)

    @router.get("/envs", response_model=list[EnvInfo], summary="Environments, their tools and task schema")
    async def envs() -> list[EnvInfo]:
        return manager.describe()

    return router
