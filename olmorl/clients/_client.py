"""`RewardClient` and `AsyncRewardClient`: score completions on one or more olmorl reward servers.

Both split large inputs into server-sized batches sent concurrently (bounded), retry transient
failures with jittered exponential backoff across replicas, and return one result per item in
input order, whatever failed. The logic they share lives in `_policy`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import httpx

from olmorl.clients._exceptions import RewardServerUnavailable
from olmorl.clients._policy import (
    OnError,
    Replicas,
    RetryPolicy,
    apply_on_error,
    as_payload,
    auth_headers,
    classify,
    http_limits,
    parse_results,
    parse_verifiers,
    resolve_urls,
    split,
    transport_failure,
)
from olmorl.rewards._models import VerifierInfo, VerifyItem, VerifyResult

ItemLike = VerifyItem | dict[str, Any]


class _ClientConfig:
    def __init__(self, base_url: str | Sequence[str] | None, api_key: str | None, timeout: float,
                 max_batch_size: int, max_concurrency: int, max_retries: int, on_error: OnError,
                 replica_cooldown_s: float) -> None:
        if on_error not in ("zero", "none", "raise"):
            raise ValueError(f"on_error must be 'zero', 'none' or 'raise', not {on_error!r}")
        if max_batch_size < 1 or max_concurrency < 1 or max_retries < 0:
            raise ValueError("max_batch_size and max_concurrency must be >= 1 and max_retries >= 0")
        self.replicas = Replicas(resolve_urls(base_url), cooldown_s=replica_cooldown_s)
        self.headers = auth_headers(api_key)
        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 5.0))
        self.max_batch_size = max_batch_size
        self.max_concurrency = max_concurrency
        self.retry = RetryPolicy(max_retries=max_retries)
        self.on_error = on_error



class RewardClient:
    """Synchronous client. `with RewardClient("http://127.0.0.1:8000") as c: c.verify(items)`.

    - `base_url`: one URL, a list, or a comma-separated string of replicas (default: `OLMORL_URL`, else
      http://127.0.0.1:8000). Requests go round-robin; a replica that fails (connection error, 5xx, 429)
      is skipped for `replica_cooldown_s`, then tried again, so it gets traffic back once it recovers.
    - `api_key`: bearer token (default: `OLMORL_API_KEY`).
    - `timeout`: seconds per HTTP request. `max_batch_size`: items per request. `max_concurrency`:
      requests in flight at once. `max_retries`: retries per request after the first attempt, with
      jittered exponential backoff; a server's Retry-After is honoured.
    - `on_error`: what the reward of an item the server scored `invalid`, `timeout` or `error` becomes:
      `none` (default: None, status and error kept), `zero` (0.0, status kept) or `raise` (ItemFailed).
    - A server that no replica reaches after all retries raises RewardServerUnavailable, whatever
      `on_error` says: no reward is ever made up for an item no server scored. A 4xx other than 429
      (a wrong token, a malformed request) raises RewardServerError.
    """

    def __init__(self, base_url: str | Sequence[str] | None = None, *, api_key: str | None = None,
                 timeout: float = 120.0, max_batch_size: int = 256, max_concurrency: int = 4,
                 max_retries: int = 5, on_error: OnError = "none", replica_cooldown_s: float = 5.0) -> None:
        self._config = _ClientConfig(base_url, api_key, timeout, max_batch_size, max_concurrency, max_retries,
                                     on_error, replica_cooldown_s)
        self._http = httpx.Client(headers=self._config.headers, timeout=self._config.timeout,
                                  limits=http_limits(max(max_concurrency, 1) * 2))
        self._lock = threading.Lock()  # Replicas is not thread-safe; batches run on a thread pool

    def verify(self, items: Sequence[ItemLike]) -> list[VerifyResult]:
        chunks = split(as_payload(items), self._config.max_batch_size)
        if len(chunks) <= 1 or self._config.max_concurrency <= 1:
            scored = [self._send(chunk) for _, chunk in chunks]
        else:
            with ThreadPoolExecutor(min(self._config.max_concurrency, len(chunks))) as pool:
                scored = list(pool.map(lambda pair: self._send(pair[1]), chunks))
        return apply_on_error([r for batch in scored for r in batch], self._config.on_error)

    def verify_one(self, item: ItemLike | None = None, **fields: Any) -> VerifyResult:
        """Score one item, given as a VerifyItem / dict or as keyword fields (verifier=..., response=...)."""
        return self.verify([item if item is not None else fields])[0]

    def verifiers(self) -> list[VerifierInfo]:
        """What the server serves (GET /v1/verifiers): names, aliases, ground-truth and options schemas."""
        response, reason = self._exchange("GET", "/v1/verifiers")
        if response is None:
            raise RewardServerUnavailable(self._config.retry.max_retries + 1, reason)
        return parse_verifiers(response)

    def _send(self, chunk: list[dict[str, Any]]) -> list[VerifyResult]:
        response, reason = self._exchange("POST", "/v1/verify", {"items": chunk})
        if response is None:
            raise RewardServerUnavailable(self._config.retry.max_retries + 1, reason)
        return parse_results(response, len(chunk))

    def _exchange(self, method: str, path: str, body: Any = None) -> tuple[httpx.Response | None, str]:
        """The first usable response over replicas and retries, or (None, what the last attempt saw)."""
        cfg, reason = self._config, ""
        for attempt in range(cfg.retry.max_retries + 1):
            with self._lock:
                url = cfg.replicas.pick()
            retry_after = None
            try:
                response = self._http.request(method, f"{url}{path}", json=body)
                reason = classify(response) or ""
                if not reason:
                    with self._lock:
                        cfg.replicas.mark_up(url)
                    return response, ""
                retry_after = response.headers.get("retry-after")
            except httpx.TransportError as exc:
                reason = transport_failure(exc, method, f"{url}{path}")
            with self._lock:
                cfg.replicas.mark_down(url)
            if attempt < cfg.retry.max_retries:
                time.sleep(cfg.retry.delay(attempt, retry_after))
        return None, reason

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "RewardClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncRewardClient:
    """Asynchronous twin of RewardClient, same arguments and behaviour.
    `async with AsyncRewardClient(url) as c: await c.verify(items)`."""

    def __init__(self, base_url: str | Sequence[str] | None = None, *, api_key: str | None = None,
                 timeout: float = 120.0, max_batch_size: int = 256, max_concurrency: int = 8,
                 max_retries: int = 5, on_error: OnError = "none", replica_cooldown_s: float = 5.0) -> None:
        self._config = _ClientConfig(base_url, api_key, timeout, max_batch_size, max_concurrency, max_retries,
                                     on_error, replica_cooldown_s)
        self._http = httpx.AsyncClient(headers=self._config.headers, timeout=self._config.timeout,
                                       limits=http_limits(max(max_concurrency, 1) * 2))
        self._slots = asyncio.Semaphore(max(max_concurrency, 1))

    async def verify(self, items: Sequence[ItemLike]) -> list[VerifyResult]:
        chunks = split(as_payload(items), self._config.max_batch_size)
        tasks = [asyncio.ensure_future(self._send(chunk)) for _, chunk in chunks]
        try:
            scored = await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:  # a raise (on_error="raise", a 4xx) or a cancel stops the sibling chunks too
                task.cancel()
            raise
        return apply_on_error([r for batch in scored for r in batch], self._config.on_error)

    async def verify_one(self, item: ItemLike | None = None, **fields: Any) -> VerifyResult:
        return (await self.verify([item if item is not None else fields]))[0]

    async def verifiers(self) -> list[VerifierInfo]:
        """What the server serves (GET /v1/verifiers): names, aliases, ground-truth and options schemas."""
        response, reason = await self._exchange("GET", "/v1/verifiers")
        if response is None:
            raise RewardServerUnavailable(self._config.retry.max_retries + 1, reason)
        return parse_verifiers(response)

    async def _send(self, chunk: list[dict[str, Any]]) -> list[VerifyResult]:
        response, reason = await self._exchange("POST", "/v1/verify", {"items": chunk})
        if response is None:
            raise RewardServerUnavailable(self._config.retry.max_retries + 1, reason)
        return parse_results(response, len(chunk))

    async def _exchange(self, method: str, path: str, body: Any = None) -> tuple[httpx.Response | None, str]:
        """The first usable response over replicas and retries, or (None, what the last attempt saw)."""
        cfg, reason = self._config, ""
        async with self._slots:
            for attempt in range(cfg.retry.max_retries + 1):
                url = cfg.replicas.pick()
                retry_after = None
                try:
                    response = await self._http.request(method, f"{url}{path}", json=body)
                    reason = classify(response) or ""
                    if not reason:
                        cfg.replicas.mark_up(url)
                        return response, ""
                    retry_after = response.headers.get("retry-after")
                except httpx.TransportError as exc:
                    reason = transport_failure(exc, method, f"{url}{path}")
                cfg.replicas.mark_down(url)
                if attempt < cfg.retry.max_retries:
                    await asyncio.sleep(cfg.retry.delay(attempt, retry_after))
        return None, reason

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncRewardClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
