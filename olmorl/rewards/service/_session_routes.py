"""HTTP routes of the session API: /v1/sessions and /v1/envs (mounted under the same bearer token).

Open, tool, verify and close take an optional `Idempotency-Key` header: a retry with the same key gets the
first call's reply and does not run the call again (`olmorl.rewards.sessions._replies`; a failed open is not
kept: its retry opens again).

The batch routes (`/v1/sessions/batch/open`, `.../tool`, `.../verify`, `.../close`) take many sessions' calls in one request
and run them at once, each item through the same code as its single route: each item's reply carries the status
code the single route would have answered, so one bad item (malformed, an unknown session, a full server) is
that item's error and never fails the batch. An item's `idempotency_key` is the header's equivalent (the same
key in a single call and a batch item is the same call)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, TypeVar

from fastapi import APIRouter, Header, HTTPException, Request
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError

from olmorl.rewards._models import VerifyResult
from olmorl.rewards.engine._registry import InvalidInput
from olmorl.rewards.service._items import item_body, read_items
from olmorl.rewards.sessions._replies import OPENS, InvalidKey
from olmorl.rewards.sessions._session_models import (
    BatchClose,
    BatchOpen,
    BatchReply,
    BatchToolCall,
    BatchVerify,
    CloseBatch,
    EnvInfo,
    ItemReply,
    OpenBatch,
    SessionClosed,
    SessionCreate,
    SessionCreated,
    SessionVerify,
    ToolBatch,
    ToolCall,
    ToolResult,
    VerifyBatch,
)
from olmorl.rewards.sessions._sessions import SessionFailed, SessionManager, SessionNotFound, SessionsFull

T = TypeVar("T")
I = TypeVar("I", bound=BaseModel)
log = logging.getLogger("olmorl.rewards")
BATCH_BODIES: list[type[BaseModel]] = [OpenBatch, ToolBatch, VerifyBatch, CloseBatch]  # published to /openapi.json
_KEY = Header(None, description="Any string unique per call (at most 200 characters); a retry sends it again")
_ERRORS: dict[int | str, dict[str, Any]] = {404: {"description": "Unknown, expired or closed session"},
           422: {"description": "Malformed body, unknown environment, a task/options the environment refuses, or "
                       "an Idempotency-Key over 200 characters"},
           503: {"description": "Session limit reached (Retry-After), or the sandbox is unavailable"}}


async def create_session(manager: SessionManager, env: str, task: Any, options: dict[str, Any],
                         key: str | None = None) -> SessionCreated:
    """Open a session, once per `key` (a retry gets the session the first opened), or raise the HTTPException
    that says why not (422, 503 + Retry-After, 500); a refused open is not kept, so its retry tries again."""
    return await _once(manager, OPENS, key, lambda: _open(manager, env, task, options), keep_failures=False)


async def _open(manager: SessionManager, env: str, task: Any, options: dict[str, Any]) -> SessionCreated:
    try:
        return await manager.create(env, task, options)
    except InvalidInput as exc:
        raise HTTPException(422, str(exc)) from None
    except SessionsFull as exc:
        raise HTTPException(503, str(exc), headers={"Retry-After": str(manager.config.retry_after_s)}) from None
    except SessionFailed as exc:
        raise HTTPException(exc.status_code, str(exc)) from None


async def _once(manager: SessionManager, session_id: str, key: str | None, call: Callable[[], Awaitable[T]],
                keep_failures: bool = True) -> T:
    """`call()` run at most once per (session, key), or the HTTPException that says why not (404, 422)."""
    try:
        return await manager.replies.once(session_id, key, call, keep_failures)
    except SessionNotFound as exc:
        raise HTTPException(404, str(exc)) from None
    except InvalidKey as exc:
        raise HTTPException(422, str(exc)) from None


async def _item(model: type[I], raw: Any, run: Callable[[I], Awaitable[T]]) -> ItemReply[T]:
    """One batch item: validated, run as its single route runs it, its outcome as that route's status code."""
    try:
        item = model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "item"
        return ItemReply(status_code=422, error=f"{where}: {first['msg']}")
    try:
        return ItemReply(status_code=200, result=await run(item))
    except HTTPException as exc:
        retry_after = (exc.headers or {}).get("Retry-After")
        return ItemReply(status_code=exc.status_code, error=str(exc.detail),
                         retry_after_s=float(retry_after) if retry_after else None)
    except Exception as exc:  # a bug met by one item is that item's 500, not the batch's
        log.exception("a %s batch item failed", model.__name__)
        return ItemReply(status_code=500, error=f"{type(exc).__name__}: {exc}")


async def _close(manager: SessionManager, session_id: str, key: str | None) -> SessionClosed:
    await _once(manager, session_id, key, lambda: manager.delete(session_id))
    return SessionClosed(session_id=session_id)


def build_session_routes(manager: SessionManager) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["sessions"], responses=_ERRORS)
    max_items = manager.settings.max_items_per_request

    async def batch(request: Request, model: type[I], run: Callable[[I], Awaitable[Any]]) -> Response:
        items = await read_items(request, max_items)
        replies = await asyncio.gather(*(_item(model, raw, run) for raw in items))
        # encoded once, here: FastAPI would validate the replies again before encoding them
        return Response(BatchReply[Any](results=list(replies)).model_dump_json(), media_type="application/json")

    # The batch routes first: `/sessions/{session_id}/tool` would take `/sessions/batch/tool` for a session id.
    @router.post("/sessions/batch/open", response_model=BatchReply[SessionCreated], openapi_extra=item_body(OpenBatch),
                 summary="Open many sessions in one request")
    async def open_batch(request: Request) -> Response:
        """Body: `OpenBatch`. Items past the server's limits get 503 with `retry_after_s`, the others open."""
        return await batch(request, BatchOpen, lambda c: create_session(manager, c.env, c.task, c.options,
                                                                       c.idempotency_key))

    @router.post("/sessions/batch/tool", response_model=BatchReply[ToolResult], openapi_extra=item_body(ToolBatch),
                 summary="Call one tool on each of many sessions in one request")
    async def tool_batch(request: Request) -> Response:
        """Body: `ToolBatch`. The items run at once; items on one session run one at a time."""
        return await batch(request, BatchToolCall, lambda c: _once(
            manager, c.session_id, c.idempotency_key, lambda: manager.call_tool(c.session_id, c.name, c.arguments)))

    @router.post("/sessions/batch/verify", response_model=BatchReply[VerifyResult],
                 openapi_extra=item_body(VerifyBatch), summary="Score many sessions' answers and end them")
    async def verify_batch(request: Request) -> Response:
        """Body: `VerifyBatch`. Each item ends its session, as the single verify does."""
        return await batch(request, BatchVerify, lambda c: _once(
            manager, c.session_id, c.idempotency_key, lambda: manager.verify(c.session_id, c.response, c.messages)))

    @router.post("/sessions/batch/close", response_model=BatchReply[SessionClosed],
                 openapi_extra=item_body(CloseBatch), summary="Close many sessions in one request")
    async def close_batch(request: Request) -> Response:
        """Body: `CloseBatch`. Each item as DELETE /v1/sessions/{session_id}: 200, or 404 for an unknown or
        already closed session."""
        return await batch(request, BatchClose, lambda c: _close(manager, c.session_id, c.idempotency_key))

    @router.post("/sessions", response_model=SessionCreated, summary="Open a session of an environment")
    async def create(body: SessionCreate, idempotency_key: str | None = _KEY) -> SessionCreated:
        return await create_session(manager, body.env, body.task, body.options, idempotency_key)

    @router.post("/sessions/{session_id}/tool", response_model=ToolResult, summary="Call one of the session's tools")
    async def tool(session_id: str, body: ToolCall, idempotency_key: str | None = _KEY) -> ToolResult:
        """A bad call (unknown tool, bad arguments) is a result with status `invalid`, not an HTTP error."""
        return await _once(manager, session_id, idempotency_key,
                           lambda: manager.call_tool(session_id, body.name, body.arguments))

    @router.post("/sessions/{session_id}/verify", response_model=VerifyResult,
                 summary="Score the final answer and end the session")
    async def verify(session_id: str, body: SessionVerify, idempotency_key: str | None = _KEY) -> VerifyResult:
        return await _once(manager, session_id, idempotency_key,
                           lambda: manager.verify(session_id, body.response, body.messages))

    @router.delete("/sessions/{session_id}", response_model=SessionClosed, summary="Close a session")
    async def delete(session_id: str, idempotency_key: str | None = _KEY) -> SessionClosed:
        return await _close(manager, session_id, idempotency_key)

    @router.get("/envs", response_model=list[EnvInfo], summary="Environments, their tools and task schema")
    async def envs() -> list[EnvInfo]:
        return manager.describe()

    return router
