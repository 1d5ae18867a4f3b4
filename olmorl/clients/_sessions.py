"""`SessionClient` and `AsyncSessionClient`: open tool sessions on a reward server, call their tools,
verify the final answer.

    with SessionClient(url) as client, client.open("python", {"ground_truth": "42"}) as session:
        session.call("python", code="print(6 * 7)").output      # '42\n'
        session.verify("The answer is \\boxed{42}.").reward     # 1.0

A session lives on the replica that opened it, so its calls go there. Every request retries like the
batch client (connection errors, a dropped connection, 429, 5xx, and a full server's 503 with its
Retry-After). A tool call runs code, so tool calls, verify and close carry an `Idempotency-Key`, one per
call and the same on each retry: a server that ran the call but whose reply was lost answers the retry
with that reply and does not run the call twice. A 404 raises SessionNotFound; other 4xx raise
RewardServerError; no answer after the retries raises RewardServerUnavailable naming the URL and cause.

`open_many`, `call_many`, `verify_many` and `close_many` send many sessions' calls in one request per replica
(the batch routes, `_session_transport.Batch`) and return each item's result or that item's error instead of
raising. Opens carry an idempotency key too (one per session asked for, the same on each retry), so a retried
open whose reply was lost gets the session the first attempt opened instead of a second one.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any, Mapping, Sequence, TypedDict

import httpx
from pydantic import TypeAdapter, ValidationError

from olmorl.clients._exceptions import OlmorlError, RewardServerError, RewardServerUnavailable, SessionNotFound
from olmorl.clients._policy import (Replicas, RetryPolicy, apply_on_error, auth_headers, classify, http_limits,
                                   resolve_urls)
from olmorl.clients._session_transport import (
    Answers,
    Batch,
    ToolCalls,
    async_send_once,
    close_batches,
    detail,
    new_key,
    open_batch,
    scatter,
    send_once,
    tool_batches,
    tool_body,
    verify_batches,
    verify_body,
)
from olmorl.rewards._models import ChatMessage, VerifyResult
from olmorl.rewards.sessions._session_models import (EnvInfo, SessionClosed, SessionCreate, SessionCreated,
                                                     ToolResult)

_ENV_LIST = TypeAdapter(list[EnvInfo])


def _verify_result(response: httpx.Response) -> VerifyResult:
    """The session's score. A result that is not `ok` keeps reward 0.0, as before the server sent null for it:
    its status and error say why (verl-tool, TRL environments and the trainer read it so)."""
    return apply_on_error([_parse(response, VerifyResult)], "zero")[0]


def _parse(response: httpx.Response, model: Any) -> Any:
    if response.status_code == 404:
        raise SessionNotFound(detail(response))
    if response.status_code != 200:
        classify(response)  # raises RewardServerError for a final 4xx
        raise RewardServerError(response.status_code, detail(response))
    try:
        return model.validate_json(response.content) if isinstance(model, TypeAdapter) \
            else model.model_validate_json(response.content)
    except ValidationError as exc:
        raise RewardServerError(response.status_code, f"unreadable reply: {exc.errors()[0]['msg']}") from None


class _Config:
    def __init__(self, base_url: str | Sequence[str] | None, api_key: str | None, timeout: float,
                 max_retries: int, replica_cooldown_s: float) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.replicas = Replicas(resolve_urls(base_url), cooldown_s=replica_cooldown_s)
        self.headers = auth_headers(api_key)
        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 5.0))
        self.retry = RetryPolicy(max_retries=max_retries)


class Session:
    """A session opened by SessionClient: `call`, `verify` (ends it), `close`. A context manager."""

    def __init__(self, client: SessionClient, url: str, created: SessionCreated) -> None:
        self._client, self.url = client, url
        self.id, self.env, self.tools, self.observation = (created.session_id, created.env, created.tools,
                                                           created.observation)
        self.closed = False

    def call(self, name: str, arguments: dict[str, Any] | str | None = None, **kwargs: Any) -> ToolResult:
        """Call a tool: `call("python", code="...")` or `call("python", {"code": "..."})`."""
        body = tool_body(name, arguments, kwargs)
        return _parse(self._client._send("POST", self.url, f"/v1/sessions/{self.id}/tool", body, new_key()),
                      ToolResult)

    def verify(self, response: str, messages: Sequence[ChatMessage | dict[str, Any]] | None = None) -> VerifyResult:
        """Score the final answer; the server ends the session."""
        self.closed = True
        reply = self._client._send("POST", self.url, f"/v1/sessions/{self.id}/verify", verify_body(response, messages),
                                    new_key())
        return _verify_result(reply)

    def close(self) -> None:
        """End the session (DELETE); a session that is already gone is fine."""
        if self.closed:
            return
        self.closed = True
        try:
            _parse(self._client._send("DELETE", self.url, f"/v1/sessions/{self.id}", key=new_key()),
                   TypeAdapter(dict))
        except SessionNotFound:
            pass

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SessionClientArgs(TypedDict, total=False):
    """The connection arguments the TRL and verl adapters keep to build a SessionClient or AsyncSessionClient."""

    base_url: str | Sequence[str] | None
    api_key: str | None
    timeout: float


class SessionClient:
    """Synchronous session client. Arguments as RewardClient's: `base_url` (one URL, a list, or
    comma-separated; default OLMORL_URL), `api_key` (default OLMORL_API_KEY), `timeout` per request,
    `max_retries` with jittered exponential backoff, `replica_cooldown_s`."""

    def __init__(self, base_url: str | Sequence[str] | None = None, *, api_key: str | None = None,
                 timeout: float = 120.0, max_retries: int = 5, replica_cooldown_s: float = 5.0) -> None:
        self._config = _Config(base_url, api_key, timeout, max_retries, replica_cooldown_s)
        self._http = httpx.Client(headers=self._config.headers, timeout=self._config.timeout, limits=http_limits())

    def envs(self) -> list[EnvInfo]:
        """The environments the server serves (GET /v1/envs): tools and task schemas."""
        return _parse(self._send("GET", None, "/v1/envs"), _ENV_LIST)

    def open(self, env: str, task: Any = None, options: dict[str, Any] | None = None) -> Session:
        """Open a session (POST /v1/sessions); retried while the server is full (503 + Retry-After)."""
        body = {"env": env, "task": task, "options": options or {}}
        url, response = self._send_picking("POST", "/v1/sessions", body, new_key())
        return Session(self, url, _parse(response, SessionCreated))

    def open_many(self, requests: Sequence[SessionCreate | Mapping[str, Any]]) -> list[Session | OlmorlError]:
        """Open many sessions in one request (POST /v1/sessions/batch/open), each request `open`'s arguments as
        a dict (`{"env": ..., "task": ..., "options": ...}`). One entry per request, in order: its Session, or
        the OlmorlError that says why not. Items a full server refused are sent again, as `open` retries."""
        batch = open_batch(requests, lambda url, created: Session(self, url, created), self._config.replicas)
        self._run(batch)
        return batch.outcomes

    def call_many(self, calls: ToolCalls) -> list[ToolResult | OlmorlError]:
        """One tool call on each of many sessions, `(session, name, arguments)` each, in one request per replica
        (POST /v1/sessions/batch/tool), run at once on the server. One entry per call, in order: its ToolResult,
        or the OlmorlError of that call (SessionNotFound ...). Each call keeps its idempotency key over retries,
        so a retried request runs no tool twice."""
        batches = tool_batches(calls)
        for _, batch in batches:
            self._run(batch)
        return scatter(len(calls), batches)

    def verify_many(self, answers: Answers) -> list[VerifyResult | OlmorlError]:
        """Score many sessions' answers, `(session, response)` or `(session, response, messages)` each, and end
        those sessions, in one request per replica (POST /v1/sessions/batch/verify); entries as `call_many`'s."""
        batches = verify_batches(answers)
        for _, batch in batches:
            self._run(batch)
        return scatter(len(answers), batches)

    def close_many(self, sessions: Sequence[Session]) -> list[SessionClosed | OlmorlError]:
        """End many sessions, one request per replica (POST /v1/sessions/batch/close); one entry per session, in
        order: SessionClosed, or its error (SessionNotFound: it was already gone, which `close` ignores)."""
        batches = close_batches(sessions)
        for _, batch in batches:
            self._run(batch)
        return scatter(len(sessions), batches)

    def _run(self, batch: Batch) -> None:
        """Send a batch until no item is left to send again or the retries are spent."""
        retry = self._config.retry
        for attempt in range(retry.max_retries + 1):
            if not batch.pending:
                return
            url = batch.next_url()
            batch.take(url, send_once(self._http.request, "POST", f"{url}{batch.path}", batch.body(), None))
            if batch.pending and attempt < retry.max_retries:
                time.sleep(retry.delay(attempt, batch.retry_after))
        batch.give_up(retry.max_retries + 1)

    def _send_picking(self, method: str, path: str, body: Any, key: str | None = None) -> tuple[str, httpx.Response]:
        """A request to any replica (opening a session, listing envs), retried over replicas with the same `key`."""
        cfg, reason = self._config, ""
        for attempt in range(cfg.retry.max_retries + 1):
            url = cfg.replicas.pick()
            response, reason, retry_after = send_once(self._http.request, method, f"{url}{path}", body, key)
            if response is not None:
                cfg.replicas.mark_up(url)
                return url, response
            cfg.replicas.mark_down(url)
            if attempt < cfg.retry.max_retries:
                time.sleep(cfg.retry.delay(attempt, retry_after))
        raise RewardServerUnavailable(cfg.retry.max_retries + 1, reason)

    def _send(self, method: str, url: str | None, path: str, body: Any = None,
              key: str | None = None) -> httpx.Response:
        """A request to `url` (a session's replica; None: any), retried with the same `key`."""
        if url is None:
            return self._send_picking(method, path, body)[1]
        cfg, reason = self._config, ""
        for attempt in range(cfg.retry.max_retries + 1):
            response, reason, retry_after = send_once(self._http.request, method, f"{url}{path}", body, key)
            if response is not None:
                return response
            if attempt < cfg.retry.max_retries:
                time.sleep(cfg.retry.delay(attempt, retry_after))
        raise RewardServerUnavailable(cfg.retry.max_retries + 1, reason)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> SessionClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncSession:
    """A session opened by AsyncSessionClient: `await call(...)`, `await verify(...)`, `await close()`."""

    def __init__(self, client: AsyncSessionClient, url: str, created: SessionCreated,
                 http: httpx.AsyncClient | None = None) -> None:
        self._client, self.url, self._http = client, url, http  # the client's connection pool this session uses
        self.id, self.env, self.tools, self.observation = (created.session_id, created.env, created.tools,
                                                           created.observation)
        self.closed = False

    async def call(self, name: str, arguments: dict[str, Any] | str | None = None, **kwargs: Any) -> ToolResult:
        body = tool_body(name, arguments, kwargs)
        return _parse(await self._client._send("POST", self.url, f"/v1/sessions/{self.id}/tool", body,
                                              new_key(), self._http), ToolResult)

    async def verify(self, response: str,
                     messages: Sequence[ChatMessage | dict[str, Any]] | None = None) -> VerifyResult:
        self.closed = True
        reply = await self._client._send("POST", self.url, f"/v1/sessions/{self.id}/verify",
                                         verify_body(response, messages), new_key(), self._http)
        return _verify_result(reply)

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            _parse(await self._client._send("DELETE", self.url, f"/v1/sessions/{self.id}", key=new_key(),
                                            http=self._http), TypeAdapter(dict))
        except SessionNotFound:
            pass

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncSessionClient:
    """Asynchronous twin of SessionClient, same arguments and behaviour; `max_connections` bounds the
    HTTP connections (one per session call in flight)."""

    # httpx's pool looks at each connection it holds on every request: with 64 sessions' calls in flight one
    # pool cost about 3 ms of client CPU a request, eight pools about 1 ms. Sessions are spread over the pools
    # by the order they opened in; calls without a session (open, envs) take the pools in turn.
    POOLS = 8

    def __init__(self, base_url: str | Sequence[str] | None = None, *, api_key: str | None = None,
                 timeout: float = 120.0, max_retries: int = 5, replica_cooldown_s: float = 5.0,
                 max_connections: int = 256) -> None:
        self._config = _Config(base_url, api_key, timeout, max_retries, replica_cooldown_s)
        per_pool = max(1, max_connections // self.POOLS)
        self._pools = [httpx.AsyncClient(headers=self._config.headers, timeout=self._config.timeout,
                                         limits=http_limits(per_pool))
                       for _ in range(min(self.POOLS, max_connections))]
        self._turn = itertools.cycle(self._pools)

    async def envs(self) -> list[EnvInfo]:
        return _parse(await self._send("GET", None, "/v1/envs"), _ENV_LIST)

    async def open(self, env: str, task: Any = None, options: dict[str, Any] | None = None) -> AsyncSession:
        body = {"env": env, "task": task, "options": options or {}}
        http = next(self._turn)
        url, response = await self._send_picking("POST", "/v1/sessions", body, http, new_key())
        return AsyncSession(self, url, _parse(response, SessionCreated), http)

    async def open_many(self, requests: Sequence[SessionCreate | Mapping[str, Any]]
                        ) -> list[AsyncSession | OlmorlError]:
        """As SessionClient.open_many: AsyncSessions, or the OlmorlError of each."""
        batch = open_batch(requests, lambda url, created: AsyncSession(self, url, created, next(self._turn)),
                           self._config.replicas)
        await self._run(batch)
        return batch.outcomes

    async def call_many(self, calls: ToolCalls) -> list[ToolResult | OlmorlError]:
        """As SessionClient.call_many."""
        batches = tool_batches(calls)
        await asyncio.gather(*(self._run(batch) for _, batch in batches))
        return scatter(len(calls), batches)

    async def verify_many(self, answers: Answers) -> list[VerifyResult | OlmorlError]:
        """As SessionClient.verify_many."""
        batches = verify_batches(answers)
        await asyncio.gather(*(self._run(batch) for _, batch in batches))
        return scatter(len(answers), batches)

    async def close_many(self, sessions: Sequence[AsyncSession]) -> list[SessionClosed | OlmorlError]:
        """As SessionClient.close_many."""
        batches = close_batches(sessions)
        await asyncio.gather(*(self._run(batch) for _, batch in batches))
        return scatter(len(sessions), batches)

    async def _run(self, batch: Batch) -> None:
        """Send a batch until no item is left to send again or the retries are spent."""
        retry = self._config.retry
        for attempt in range(retry.max_retries + 1):
            if not batch.pending:
                return
            url = batch.next_url()
            outcome = await async_send_once(next(self._turn), "POST", f"{url}{batch.path}", batch.body(), None)
            batch.take(url, outcome)
            if batch.pending and attempt < retry.max_retries:
                await asyncio.sleep(retry.delay(attempt, batch.retry_after))
        batch.give_up(retry.max_retries + 1)

    async def _send_picking(self, method: str, path: str, body: Any, http: httpx.AsyncClient | None = None,
                            key: str | None = None) -> tuple[str, httpx.Response]:
        cfg, reason, http = self._config, "", http or next(self._turn)
        for attempt in range(cfg.retry.max_retries + 1):
            url = cfg.replicas.pick()
            response, reason, retry_after = await async_send_once(http, method, f"{url}{path}", body, key)
            if response is not None:
                cfg.replicas.mark_up(url)
                return url, response
            cfg.replicas.mark_down(url)
            if attempt < cfg.retry.max_retries:
                await asyncio.sleep(cfg.retry.delay(attempt, retry_after))
        raise RewardServerUnavailable(cfg.retry.max_retries + 1, reason)

    async def _send(self, method: str, url: str | None, path: str, body: Any = None,
                    key: str | None = None, http: httpx.AsyncClient | None = None) -> httpx.Response:
        if url is None:
            return (await self._send_picking(method, path, body, http))[1]
        cfg, reason, http = self._config, "", http or next(self._turn)
        for attempt in range(cfg.retry.max_retries + 1):
            response, reason, retry_after = await async_send_once(http, method, f"{url}{path}", body, key)
            if response is not None:
                return response
            if attempt < cfg.retry.max_retries:
                await asyncio.sleep(cfg.retry.delay(attempt, retry_after))
        raise RewardServerUnavailable(cfg.retry.max_retries + 1, reason)

    async def aclose(self) -> None:
        for http in self._pools:
            await http.aclose()

    async def __aenter__(self) -> AsyncSessionClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
