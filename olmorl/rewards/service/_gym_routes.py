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

Gym v0.7's Environment Servers (`POST /run` per episode) drive resources servers with typed bodies; these
routes accept them too, told apart by their fields:
- seed: `{"episode_id": {"rollout_id", "attempt"}, "task_id": {"taskset", "task_id"}, "task_data": <the row>}`,
  answered `{"resources_session_id"}` only (Gym validates that answer with no extra fields allowed);
- verify: `{"episode_id", "task_id", "verification_input": {"responses_create_params", "response"}}`, answered
  with `verification_input`'s fields plus `reward` and the rest, as above;
- close: `{"resources_session_id", "episode_id"}` (or the session id alone), answered `{"resources_session_id"}`.
The episode named at seed is kept with the session; a verify or close that names another episode is a 409.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from olmorl.rewards.service._session_routes import create_session
from olmorl.rewards.sessions._sessions import SessionManager, SessionNotFound

COOKIE = "olmorl_session"
_EPISODES_KEPT = 100_000  # episode of each seeded session, for the checks at verify and close (oldest dropped)


class EpisodeId(BaseModel):
    """One attempt of one rollout (Gym v0.7)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    rollout_id: str = Field(min_length=1)
    attempt: int = Field(default=0, ge=0)


class TaskId(BaseModel):
    model_config = ConfigDict(extra="allow")
    taskset: str = Field(min_length=1)
    task_id: str = Field(min_length=1)


class EpisodeSeed(BaseModel):
    """Gym v0.7's resources seed body: the row travels in `task_data`."""

    model_config = ConfigDict(extra="forbid")
    episode_id: EpisodeId
    task_id: TaskId
    task_data: dict[str, JsonValue]


class EpisodeVerify(BaseModel):
    model_config = ConfigDict(extra="forbid")
    episode_id: EpisodeId
    task_id: TaskId | None = None
    verification_input: dict[str, JsonValue]


class EpisodeClose(BaseModel):
    model_config = ConfigDict(extra="forbid")
    resources_session_id: str = Field(min_length=1)
    episode_id: EpisodeId | None = None  # some Gym revisions send the session id alone


def _parse(model: type[BaseModel], body: dict[str, Any], what: str) -> Any:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise HTTPException(422, f"{what} (NeMo Gym v0.7 body): {where}: {first['msg']}") from None


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
    episodes: OrderedDict[str, EpisodeId] = OrderedDict()  # session id -> the episode that seeded it (v0.7)

    def check_episode(session_id: str | None, episode: EpisodeId) -> None:
        seeded = episodes.get(session_id) if session_id is not None else None
        if seeded is not None and (seeded.rollout_id, seeded.attempt) != (episode.rollout_id, episode.attempt):
            raise HTTPException(409, f"this session was seeded for episode {seeded.rollout_id!r} attempt "
                                     f"{seeded.attempt}, not {episode.rollout_id!r} attempt {episode.attempt}")

    @router.post("/seed_session", summary="NeMo Gym: open a session for a dataset row (`env`, `task`, `options`)")
    async def seed_session(request: Request, response: Response) -> dict[str, Any]:
        body = await _json_object(request)
        seed = _parse(EpisodeSeed, body, "seed_session") if "task_data" in body or "episode_id" in body else None
        row: dict[str, Any] = seed.task_data if seed is not None else body
        if not isinstance(row.get("env"), str):
            raise HTTPException(422, f"the row{' (task_data)' if seed else ''} needs an `env` field naming an olmorl "
                                     "environment (GET /v1/envs), plus its `task`")
        options = row.get("options") or {}
        created = await create_session(manager, row["env"], row.get("task"), options if isinstance(options, dict) else {})
        response.set_cookie(COOKIE, created.session_id, httponly=True, samesite="lax")
        if seed is None:
            return {"session_id": created.session_id, "observation": created.observation}
        episodes[created.session_id] = seed.episode_id
        while len(episodes) > _EPISODES_KEPT:
            episodes.popitem(last=False)
        return {"resources_session_id": created.session_id}

    @router.post("/verify", summary="NeMo Gym: score the rollout's final answer and end the session")
    async def verify(request: Request) -> dict[str, Any]:
        body = await _json_object(request)
        session_id = request.cookies.get(COOKIE)
        if "verification_input" in body or "episode_id" in body:  # v0.7: the echo is the verification input
            episode = _parse(EpisodeVerify, body, "verify")
            check_episode(session_id, episode.episode_id)
            episodes.pop(session_id or "", None)
            body = episode.verification_input
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

    @router.post("/close_session", summary="NeMo Gym: close the session (the cookie's, or v0.7's "
                                           "`resources_session_id`); idempotent")
    async def close_session(request: Request) -> dict[str, Any]:
        body = await _json_object(request) if await request.body() else {}
        v07 = "resources_session_id" in body or "episode_id" in body
        closing = _parse(EpisodeClose, body, "close_session") if v07 else None
        session_id = closing.resources_session_id if closing is not None else request.cookies.get(COOKIE)
        if closing is not None:
            if closing.episode_id is not None:
                check_episode(session_id, closing.episode_id)
            episodes.pop(closing.resources_session_id, None)
        if session_id is not None:
            try:
                await manager.delete(session_id)
            except SessionNotFound:
                pass
        if closing is not None:
            return {"resources_session_id": session_id}
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
