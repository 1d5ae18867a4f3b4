"""Wire models of the session API (`/v1/sessions`, `/v1/envs`). Pydantic only, so clients import them
without the server extra."""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from olmorl.rewards._models import ChatMessage

R = TypeVar("R")
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


# -- the batch routes (/v1/sessions/batch/...): many sessions' calls in one request ------------------------------
class BatchToolCall(ToolCall):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"session_id": "3Jx...", "name": "python", "arguments": {"code": "print(6 * 7)"}, "idempotency_key": "a1"}]})

    session_id: str
    idempotency_key: str | None = Field(default=None, description="As the single route's Idempotency-Key header: "
                                        "a retried item with the same key gets the first reply, the tool runs once.")


class BatchVerify(SessionVerify):
    session_id: str
    idempotency_key: str | None = Field(default=None, description="As the single route's Idempotency-Key header.")


class BatchOpen(SessionCreate):
    idempotency_key: str | None = Field(default=None, description="As the single route's Idempotency-Key header: "
                                        "a retried item with the same key gets the session the first opened.")


class BatchClose(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_id: str
    idempotency_key: str | None = Field(default=None, description="As the single route's Idempotency-Key header.")


class OpenBatch(BaseModel):
    """Each item is opened as POST /v1/sessions would; a malformed item is that item's 422."""

    items: list[BatchOpen]


class CloseBatch(BaseModel):
    """Each item's session is closed as DELETE /v1/sessions/{session_id} would (404: unknown or already closed)."""

    items: list[BatchClose]


class ToolBatch(BaseModel):
    """Each item runs as POST /v1/sessions/{session_id}/tool would, all at once (one session's items one at a time)."""

    items: list[BatchToolCall]


class VerifyBatch(BaseModel):
    """Each item is scored (and its session ended) as POST /v1/sessions/{session_id}/verify would, all at once."""

    items: list[BatchVerify]


class ItemReply(BaseModel, Generic[R]):
    """One item's outcome: `status_code` is what the single route would have answered (200 with `result`, else
    `error`); a 503's `retry_after_s` says when to send that item again."""

    status_code: int
    result: R | None = None
    error: str | None = None
    retry_after_s: float | None = None


class BatchReply(BaseModel, Generic[R]):
    results: list[ItemReply[R]] = Field(description="One per item, in order.")
