"""A reward server that fails on cue, for the client's retry and failover tests.

It speaks the real `/v1/verify` protocol over real HTTP (uvicorn on 127.0.0.1) but scores trivially
(reward 1 when `response == ground_truth`) and answers the next scripted failure first: an HTTP status
(with headers such as Retry-After) or a dropped connection. The real server cannot be made to answer
503 or 429 on demand, which is why this exists.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from olmorl.rewards.service._local import free_port


@dataclass
class Failure:
    status: int = 503
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass
class Seen:
    at: float
    items: list[dict[str, Any]]
    authorization: str | None


class FakeRewardServer:
    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.script: list[Failure] = []  # consumed one per request, before scoring
        self.requests: list[Seen] = []  # every request received, failed ones included
        self.delay_s = 0.0  # added latency of a successful answer
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def fail_next(self, *failures: Failure) -> None:
        self.script.extend(failures)

    @property
    def scored(self) -> int:
        """Items answered with a 200."""
        return sum(len(seen.items) for seen in self.requests if seen.at >= 0)

    def _app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/verify")
        async def verify(request: Request) -> JSONResponse:
            items = (await request.json())["items"]
            failure = self.script.pop(0) if self.script else None
            self.requests.append(Seen(-1.0 if failure else time.monotonic(), items,
                                      request.headers.get("authorization")))
            if failure is not None:
                return JSONResponse(failure.body or {"detail": f"scripted {failure.status}"},
                                    status_code=failure.status, headers=failure.headers)
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            return JSONResponse({"results": [
                {"id": item.get("id"), "verifier": item["verifier"], "status": "ok",
                 "reward": float(item["response"] == item.get("ground_truth")), "details": {"port": self.port}}
                for item in items
            ]})

        return app

    def start(self) -> "FakeRewardServer":
        config = uvicorn.Config(self._app(), host="127.0.0.1", port=self.port, log_level="warning",
                                lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"fake reward server on {self.url} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            assert self._thread is not None
            self._thread.join(10)
            self._server = None

    def __enter__(self) -> "FakeRewardServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
