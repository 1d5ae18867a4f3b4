"""NeMo Gym resources-server routes over olmorl sessions, so a Gym agent (e.g. its `simple_agent`) can
run olmorl environments: `POST /seed_session`, one `POST /{tool}` per tool, `POST /verify`,
`POST /close_session`.

Gym's contract (nemo_gym/base_resources_server.py, responses_api_agents/simple_agent): the agent seeds
with the dataset row as the body and keeps the cookies the server sets; it posts each function call's
arguments to `/{name}` with those cookies and hands the raw reply text to the model; it posts the row
plus `response` (an OpenAI Responses object) to `/verify` and reads `reward`. Here the row names the
olmorl environment in `env`, with `task` and optional `options`; the session id travels in a cookie.
`/verify` echoes the body with `reward`, `reward_components`, and, when olmorl could not score the
answer (status not ok, session expired), `mask_sample: true` with `failure_kind`/`failure_reason`,
Gym's way to say "not a measurement", never a silent 0.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import JSONResponse

from olmorl.rewards.service._session_routes import create_session
from olmorl.rewards.sessions._sessions import SessionManager, SessionNotFound

COOKIE = "olmorl_session"


def final_text(response: Any) -> str:
    """The text of the last assistant message of an OpenAI Responses object (`output_text` parts)."""
    items = response.get("output") if isinstance(response, dict) else None
    for item in reversed(items if isinstance(items, list) else []):
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role", "assistant") == "assistant":
            content = item.get("content")
            if isinstance(content, str):
                return content
            parts = [p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "output_text"]
            return "".join(parts)
    return ""


async def _json_object(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError as exc:
        raise HTTPException(422, f"body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise HTTPException(422, "body must be a JSON object")
    return body


def build_gym_routes(manager: SessionManager) -> APIRouter:
    router = APIRouter(tags=["nemo-gym"])

    @router.post("/seed_session", summary="NeMo Gym: open a session for a dataset row (`env`, `task`, `options`)")
    async def seed_session(request: Request, response: Response) -> dict[str, Any]:
        row = await _json_object(request)
        if not isinstance(row.get("env"), str):
            raise HTTPException(422, "the row needs an `env` field naming an olmorl environment (GET /v1/envs), "
                                     "plus its `task`")
        options = row.get("options") or {}
        created = await create_session(manager, row["env"], row.get("task"), options if isinstance(options, dict) else {})
        response.set_cookie(COOKIE, created.session_id, httponly=True, samesite="lax")
        return {"session_id": created.session_id, "observation": created.observation}

    @router.post("/verify", summary="NeMo Gym: score the rollout's final answer and end the session")
    async def verify(request: Request) -> dict[str, Any]:
        body = await _json_object(request)
        session_id = request.cookies.get(COOKIE)
        try:
            if session_id is None:
                raise SessionNotFound("no olmorl session cookie: call /seed_session first and keep its cookies")
            result = await manager.verify(session_id, final_text(body.get("response")), None)
        except SessionNotFound as exc:
            return {**body, "reward": 0.0, "reward_components": {}, "mask_sample": True,
                    "failure_kind": "olmorl:session_lost", "failure_reason": str(exc)}
        scored = {"reward": result.reward or 0.0,
                  "reward_components": result.details.get("reward_components", {})}
        if result.status != "ok":
            scored.update(mask_sample=True, failure_kind=f"olmorl:{result.status}", failure_reason=result.error)
        return {**body, **scored}

    @router.post("/close_session", summary="NeMo Gym: close the cookie's session (idempotent)")
    async def close_session(request: Request) -> dict[str, Any]:
        session_id = request.cookies.get(COOKIE)
        if session_id is not None:
            try:
                await manager.delete(session_id)
            except SessionNotFound:
                pass
        return {"session_id": session_id, "closed": True}

    @router.post("/{tool}", summary="NeMo Gym: call a tool of the cookie's session (body: the arguments)")
    async def call_tool(tool: str, request: Request) -> JSONResponse:
        """The reply is the ToolResult (output, status, error, reward, done); Gym hands its text to the model."""
        arguments = await _json_object(request) if await request.body() else {}  # a bad body is a 422 first
        session_id = request.cookies.get(COOKIE)
        if session_id is None:
            return JSONResponse({"detail": "no olmorl session cookie: call /seed_session first"}, status_code=404)
        try:
            result = await manager.call_tool(session_id, tool, arguments)
        except SessionNotFound as exc:
            return JSONResponse({"detail": str(exc)}, status_code=404)
        return JSONResponse(result.model_dump())

    return router
