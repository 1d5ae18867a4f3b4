"""Calls to the judge: OpenAI-compatible endpoints from server settings only, load-balanced, with a
global concurrency limit, optional requests/tokens-per-minute limits per endpoint, a per-call timeout
and retries we control (the openai client's own retries are off, so every attempt is counted and
Retry-After is honoured under our cap)."""

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
    finish_reason: str | None = None  # "length": the judge was cut off before its verdict
    at_judge_s: float = 0.0  # seconds from its first call reaching the judge to the reply (retries included),
    # not the wait for a first call slot behind other items


def estimate_tokens(messages: list[dict[str, str]]) -> int:
    """Prompt tokens, roughly (4 characters a token), for the tokens-per-minute budget."""
    return sum(len(m.get("content") or "") for m in messages) // 4 + 1


class RateLimit:
    """Requests- and tokens-per-minute budgets of one endpoint: token buckets that refill continuously
    and hold one second's worth (at least one request, at least one call's tokens), so calls are paced
    evenly instead of bursting a minute's budget. A call reserves its estimated tokens (prompt estimate
    + max_tokens); `settle` returns what the usage the endpoint reports says was not used."""

    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None,
                 clock: Any = time.monotonic) -> None:
        self.rpm, self.tpm = requests_per_minute, tokens_per_minute
        self._clock = clock
        self._requests = self._request_cap = max(1.0, (self.rpm or 0) / 60)
        self._tokens = self._token_cap = (self.tpm or 0) / 60
        self._stamp = clock()
        self._lock = asyncio.Lock()
        self.waited_s = 0.0

    def _refill(self, call_tokens: int) -> None:
        now = self._clock()
        elapsed, self._stamp = now - self._stamp, now
        if self.rpm:
            self._requests = min(self._request_cap, self._requests + elapsed * self.rpm / 60)
        if self.tpm:
            cap = max(self._token_cap, call_tokens)
            self._tokens = min(cap, self._tokens + elapsed * self.tpm / 60)

    def wait_s(self, call_tokens: int) -> float:
        """Seconds until a call of `call_tokens` fits both budgets (0: now)."""
        self._refill(call_tokens)
        wait = 0.0
        if self.rpm and self._requests < 1:
            wait = (1 - self._requests) * 60 / self.rpm
        if self.tpm and self._tokens < call_tokens:
            wait = max(wait, (call_tokens - self._tokens) * 60 / self.tpm)
        return wait

    async def acquire(self, call_tokens: int) -> None:
        if not (self.rpm or self.tpm):
            return
        async with self._lock:  # first come, first served
            while (wait := self.wait_s(call_tokens)) > 0:
                self.waited_s += wait
                await asyncio.sleep(wait)
            if self.rpm:
                self._requests -= 1
            if self.tpm:
                self._tokens -= call_tokens

    def settle(self, reserved: int, used: int | None) -> None:
        if self.tpm and used is not None:
            self._tokens += reserved - used  # may go negative: the next calls wait for it


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
        self.limit = RateLimit(None, None)
        self.reachable: bool | None = None  # None: not checked yet
        self.model_listed: bool | None = None
        self.last_error: str | None = None
        self.checked_at: float | None = None

    def state(self) -> dict[str, Any]:
        return {"url": public_url(self.url), "reachable": self.reachable, "model_listed": self.model_listed,
                "last_error": self.last_error, "in_flight": self.in_flight, "calls": self.calls,
                "failures": self.failures, "rate_limit_wait_s": round(self.limit.waited_s, 3)}


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
            endpoint = Endpoint(index, url, client)
            endpoint.limit = RateLimit(self.settings.requests_per_minute, self.settings.tokens_per_minute)
            self.endpoints.append(endpoint)
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
    def _pick(self, avoid: int | None, call_tokens: int) -> Endpoint:
        """Shortest rate-limit wait, then fewest calls in flight, preferring endpoints not known to be
        down; ties take turns."""
        candidates = [e for e in self.endpoints if e.index != avoid] or self.endpoints
        healthy = [e for e in candidates if e.reachable is not False] or candidates
        offset = next(self._turn)
        n = len(healthy)
        return min((healthy[(offset + i) % n] for i in range(n)),
                   key=lambda e: (e.limit.wait_s(call_tokens), e.in_flight))

    def _body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.settings.model, "messages": messages,
                                self.settings.max_tokens_field: self.settings.max_tokens}
        if self.settings.temperature is not None:
            body["temperature"] = self.settings.temperature
        return body

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
        body = self._body(messages)
        call_tokens = estimate_tokens(messages) + self.settings.max_tokens
        attempts, avoid, first_call = 0, None, None
        total = 1 + max(0, self.settings.max_retries)
        while True:
            endpoint = self._pick(avoid, call_tokens)
            attempts += 1
            asked: float | None = None
            await endpoint.limit.acquire(call_tokens)  # outside the concurrency slots: waiting holds none
            async with self._slots:
                first_call = first_call or time.perf_counter()
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
                    endpoint.limit.settle(call_tokens, _used_tokens(completion))
                    return JudgeReply(_reply_text(completion), attempts, endpoint.index, _finish_reason(completion),
                                      time.perf_counter() - first_call)
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


def _finish_reason(completion: Any) -> str | None:
    try:
        reason = completion["choices"][0].get("finish_reason")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return reason if isinstance(reason, str) else None


def _used_tokens(completion: Any) -> int | None:
    try:
        used = completion["usage"]["total_tokens"]
    except (KeyError, TypeError):
        return None
    return used if isinstance(used, int) else None


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
