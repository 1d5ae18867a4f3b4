"""The base class of session environments: a small class with tools, `step` and `verify`.

One instance per session. The server validates the task and options (typed like a verifier's
ground truth and options), calls `setup` once, `step` for each tool call (one at a time per
session, under the per-call timeout), `verify` for the final answer, and `close` always, whatever
happened. Register with the same `@register` decorator as verifiers; plugins register through the
same `plugins` setting.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from olmorl.rewards.engine._registry import InvalidInput, NoOptions, Score, _first_error
from olmorl.rewards.sessions._session_models import EnvInfo, ToolStatus

if TYPE_CHECKING:
    from olmorl.rewards.sessions._sessions import SessionServices


@dataclass(frozen=True)
class Tool:
    """One tool: its name, what it does (the model reads this) and a pydantic model of its arguments."""

    name: str
    description: str
    arguments: type[BaseModel]

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool JSON schema."""
        parameters = self.arguments.model_json_schema()
        parameters.pop("title", None)
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                  "parameters": parameters}}

    def parse(self, raw: dict[str, Any] | str) -> BaseModel:
        """Validate arguments (an object or its JSON text); raises InvalidInput naming the problem."""
        if isinstance(raw, str):
            try:
                raw = json.loads(raw) if raw.strip() else {}
            except ValueError as exc:
                raise InvalidInput(f"arguments of {self.name!r} are not valid JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise InvalidInput(f"arguments of {self.name!r} must be a JSON object")
        try:
            return self.arguments.model_validate(raw)
        except ValidationError as exc:
            raise InvalidInput(f"arguments of {self.name!r}: {_first_error(exc)}") from None


@dataclass
class Step:
    """What `step` returns. Raise InvalidInput for a malformed call (status `invalid`)."""

    output: str
    status: ToolStatus = "ok"
    error: str | None = None
    reward: float | None = None
    done: bool = False


class Environment:
    kind: ClassVar[str] = "environment"
    name: ClassVar[str]
    description: ClassVar[str] = ""
    task_type: ClassVar[Any] = Any  # any type pydantic can validate
    options_model: ClassVar[type[BaseModel]] = NoOptions
    tools: ClassVar[tuple[Tool, ...]] = ()
    sandboxed: ClassVar[bool] = False  # sessions run untrusted code (each gets its own sandbox)

    def __init__(self, task: Any, options: Any, services: SessionServices) -> None:
        self.task = task
        self.options = options
        self.services = services

    async def setup(self) -> str | None:
        """Prepare the session (start an interpreter ...); return the first observation, if any."""
        return None

    async def step(self, tool: str, arguments: Any) -> Step:
        """Run one tool call; `arguments` is the tool's validated arguments model."""
        raise NotImplementedError(f"{type(self).__name__} defines no step()")

    async def verify(self, response: str, messages: list[Any] | None) -> Score:
        """Score the final answer; `details["reward_components"]` says how the reward was made."""
        raise NotImplementedError(f"{type(self).__name__} defines no verify()")

    async def interrupt(self) -> None:
        """A step ran past the per-call timeout and was cancelled: stop whatever it left running."""

    async def close(self) -> None:
        """Release everything the session holds. Called exactly once, whatever happened."""

    @classmethod
    async def on_server_start(cls, settings: Any, metrics: Any) -> None:
        """Called once when the server starts, before any session: remove what a crashed server left, start
        what is kept warm (`metrics`: the server's RewardMetrics)."""

    @classmethod
    async def on_server_stop(cls) -> None:
        """Called once when the server stops, after every session is closed: stop what is kept warm."""

    # -- validation and description ------------------------------------------------------------------
    @classmethod
    def tool(cls, name: str) -> Tool | None:
        return next((t for t in cls.tools if t.name == name), None)

    @classmethod
    def validate(cls, task: Any, options: dict[str, Any]) -> tuple[Any, BaseModel]:
        """The typed task and options; raises InvalidInput naming the problem."""
        adapter = cls.__dict__.get("_task_adapter")
        if adapter is None:
            adapter = cls._task_adapter = TypeAdapter(cls.task_type)  # type: ignore[attr-defined]
        try:
            typed = adapter.validate_python(task)
        except ValidationError as exc:
            raise InvalidInput(f"task: {_first_error(exc)}") from None
        try:
            opts = cls.options_model.model_validate(options or {})
        except ValidationError as exc:
            raise InvalidInput(f"options: {_first_error(exc)}") from None
        return typed, opts

    @classmethod
    def info(cls) -> EnvInfo:
        adapter = cls.__dict__.get("_task_adapter") or TypeAdapter(cls.task_type)
        return EnvInfo(name=cls.name, description=cls.description, tools=[t.schema() for t in cls.tools],
                       task=adapter.json_schema(), options=cls.options_model.model_json_schema(),
                       sandboxed=cls.sandboxed)
