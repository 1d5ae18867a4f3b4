"""The trainer's calls to the reward server's session API (POST /v1/sessions, /tool, /verify; DELETE).

Failures are never rewards: a refused row (4xx) raises `RolloutError("invalid")`, an unreachable or failing
server (after retries; 503 waits for its Retry-After) raises `RolloutError("error")`; the loop drops the group.
"""

from __future__ import annotations

import asyncio
import itertools
from types import SimpleNamespace
from typing import Any

import httpx

from olmorl.clients import VerifyResult


class RolloutError(RuntimeError):
    """The session or its server failed (not the model's fault): the rollout's group is dropped, not scored 0."""

    def __init__(self, message: str, status: str = "error") -> None:
        super().__init__(message)
        self.status = status  # invalid: the row/env refused it | error: infrastructure


class SessionCalls:
    """Async session calls over one or more reward servers (a session stays on the server that opened it)."""

    def __init__(self, urls: list[str], *, api_key: str | None = None, timeout_s: float = 60.0,
                 max_retries: int = 3, max_wait_s: float = 300.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx.Limits(max_connections=512, max_keepalive_connections=64)
        self._clients = [httpx.AsyncClient(base_url=u.rstrip("/"), headers=headers, limits=limits,
                                           timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 5.0)))
                         for u in urls]
        self._next = itertools.cycle(range(len(self._clients)))
        self._home: dict[str, httpx.AsyncClient] = {}
        self.max_retries, self.max_wait_s = max_retries, max_wait_s

    async def _post(self, client: httpx.AsyncClient, method: str, path: str, body: dict | None = None) -> dict:
        waited, failures = 0.0, 0
        while True:
            try:
                r = await client.request(method, path, json=body)
            except httpx.TransportError as exc:
                failures += 1
                if failures > self.max_retries:
                    raise RolloutError(f"{method} {path}: reward server unreachable: {exc!r}") from exc
                await asyncio.sleep(0.2 * 2 ** failures)
                continue
            if r.status_code == 503 and waited < self.max_wait_s:  # session limit reached: wait as told
                delay = float(r.headers.get("Retry-After") or 1.0)
                waited += delay
                await asyncio.sleep(delay)
                continue
            if r.status_code >= 400:
                status = "invalid" if 400 <= r.status_code < 500 and r.status_code not in (401, 403, 404) else "error"
                raise RolloutError(f"{method} {path}: HTTP {r.status_code}: {r.text[:500]}", status)
            return r.json()

    async def create(self, env: str, task: Any, options: dict | None = None) -> SimpleNamespace:
        client = self._clients[next(self._next)]
        body = await self._post(client, "POST", "/v1/sessions", {"env": env, "task": task, "options": options or {}})
        self._home[body["session_id"]] = client
        return SimpleNamespace(session_id=body["session_id"], tools=body.get("tools") or [],
                               observation=body.get("observation"))

    async def tool(self, session_id: str, name: str, arguments: dict) -> SimpleNamespace:
        body = await self._post(self._home[session_id], "POST", f"/v1/sessions/{session_id}/tool",
                                {"name": name, "arguments": arguments})
        return SimpleNamespace(output=body.get("output", ""), status=body.get("status", "error"),
                               error=body.get("error"), reward=body.get("reward"), done=bool(body.get("done")))

    async def verify(self, session_id: str, response: str, messages: list[dict]) -> VerifyResult:
        body = await self._post(self._home[session_id], "POST", f"/v1/sessions/{session_id}/verify",
                                {"response": response, "messages": messages})
        self._home.pop(session_id, None)  # /verify ended it
        return VerifyResult.model_validate(body)

    async def close(self, session_id: str) -> None:
        client = self._home.pop(session_id, None)
        if client is not None:
            try:
                await client.delete(f"/v1/sessions/{session_id}")
            except httpx.HTTPError:
                pass  # the server's idle TTL removes it

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()
