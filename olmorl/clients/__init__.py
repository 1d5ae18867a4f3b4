"""Clients of the olmorl reward server. Needs only httpx and pydantic."""

from olmorl.clients._client import AsyncRewardClient, RewardClient
from olmorl.clients._exceptions import (
    ItemFailed,
    OlmorlError,
    RewardServerError,
    RewardServerUnavailable,
    SessionNotFound,
)
from olmorl.clients._policy import OnError
from olmorl.clients._sessions import AsyncSession, AsyncSessionClient, Session, SessionClient
from olmorl.rewards._models import VerifyItem, VerifyResult
from olmorl.rewards.sessions._session_models import EnvInfo, SessionClosed, ToolResult

__all__ = [
    "AsyncRewardClient",
    "AsyncSession",
    "AsyncSessionClient",
    "EnvInfo",
    "ItemFailed",
    "OlmorlError",
    "OnError",
    "RewardClient",
    "RewardServerError",
    "RewardServerUnavailable",
    "Session",
    "SessionClient",
    "SessionClosed",
    "SessionNotFound",
    "ToolResult",
    "VerifyItem",
    "VerifyResult",
]
