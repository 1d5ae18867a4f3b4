"""The request counter (`olmorl_requests_total`) through the real app's ASGI stack, in process: every request is
counted by route and status, and counting it starts no task (each task is event-loop time that a trainer's 64
rollouts, opening sessions at once, queue behind)."""

from __future__ import annotations

import asyncio
from typing import Any

from olmorl.rewards.service._server import create_app


async def request(app: Any, path: str) -> int:
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"test")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2)}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"]


def test_requests_are_counted_by_route_and_status_without_starting_a_task():
    app = create_app()
    tasks: list[Any] = []

    async def run() -> None:
        loop = asyncio.get_running_loop()
        await request(app, "/healthz")  # the app builds its middleware stack on the first request

        def counting_factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
            tasks.append(coro)
            return asyncio.Task(coro, loop=loop, **kwargs)

        loop.set_task_factory(counting_factory)
        try:
            assert await request(app, "/healthz") == 200
            assert await request(app, "/no/such/route") == 404
        finally:
            loop.set_task_factory(None)

    asyncio.run(run())
    assert tasks == []  # (Starlette's @app.middleware("http") runs each request in a task group: 1+ each)
    text = app.state.engine.metrics.render().decode()
    assert 'olmorl_requests_total{code="200",route="/healthz"} 2.0' in text
    assert 'olmorl_requests_total{code="404",route="unmatched"} 1.0' in text
