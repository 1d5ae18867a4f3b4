"""Wire models of the reward API v1. Pydantic only, so clients import them without the server extra."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

Status = Literal["ok", "invalid", "timeout", "error"]
"""`ok`: scored. `invalid`: the item itself is wrong (unknown verifier, malformed ground truth or
options). `timeout`: the item ran past its hard limit. `error`: the verifier or its backend failed."""


class ChatMessage(BaseModel):
    """One turn of a conversation, OpenAI style. Extra keys (name, tool_calls, ...) are kept."""

    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[Any] | None = None


class VerifyItem(BaseModel):
    """One completion to score."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"id": "q1", "verifier": "math", "response": "So the answer is $\\boxed{\\frac{1}{2}}$.",
                 "ground_truth": "0.5"}
            ]
        },
    )

    id: str | None = Field(default=None, description="Echoed back in the result.")
    verifier: str = Field(description="Registry name or alias of the verifier (see GET /v1/verifiers).")
    response: str = Field(description="The model's completion.")
    ground_truth: JsonValue = Field(default=None, description="Reference; each verifier documents its shape.")
    prompt: str | list[ChatMessage] | None = Field(default=None, description="The prompt, text or chat messages.")
    options: dict[str, JsonValue] = Field(default_factory=dict, description="Verifier-specific options.")
    completion_tokens: int | None = Field(
        default=None, ge=0, description="The completion's token count, for the length-aware verifiers (`overlong`, "
        "`length`); olmorl-train and the adapters fill it in.")


class VerifyResult(BaseModel):
    """The score of one item. Every item gets exactly one, in request order."""

    id: str | None = None
    verifier: str
    reward: float | None = Field(
        description="Built-in verifiers give a value in [0, 1]; null unless status is ok (the Python clients map "
        "that null as their `on_error` says)."
    )
    status: Status
    error: str | None = Field(default=None, description="Human-readable reason when status is not ok.")
    details: dict[str, Any] = Field(default_factory=dict, description="Extracted answer, per-part results, ...")
    elapsed_ms: float = 0.0


class VerifyRequest(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"items": [
                    {"id": "a", "verifier": "math", "response": "The answer is \\boxed{42}.", "ground_truth": "42"},
                    {"id": "b", "verifier": "gsm8k", "response": "... #### 17", "ground_truth": "18"},
                ]}
            ]
        }
    )

    items: list[VerifyItem]


class VerifyResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"results": [
                    {"id": "a", "verifier": "math", "reward": 1.0, "status": "ok", "error": None,
                     "details": {"extracted": "42"}, "elapsed_ms": 3.1},
                    {"id": "b", "verifier": "gsm8k", "reward": 0.0, "status": "ok", "error": None,
                     "details": {"extracted": "17", "reason": "mismatch"}, "elapsed_ms": 0.4},
                ]}
            ]
        }
    )

    results: list[VerifyResult]


class VerifierInfo(BaseModel):
    """What GET /v1/verifiers says of one verifier."""

    name: str
    aliases: list[str]
    description: str
    ground_truth: dict[str, Any] = Field(description="JSON schema of the accepted ground truth.")
    options: dict[str, Any] = Field(description="JSON schema of the accepted options.")
    notes: list[str] = Field(default_factory=list, description="Operational notes (e.g. insecure backends).")
