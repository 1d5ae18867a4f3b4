"""Clients of the olmorl reward server. Needs only httpx and pydantic."""

from olmorl.clients._client import AsyncRewardClient, RewardClient
from olmorl.clients._exceptions import ItemFailed, OlmorlError, RewardServerError, RewardServerUnavailable
from olmorl.clients._policy import OnError
from olmorl.rewards._models import VerifyItem, VerifyResult

__all__ = [
    "AsyncRewardClient",
    "ItemFailed",
    "OlmorlError",
    "OnError",
    "RewardClient",
    "RewardServerError",
    "RewardServerUnavailable",
    "VerifyItem",
    "VerifyResult",
]
