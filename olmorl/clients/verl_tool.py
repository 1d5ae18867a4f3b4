"""A verl tool backed by an olmorl session: verl's `BaseTool` contract (create / execute / calc_reward /
release) over the session API. Needs verl installed (this module imports it).

verl tool config (`actor_rollout_ref.rollout.multi_turn.tool_config_path`):

    tools:
      - class_name: olmorl.clients.verl_tool.OlmorlSessionTool
        config: {type: native, env: python, base_url: "http://127.0.0.1:8000"}
        # tool_schema may be omitted: it is read from the server (GET /v1/envs)

A row passes the session's task through `extra_info.tools_kwargs.<tool>.create_kwargs`:
`{"task": {"verifier": "math", "ground_truth": "42"}, "options": {}}`.

One session per trajectory, shared by every tool of the same environment and server: an environment
with several tools (`swe`: bash, read_file, write_file, ...) is listed once per tool in the config
(`tool: bash`, `tool: write_file`, ...), and all of them act on the trajectory's one session.
verl's tool agent loop (0.9) creates and releases a tool instance around
every call but passes the trajectory (`agent_data.request_id`); the session is keyed by that, so the
interpreter's state survives between calls. Where a caller keeps one instance per trajectory (create
once, execute many, calc_reward, release), the session is keyed by the instance and closed at release.
Sessions keyed by a trajectory end at `calc_reward(..., response=...)` (which verifies the final
answer) or at the server's idle TTL. A tool call's `status` goes to the metrics dict; a call the
server could not run comes back as text the model sees, never an exception in the loop.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from olmorl.clients._exceptions import OlmorlError
from olmorl.clients._sessions import AsyncSession, AsyncSessionClient, SessionClient, SessionClientArgs
from olmorl.rewards._not_ok import NotOkLog

__all__ = ["OlmorlSessionTool"]

_NOT_OK = NotOkLog(logging.getLogger(__name__), "olmorl.clients.verl_tool.calc_reward", every_s=30.0)


class _Trajectories:
    """The open sessions of one environment on one server, shared by that environment's tool instances."""

    def __init__(self) -> None:
        self.sessions: dict[str, AsyncSession] = {}  # trajectory (or instance) id -> its session
        self.last_reward: dict[str, float] = {}
        self.opening: dict[str, asyncio.Lock] = {}

    def forget(self, key: str) -> AsyncSession | None:
        self.last_reward.pop(key, None)
        self.opening.pop(key, None)
        return self.sessions.pop(key, None)


_SHARED: dict[tuple[str, str, str], _Trajectories] = {}


class OlmorlSessionTool(BaseTool):
    """config: `env` (olmorl environment), `tool` (default: the environment's first tool), `base_url`,
    `api_key`, `timeout` (seconds per request)."""

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None = None) -> None:
        self.env = str(config["env"])
        self._client_args: SessionClientArgs = {"base_url": config.get("base_url"), "api_key": config.get("api_key"),
                                                 "timeout": float(config.get("timeout", 120.0))}
        if tool_schema is None:
            tool_schema = OpenAIFunctionToolSchema.model_validate(self._server_schema(config.get("tool")))
        super().__init__(config, tool_schema)
        self._client: AsyncSessionClient | None = None
        self._create_kwargs: dict[str, dict[str, Any]] = {}  # instance id -> what create() got
        where = (self.env, repr(self._client_args["base_url"]), str(self._client_args["api_key"]))
        self._shared = _SHARED.setdefault(where, _Trajectories())

    def _server_schema(self, tool: str | None) -> dict[str, Any]:
        with SessionClient(**self._client_args) as client:
            envs = {info.name: info for info in client.envs()}
        if self.env not in envs:
            raise ValueError(f"the olmorl server has no environment {self.env!r}; it has {sorted(envs)}")
        tools = envs[self.env].tools
        chosen = [t for t in tools if tool is None or t["function"]["name"] == tool]
        if not chosen:
            raise ValueError(f"environment {self.env!r} has no tool {tool!r}")
        return chosen[0]

    @property
    def client(self) -> AsyncSessionClient:
        if self._client is None:
            self._client = AsyncSessionClient(**self._client_args)
        return self._client

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        instance_id = instance_id or str(uuid4())
        self._create_kwargs[instance_id] = dict(kwargs.get("create_kwargs", kwargs))
        return instance_id, ToolResponse()

    def _key(self, instance_id: str, kwargs: dict[str, Any]) -> str:
        agent_data = kwargs.get("agent_data")
        request_id = getattr(agent_data, "request_id", None)
        return f"trajectory:{request_id}" if request_id else instance_id

    async def _session(self, key: str, instance_id: str) -> AsyncSession:
        shared = self._shared
        async with shared.opening.setdefault(key, asyncio.Lock()):
            session = shared.sessions.get(key)
            if session is None or session.closed:
                spec = self._create_kwargs.get(instance_id, {})
                session = await self.client.open(self.env, spec.get("task"), spec.get("options"))
                shared.sessions[key] = session
            return session

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[ToolResponse, float, dict]:
        key = self._key(instance_id, kwargs)
        try:
            session = await self._session(key, instance_id)
            result = await session.call(self.name, parameters)
        except OlmorlError as exc:
            return ToolResponse(text=f"tool error: {exc}"), 0.0, {"status": "error"}
        text = result.output if result.status == "ok" else "\n".join(filter(None, [result.output, result.error]))
        reward = result.reward or 0.0
        self._shared.last_reward[key] = reward
        return ToolResponse(text=text), reward, {"status": result.status, "done": result.done,
                                                 "elapsed_ms": result.elapsed_ms}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """With `response=` (the final answer): verify it, which ends the session; else the last tool reward."""
        key = self._key(instance_id, kwargs)
        if "response" not in kwargs:
            return self._shared.last_reward.get(key, 0.0)
        session = await self._session(key, instance_id)
        self._shared.forget(key)
        result = await session.verify(str(kwargs["response"]))
        # verl needs a float: an answer that could not be scored is 0.0 here, and a counted warning says so.
        _NOT_OK.record([result], "0.0")
        return result.reward if result.status == "ok" and result.reward is not None else 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._create_kwargs.pop(instance_id, None)
        key = self._key(instance_id, kwargs)
        if key == instance_id:  # per-instance session: the trajectory is over
            session = self._shared.forget(key)
            if session is not None:
                await session.close()
