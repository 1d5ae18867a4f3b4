"""`RequestCounter`: counts every HTTP request by route and status code (`olmorl_requests_total`).

A plain ASGI middleware: it reads the status from the reply's start message and the route from the scope the
router filled in. (Starlette's `@app.middleware("http")` would run each request in a task group and pass the
reply through a stream: ~200 us of the event loop per request, most of the stack's cost, and a trainer's 64
rollouts send their opens, tool calls and verifies at once.)
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from prometheus_client import Counter

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[dict[str, Any], Receive, Send], Awaitable[None]]


class RequestCounter:
    def __init__(self, app: App, requests: Counter, static_prefix: str) -> None:
        self.app, self.requests, self.static_prefix = app, requests, static_prefix

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status: list[int] = []

        async def send_noting_status(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        await self.app(scope, receive, send_noting_status)
        if status:  # (an exception escaped before any reply: the server's error handler answers 500, uncounted)
            self.requests.labels(self._route(scope), str(status[0])).inc()

    def _route(self, scope: dict[str, Any]) -> str:
        route = getattr(scope.get("route"), "path", None)
        if route is None and scope.get("path", "").startswith(self.static_prefix + "/"):
            route = self.static_prefix
        return route or "unmatched"
