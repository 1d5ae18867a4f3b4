"""Calls to the judge: OpenAI-compatible endpoints from server settings only, load-balanced, with a
global concurrency limit, a per-call timeout and retries we control (the openai client's own retries
are off, so every attempt is counted and Retry-After is honoured under our cap)."""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import logging
import random
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from olmorl.rewards._settings import JudgeSettings

log = logging.getLogger("olmorl.judge")

_RETRYABLE_STATUS = frozenset({408, 409, 429})  # plus every 5xx
_PROBE_TIMEOUT_S = 5.0


class JudgeCallError(RuntimeError):
    """The judge gave no reply; `attempts` calls were made."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(reason)
        self.attempts = attempts


@dataclass(frozen=True)
class JudgeReply:
    text: str | None
    attempts: int
    endpoint: int  # index into the configured endpoints


def endpoint_urls(settings: JudgeSettings) -> list[str]:
    return [u.strip() for u in (settings.base_url or "").split(",") if u.strip()]


def public_url(url: str) -> str:
    """The URL without any user:password part, for logs and /readyz."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def retry_after_s(headers: Any) -> float | None:
    """Seconds asked for by `Retry-After` (seconds or HTTP date) or `retry-after-ms`; None if absent."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class Endpoint:
    def __init__(self, index: int, url: str, client: AsyncOpenAI) -> None:
        self.index = index
        self.url = url
        self.client = client
        self.in_flight = 0
        self.calls = 0
        self.failures = 0
        self.reachable: bool | None = None  # None: not checked yet
        self.model_listed: bool | None = None
        self.last_error: str | None = None
        self.checked_at: float | None = None

    def state(self) -> dict[str, Any]:
        return {"url": public_url(self.url), "reachable": self.reachable, "model_listed": self.model_listed,
                "last_error": self.last_error, "in_flight": self.in_flight, "calls": self.calls,
                "failures": self.failures}


class JudgeClient:
    def __init__(self, settings: JudgeSettings) -> None:
        self.settings = settings
        self.urls = endpoint_urls(settings)
        self.endpoints: list[Endpoint] = []
        self._slots = asyncio.Semaphore(max(1, settings.concurrency))
        self._turn = itertools.count()
        self._health_task: asyncio.Task[None] | None = None

    @property
    def configured(self) -> bool:
        return bool(self.urls and self.settings.model)

    async def start(self) -> None:
        if not self.configured or self.endpoints:
            return
        from openai import AsyncOpenAI  # the server extra; not imported by pool workers

        for index, url in enumerate(self.urls):
            client = AsyncOpenAI(base_url=url, api_key=self.settings.api_key or "EMPTY",
                                 timeout=self.settings.timeout_s, max_retries=0)
            self.endpoints.append(Endpoint(index, url, client))
        self._health_task = asyncio.create_task(self._watch_health(), name="judge-health")

    async def stop(self) -> None:
        if self._health_task is not None:
            self._health_task.cancel()
            await asyncio.gather(self._health_task, return_exceptions=True)
            self._health_task = None
        for endpoint in self.endpoints:
            await endpoint.client.close()
        self.endpoints = []

    # -- health, for /readyz -----------------------------------------------------------------------------
    async def _watch_health(self) -> None:
        while True:
            await asyncio.gather(*(self._probe(e) for e in self.endpoints))
            await asyncio.sleep(self.settings.health_interval_s)

    async def _probe(self, endpoint: Endpoint) -> None:
        import openai

        try:
            page = await endpoint.client.models.list(timeout=min(_PROBE_TIMEOUT_S, self.settings.timeout_s))
            ids = [m.id for m in page.data]
        except openai.APIStatusError as exc:  # it answered; some servers just have no /models
            endpoint.reachable, endpoint.model_listed = True, None
            endpoint.last_error = f"GET /models: {_describe(exc, self.settings.timeout_s)}"
        except Exception as exc:  # no answer: not reachable; the reason is reported
            endpoint.reachable, endpoint.last_error = False, _describe(exc, self.settings.timeout_s)
        else:
            endpoint.reachable, endpoint.model_listed, endpoint.last_error = True, self.settings.model in ids, None
        endpoint.checked_at = time.time()

    def state(self) -> dict[str, Any]:
        return {"model": self.settings.model, "concurrency": self.settings.concurrency,
                "in_flight": sum(e.in_flight for e in self.endpoints),
                "endpoints": [e.state() for e in self.endpoints]}

    # -- calls -----------------------------------------------------------------------------------------
    def _pick(self, avoid: int | None) -> Endpoint:
        """Fewest calls in flight, preferring endpoints not known to be down; ties take turns."""
        candidates = [e for e in self.endpoints if e.index != avoid] or self.endpoints
        healthy = [e for e in candidates if e.reachable is not False] or candidates
        offset = next(self._turn)
        n = len(healthy)
        return min((healthy[(offset + i) % n] for i in range(n)), key=lambda e: e.in_flight)

    def _backoff_s(self, retry: int, asked: float | None) -> float:
        delay = self.settings.retry_backoff_s * 2 ** (retry - 1) * random.uniform(0.5, 1.0)
        if asked is not None:
            delay = max(delay, asked)
        return min(delay, self.settings.retry_backoff_max_s)

    async def complete(self, messages: list[dict[str, str]]) -> JudgeReply:
        """One judge reply, retrying transient failures; raises JudgeCallError after the last attempt."""
        import openai

        if not self.endpoints:
            raise JudgeCallError("the judge client is not started", 0)
        body = {"model": self.settings.model, "messages": messages, "temperature": self.settings.temperature,
                "max_tokens": self.settings.max_tokens}
        attempts, avoid = 0, None
        total = 1 + max(0, self.settings.max_retries)
        while True:
            endpoint = self._pick(avoid)
            attempts += 1
            asked: float | None = None
            async with self._slots:
                endpoint.in_flight += 1
                endpoint.calls += 1
                try:
                    # The client's generic `post` (its documented escape hatch): same auth, timeouts and
                    # error types as `chat.completions.create`, without its per-call TypedDict transform
                    # and response-model construction, which cost ~1 ms of event-loop CPU per call.
                    completion = await endpoint.client.post("/chat/completions", body=body, cast_to=object)
                except openai.APIStatusError as exc:
                    reason = f"HTTP {exc.status_code} from {public_url(endpoint.url)}: {_short(exc.message)}"
                    if exc.status_code not in _RETRYABLE_STATUS and exc.status_code < 500:
                        endpoint.failures += 1
                        raise JudgeCallError(reason, attempts) from None
                    asked = retry_after_s(exc.response.headers)
                except openai.APIConnectionError as exc:  # timeouts included
                    reason = f"{_describe(exc, self.settings.timeout_s)} ({public_url(endpoint.url)})"
                    endpoint.reachable = False if not isinstance(exc, openai.APITimeoutError) else endpoint.reachable
                else:
                    endpoint.reachable, endpoint.last_error = True, None
                    return JudgeReply(_reply_text(completion), attempts, endpoint.index)
                finally:
                    endpoint.in_flight -= 1
            endpoint.failures += 1
            endpoint.last_error = reason
            if attempts >= total:
                raise JudgeCallError(f"judge failed after {attempts} attempt(s): {reason}", attempts)
            avoid = endpoint.index if len(self.endpoints) > 1 else None
            delay = self._backoff_s(attempts, asked)
            log.debug("judge attempt %d failed (%s); retrying in %.2f s", attempts, reason, delay)
            await asyncio.sleep(delay)


def _reply_text(completion: Any) -> str | None:
    """The first choice's message content of a chat completion (None when absent or malformed)."""
    try:
        content = completion["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def _short(text: str, limit: int = 300) -> str:
    text = re.sub(r"^Error code: \d+ - ", "", " ".join(str(text).split()))
    return text if len(text) <= limit else text[:limit] + "…"


def _describe(exc: BaseException, timeout_s: float) -> str:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return f"timed out after {timeout_s:g} s"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        return f"connection error: {_short(f'{type(cause).__name__}: {cause}' if cause else str(exc))}"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {_short(exc.message)}"
    return _short(f"{type(exc).__name__}: {exc}")
