"""How the session clients' requests go out: one attempt of a request (single or batched), and a batch's items
across attempts (`Batch`).

A batch request's reply has one outcome per item, the status code its single route would have answered: a 200
item is final, an item the server could not take now (503 full, 429, 5xx) is sent again on the next attempt
with its idempotency key unchanged (so a tool it already ran is not run twice), any other item is final as its
error. A transport error or a retryable status for the whole request sends every item still pending again.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, Mapping, Sequence

import httpx
from pydantic import BaseModel, ValidationError

from olmorl.clients._exceptions import (
    OlmorlError,
    RewardServerError,
    RewardServerUnavailable,
    SessionNotFound,
)
from olmorl.clients._policy import RETRY_STATUS, Replicas, apply_on_error, transport_failure
from olmorl.rewards._models import ChatMessage, VerifyResult
from olmorl.rewards.sessions._session_models import (BatchReply, SessionClosed, SessionCreate, SessionCreated,
                                                     ToolResult)

OPEN_BATCH, TOOL_BATCH, VERIFY_BATCH, CLOSE_BATCH = ("/v1/sessions/batch/open", "/v1/sessions/batch/tool",
                                                     "/v1/sessions/batch/verify", "/v1/sessions/batch/close")


def count_mismatch(items: int, outcomes: int) -> RewardServerError | None:
    """The error of a batch answered with `outcomes` outcomes for its `items` items (None when they pair one to
    one): no outcome can be trusted to be its item's, so every item of the request fails with it."""
    if items == outcomes:
        return None
    return RewardServerError(200, f"unreadable batch reply: {outcomes} outcomes for {items} items (each item "
                                  "needs its own; none of this request's items is paired with an outcome)")


def detail(response: httpx.Response) -> str:
    try:
        body = response.json()
        return str(body.get("detail", body) if isinstance(body, dict) else body)[:500]
    except ValueError:
        return response.text[:500]


def keyed(key: str | None) -> dict[str, str] | None:
    """The headers of a call safe to retry: its own key, sent again on each retry of that call."""
    return {"Idempotency-Key": key} if key else None


def new_key() -> str:
    return uuid.uuid4().hex


Outcome = tuple[httpx.Response | None, str, str | None]  # (the response to use | None, why not, Retry-After)


def judge(method: str, url: str, response: httpx.Response | None, exc: httpx.TransportError | None) -> Outcome:
    if exc is not None:
        return None, transport_failure(exc, method, url), None
    assert response is not None
    if response.status_code not in RETRY_STATUS:
        return response, "", None
    return None, f"HTTP {response.status_code} ({detail(response)}) on {method} {url}", \
        response.headers.get("retry-after")


def send_once(request: Any, method: str, url: str, body: Any, key: str | None) -> Outcome:
    try:
        return judge(method, url, request(method, url, json=body, headers=keyed(key)), None)
    except httpx.TransportError as exc:
        return judge(method, url, None, exc)


async def async_send_once(http: httpx.AsyncClient, method: str, url: str, body: Any, key: str | None) -> Outcome:
    try:
        return judge(method, url, await http.request(method, url, json=body, headers=keyed(key)), None)
    except httpx.TransportError as exc:
        return judge(method, url, None, exc)


class Batch:
    """One batch route's items bound for one replica (`url`; None: any, picked per attempt from `replicas`) over
    its attempts. `outcomes[i]`: item i's `finish(url, result)`, or the OlmorlError that ended it."""

    def __init__(self, path: str, bodies: list[dict[str, Any]], reply: type[BatchReply[Any]],
                 finish: Callable[[str, Any], Any], url: str | None = None, replicas: Replicas | None = None) -> None:
        if url is None and replicas is None:
            raise ValueError("a batch needs its replica's url or the replicas to pick from")
        self.path, self.bodies, self.reply, self.finish = path, bodies, reply, finish
        self.url, self.replicas = url, replicas
        self.outcomes: list[Any] = [None] * len(bodies)
        self.pending = list(range(len(bodies)))
        self.reason = ""  # why the last attempt left items pending
        self.retry_after: str | None = None  # and the Retry-After it gave

    def next_url(self) -> str:
        if self.url is not None:
            return self.url
        assert self.replicas is not None
        return self.replicas.pick()

    def body(self) -> dict[str, Any]:
        return {"items": [self.bodies[i] for i in self.pending]}

    def take(self, url: str, outcome: Outcome) -> None:
        """Read one attempt: final items get their outcome; those to send again stay pending."""
        response, reason, self.retry_after = outcome
        if self.replicas is not None and self.url is None:
            (self.replicas.mark_up if response is not None else self.replicas.mark_down)(url)
        if response is None:
            self.reason = reason
            return
        if response.status_code != 200:  # the request itself was refused: no item can succeed by resending
            why = (f"{url} has no {self.path} route (a reward server older than this client)"
                   if response.status_code == 404 else detail(response))
            self._end(self.pending, lambda _: RewardServerError(response.status_code, why))
            return
        try:
            results = self.reply.model_validate_json(response.content).results
        except ValidationError as exc:
            self._end(self.pending, lambda _: RewardServerError(200, f"unreadable batch reply: {exc}"))
            return
        mismatch = count_mismatch(len(self.pending), len(results))
        if mismatch is not None:
            self._end(self.pending, lambda _: mismatch)
            return
        still = []
        for index, item in zip(self.pending, results):
            if item.status_code == 200 and item.result is not None:
                self.outcomes[index] = self.finish(url, item.result)
            elif item.status_code in RETRY_STATUS:
                still.append(index)
                self.reason = f"HTTP {item.status_code} ({item.error}) for item {index} of POST {url}{self.path}"
                self.retry_after = str(item.retry_after_s) if item.retry_after_s is not None else None
            elif item.status_code == 404:
                self.outcomes[index] = SessionNotFound(item.error or "")
            else:
                self.outcomes[index] = RewardServerError(item.status_code, item.error or "")
        self.pending = still

    def give_up(self, attempts: int) -> None:
        self._end(self.pending, lambda _: RewardServerUnavailable(attempts, self.reason))

    def _end(self, indices: list[int], error: Callable[[int], OlmorlError]) -> None:
        for index in indices:
            self.outcomes[index] = error(index)
        self.pending = []


def per_replica(path: str, sessions: Sequence[Any], bodies: list[dict[str, Any]], reply: type[BatchReply[Any]],
                finish: Callable[[str, Any], Any]) -> list[tuple[list[int], Batch]]:
    """One Batch per replica the sessions live on (a session's calls go where it opened), with each item's
    session id and its own idempotency key; and which of the items given each batch holds."""
    items = [{"session_id": s.id, **body, "idempotency_key": new_key()} for s, body in zip(sessions, bodies)]
    groups: dict[str, list[int]] = {}
    for index, session in enumerate(sessions):
        groups.setdefault(session.url, []).append(index)
    return [(indices, Batch(path, [items[i] for i in indices], reply, finish, url=url))
            for url, indices in groups.items()]


ToolCalls = Sequence[tuple[Any, str, "dict[str, Any] | str"]]  # (session, tool name, arguments)
Answers = Sequence[tuple[Any, str] | tuple[Any, str, "Sequence[ChatMessage | dict[str, Any]] | None"]]


def tool_body(name: str, arguments: dict[str, Any] | str | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    if arguments is not None and kwargs:
        raise TypeError("pass the tool's arguments as one dict (or JSON text) or as keywords, not both")
    return {"name": name, "arguments": arguments if arguments is not None else kwargs}


def verify_body(response: str, messages: Sequence[ChatMessage | dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"response": response}
    if messages is not None:
        body["messages"] = [m.model_dump(exclude_none=True) if isinstance(m, BaseModel) else m for m in messages]
    return body


def verified(url: str, result: VerifyResult) -> VerifyResult:
    return apply_on_error([result], "zero")[0]  # as a single verify reads it: not ok keeps reward 0.0


def open_batch(requests: Sequence[SessionCreate | Mapping[str, Any]], finish: Callable[[str, Any], Any],
               replicas: Replicas) -> Batch:
    """The opens asked for on any replica, each with its own idempotency key (kept over the retries: an open
    whose reply was lost is answered with the session it opened, not opened twice)."""
    bodies = [r.model_dump(mode="json") if isinstance(r, BaseModel) else dict(r) for r in requests]
    keyed_bodies = [{**body, "idempotency_key": body.get("idempotency_key") or new_key()} for body in bodies]
    return Batch(OPEN_BATCH, keyed_bodies, BatchReply[SessionCreated], finish, replicas=replicas)


def tool_batches(calls: ToolCalls) -> list[tuple[list[int], Batch]]:
    return per_replica(TOOL_BATCH, [c[0] for c in calls], [tool_body(n, a, {}) for _, n, a in calls],
                       BatchReply[ToolResult], lambda url, result: result)


def verify_batches(answers: Answers) -> list[tuple[list[int], Batch]]:
    """The verifies of `answers`, one Batch per replica; each session is marked closed (verify ends it)."""
    for answer in answers:
        answer[0].closed = True
    return per_replica(VERIFY_BATCH, [a[0] for a in answers], [verify_body(*a[1:]) for a in answers],
                       BatchReply[VerifyResult], verified)


def close_batches(sessions: Sequence[Any]) -> list[tuple[list[int], Batch]]:
    """The closes of `sessions`, one Batch per replica; each session is marked closed (its `close` then sends
    nothing), as `verify` marks it."""
    for session in sessions:
        session.closed = True
    return per_replica(CLOSE_BATCH, sessions, [{}] * len(sessions), BatchReply[SessionClosed], lambda url, r: r)


def scatter(size: int, batches: list[tuple[list[int], Batch]]) -> list[Any]:
    """The outcomes of per-replica batches, back in the order of the items given."""
    out: list[Any] = [None] * size
    for indices, batch in batches:
        for index, outcome in zip(indices, batch.outcomes):
            out[index] = outcome
    return out
