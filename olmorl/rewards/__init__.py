"""Verifiers, their registry, and the reward server.

The wire models and the registry need only pydantic; the server, worker pool and CLI load the
`[server]` extra when used.
"""

from olmorl.rewards._models import (
    ChatMessage,
    Status,
    VerifierInfo,
    VerifyItem,
    VerifyRequest,
    VerifyResponse,
    VerifyResult,
)
from olmorl.rewards.sessions._environment import Environment, Step, Tool
from olmorl.rewards.engine._registry import (
    InvalidInput,
    ItemError,
    NoOptions,
    Score,
    Task,
    Verifier,
    canonical_name,
    load_environments,
    load_verifiers,
    register,
)
from olmorl.rewards.engine._composite import Component, CompositeOptions
from olmorl.rewards.sessions._session_models import (
    EnvInfo,
    SessionClosed,
    SessionCreate,
    SessionCreated,
    SessionVerify,
    ToolCall,
    ToolResult,
    ToolStatus,
)

__all__ = [
    "ChatMessage",
    "Component",
    "CompositeOptions",
    "EnvInfo",
    "Environment",
    "InvalidInput",
    "ItemError",
    "NoOptions",
    "Score",
    "SessionClosed",
    "SessionCreate",
    "SessionCreated",
    "SessionVerify",
    "Status",
    "Step",
    "Task",
    "Tool",
    "ToolCall",
    "ToolResult",
    "ToolStatus",
    "Verifier",
    "VerifierInfo",
    "VerifyItem",
    "VerifyRequest",
    "VerifyResponse",
    "VerifyResult",
    "canonical_name",
    "load_environments",
    "load_verifiers",
    "register",
    "reward_deployment",
    "serve_rewards",
    "stop_rewards",
]

_RAY_SERVE = ("reward_deployment", "serve_rewards", "stop_rewards")


def __getattr__(name: str):
    # The Ray Serve entry points need the [server] and [ray] extras; import them only when asked for.
    if name in _RAY_SERVE:
        from olmorl.rewards.service import _ray_serve

        return getattr(_ray_serve, name)
    raise AttributeError(f"module 'olmorl.rewards' has no attribute {name!r}")
