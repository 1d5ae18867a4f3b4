"""The client logic both twins share: batching, replica choice, retry decisions, error policy."""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

import httpx
from pydantic import TypeAdapter, ValidationError

from olmorl.clients._exceptions import ItemFailed, RewardServerError
from olmorl.rewards._models import VerifierInfo, VerifyItem, VerifyResponse, VerifyResult

OnError = Literal["zero", "none", "raise"]
# An idle connection is kept this long, so a trainer's next step (seconds later) reuses it instead of opening a
# new one per request in flight. Below the server's `keep_alive_s` (75): the client drops an idle connection
# before the server closes it, never sending on one the server is closing (a ReadError with no message).
KEEPALIVE_EXPIRY_S = 60.0


def http_limits(max_connections: int = 100) -> httpx.Limits:
    """The connection limits of every olmorl HTTP client: `max_connections`, all kept alive KEEPALIVE_EXPIRY_S."""
    return httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections,
                        keepalive_expiry=KEEPALIVE_EXPIRY_S)
RETRY_STATUS = {429, 500, 502, 503, 504}
_VERIFIER_LIST = TypeAdapter(list[VerifierInfo])


def resolve_urls(base_url: str | Sequence[str] | None) -> list[str]:
    if base_url is None:
        base_url = os.environ.get("OLMORL_URL", "http://127.0.0.1:8000")
    urls = base_url.split(",") if isinstance(base_url, str) else list(base_url)
    urls = [u.strip().rstrip("/") for u in urls if u.strip()]
    if not urls:
        raise ValueError("no reward server URL: pass base_url or set OLMORL_URL")
    return urls


def auth_headers(api_key: str | None) -> dict[str, str]:
    key = api_key if api_key is not None else os.environ.get("OLMORL_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


def as_payload(items: Sequence[VerifyItem | dict[str, Any]]) -> list[dict[str, Any]]:
    return [i.model_dump(mode="json", exclude_none=True) if isinstance(i, VerifyItem) else dict(i) for i in items]


def split(payload: list[dict[str, Any]], size: int) -> list[tuple[int, list[dict[str, Any]]]]:
    """(offset, chunk) pairs of at most `size` items."""
    return [(start, payload[start:start + size]) for start in range(0, len(payload), size)]


@dataclass
class Replicas:
    """Round-robin over base URLs; a replica that fails is skipped for `cooldown_s`, then tried again."""

    urls: list[str]
    cooldown_s: float = 5.0
    _next: int = 0
    _down_until: dict[str, float] = field(default_factory=dict)

    def pick(self) -> str:
        now = time.monotonic()
        for _ in range(len(self.urls)):
            url = self.urls[self._next % len(self.urls)]
            self._next += 1
            if self._down_until.get(url, 0.0) <= now:
                return url
        # every replica is cooling down: take the one that comes back first
        return min(self.urls, key=lambda u: self._down_until.get(u, 0.0))

    def mark_down(self, url: str) -> None:
        self._down_until[url] = time.monotonic() + self.cooldown_s

    def mark_up(self, url: str) -> None:
        self._down_until.pop(url, None)


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5  # retries after the first attempt
    backoff_s: float = 0.25  # first delay; doubles each retry
    max_backoff_s: float = 10.0  # cap on one delay

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        """Full-jitter exponential backoff; a server's Retry-After (seconds) is honoured as a floor."""
        delay = random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2 ** attempt))
        if retry_after:
            try:
                delay = max(delay, min(float(retry_after), self.max_backoff_s * 6))
            except ValueError:
                pass
        return delay


def transport_failure(exc: httpx.TransportError, method: str, url: str) -> str:
    """What a failed attempt saw, never empty: httpx's ReadError of a dropped connection has no message."""
    cause = exc.__cause__ or exc.__context__
    message = str(exc) or (f"{type(cause).__name__}: {cause}" if cause is not None else "") \
        or "the connection closed without a reply"
    return f"{type(exc).__name__} ({message}) on {method} {url}"


def classify(response: httpx.Response) -> str | None:
    """None if the response is usable; a reason string if it is worth retrying; raises if it is final."""
    if response.status_code == 200:
        return None
    if response.status_code in RETRY_STATUS:
        return f"HTTP {response.status_code}"
    try:
        body = response.json()
        detail = body.get("detail", body) if isinstance(body, dict) else body
    except ValueError:
        detail = response.text
    raise RewardServerError(response.status_code, str(detail)[:500])


def parse_results(response: httpx.Response, expected: int) -> list[VerifyResult]:
    try:
        results = VerifyResponse.model_validate_json(response.content).results
    except ValidationError as exc:
        raise RewardServerError(response.status_code, f"unreadable reply: {exc.errors()[0]['msg']}") from None
    if len(results) != expected:
        raise RewardServerError(response.status_code, f"sent {expected} items, got {len(results)} results")
    return results


def parse_verifiers(response: httpx.Response) -> list[VerifierInfo]:
    try:
        return _VERIFIER_LIST.validate_json(response.content)
    except ValidationError as exc:
        raise RewardServerError(response.status_code, f"unreadable reply: {exc.errors()[0]['msg']}") from None


def apply_on_error(results: list[VerifyResult], on_error: OnError) -> list[VerifyResult]:
    """What a result that is not `ok` becomes: reward None (`none`), 0.0 (`zero`), or ItemFailed (`raise`)."""
    for index, result in enumerate(results):
        if result.status == "ok":
            continue
        if on_error == "raise":
            raise ItemFailed(index, result)
        results[index] = result.model_copy(update={"reward": None if on_error == "none" else 0.0})
    return results
