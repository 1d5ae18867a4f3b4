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
from olmorl.rewards._registry import (
    InvalidInput,
    NoOptions,
    Score,
    Task,
    Verifier,
    canonical_name,
    load_verifiers,
    register,
)

__all__ = [
    "ChatMessage",
    "InvalidInput",
    "NoOptions",
    "Score",
    "Status",
    "Task",
    "Verifier",
    "VerifierInfo",
    "VerifyItem",
    "VerifyRequest",
    "VerifyResponse",
    "VerifyResult",
    "canonical_name",
    "load_verifiers",
    "register",
]
