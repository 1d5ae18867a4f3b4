"""Wire models of the session API (`/v1/sessions`, `/v1/envs`). Pydantic only, so clients import them
without the server extra."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from olmorl.rewards._models import ChatMessage

ToolStatus = Literal["ok", "invalid", "timeout", "error"]
"""`ok`: the tool ran (the program it ran may still have raised: that is its output). `invalid`: the
call itself is wrong (unknown tool, bad arguments, no attempts left). `timeout`: the call ran past the
per-call limit. `error`: the environment or its sandbox failed (a limit killed the interpreter ...)."""


class SessionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"env": "python", "task": {"verifier": "math", "ground_truth": "42"}, "options": {}}]})

    env: str = Field(description="Environment name (see GET /v1/envs).")
    task: JsonValue = Field(default=None, description="The episode's task; each environment documents its shape.")
    options: dict[str, JsonValue] = Field(default_factory=dict, description="Environment-specific options.")


class SessionCreated(BaseModel):
    session_id: str
    env: str
    tools: list[dict[str, Any]] = Field(description="OpenAI function-tool JSON schemas.")
    observation: str | None = Field(default=None, description="What the environment says first, if anything.")


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"name": "python", "arguments": {"code": "x = 6 * 7\nprint(x)"}}]})

    name: str = Field(description="Tool name, one of the session's `tools`.")
    arguments: dict[str, JsonValue] | str = Field(
        default_factory=dict, description="The tool's arguments: an object, or that object as JSON text.")


class ToolResult(BaseModel):
    output: str = Field(description="What the model sees as the tool message (truncated to the server limit).")
    status: ToolStatus
    error: str | None = Field(default=None, description="Why, when status is not ok.")
    reward: float | None = Field(default=None, description="An intermediate reward, when the environment gives one.")
    done: bool = Field(default=False, description="The environment takes no more tool calls; call /verify.")
    elapsed_ms: float = 0.0


class SessionVerify(BaseModel):
    model_config = ConfigDict(extra="forbid")

    response: str = Field(description="The model's final answer.")
    messages: list[ChatMessage] | None = Field(default=None, description="The whole transcript, if wanted.")


class SessionClosed(BaseModel):
    session_id: str
    closed: bool = True


class EnvInfo(BaseModel):
    """What GET /v1/envs says of one environment."""

    name: str
    description: str
    tools: list[dict[str, Any]]
    task: dict[str, Any] = Field(description="JSON schema of the accepted task.")
    options: dict[str, Any] = Field(description="JSON schema of the accepted options.")
    sandboxed: bool = Field(description="Each session runs untrusted code in its own sandbox.")
