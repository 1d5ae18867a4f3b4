"""The client's exceptions, one hierarchy:

    OlmorlError
    ├── RewardServerError        the server refused the request (4xx other than 429): fix the request
    │   └── SessionNotFound      404 on a session: unknown id, expired (idle TTL), closed, or server restarted
    ├── RewardServerUnavailable  every replica failed after all retries (connection, timeout, 5xx, 429)
    └── ItemFailed               on_error="raise" and an item came back invalid / timeout / error
"""

from __future__ import annotations

from olmorl.rewards._models import VerifyResult


class OlmorlError(Exception):
    """Base class of every error the client raises."""


class RewardServerError(OlmorlError):
    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(f"reward server answered {status_code}: {message}")
        self.status_code = status_code


class SessionNotFound(RewardServerError):
    """The session is gone (unknown, expired past the idle TTL, closed, or its server restarted)."""

    def __init__(self, message: str) -> None:
        super().__init__(404, message)


class RewardServerUnavailable(OlmorlError):
    """No replica answered after all retries; `last_error` says what the last attempt saw."""

    def __init__(self, attempts: int, last_error: str) -> None:
        super().__init__(f"reward server unavailable after {attempts} attempts: {last_error}")
        self.attempts = attempts
        self.last_error = last_error


class ItemFailed(OlmorlError):
    def __init__(self, index: int, result: VerifyResult) -> None:
        super().__init__(f"item {index} ({result.verifier}) came back {result.status}: {result.error}")
        self.index = index
        self.result = result
