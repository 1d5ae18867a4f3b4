"""A session-API server (POST /v1/sessions, /tool, /verify; DELETE) for the trainer's multi-turn tests.

Stepping stone until the reward server's own sessions (issue 17 sections 1-2) are merged: it speaks the
issue's wire protocol over real HTTP (uvicorn on 127.0.0.1) with one environment, `python`, whose tool runs
the code in a real `python3` subprocess (no persistent state) and whose /verify compares the last
`\\boxed{...}` with the task's ground truth. `tool_delay_s` holds every tool call that long. `/v1/verify`
is forwarded to a real reward server (`verify_url`) so single-turn rows of the same run are scored for real.
"""

from __future__ import annotations

import asyncio
import re
import sys
import threading
import time
import uuid

import httpx
import uvicorn
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import Response

from olmorl.rewards._local import free_port

TOOLS = [{"type": "function", "function": {
    "name": "python", "description": "Run Python code; returns its stdout and stderr.",
    "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}}]


class SessionEnvServer:
    def __init__(self, tool_delay_s: float = 0.0, verify_url: str | None = None) -> None:
        self.verify_url = verify_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tool_delay_s = tool_delay_s
        self.sessions: dict[str, dict] = {}
        self.calls: list[tuple[str, str, dict]] = []  # (session id, tool, arguments) in arrival order
        self.created = self.verified = self.deleted = 0
        self._server: uvicorn.Server | None = None

    def _app(self) -> FastAPI:
        app = FastAPI()

        def session(sid: str) -> dict:
            if sid not in self.sessions:
                raise HTTPException(404, f"unknown or expired session {sid!r}")
            return self.sessions[sid]

        @app.post("/v1/verify")
        async def forward_verify(request: Request):
            async with httpx.AsyncClient(timeout=60) as client:
                r = await client.post(f"{self.verify_url}/v1/verify", content=await request.body(),
                                      headers={"content-type": "application/json"})
            return Response(r.content, status_code=r.status_code, media_type="application/json")

        @app.post("/v1/sessions")
        async def create(body: dict):
            if body.get("env") != "python":
                raise HTTPException(400, f"unknown env {body.get('env')!r}; available: ['python']")
            sid = uuid.uuid4().hex
            self.sessions[sid] = {"task": body.get("task") or {}}
            self.created += 1
            return {"session_id": sid, "env": "python", "tools": TOOLS, "observation": None}

        @app.post("/v1/sessions/{sid}/tool")
        async def tool(sid: str, body: dict):
            session(sid)
            self.calls.append((sid, body.get("name"), body.get("arguments")))
            start = time.perf_counter()
            await asyncio.sleep(self.tool_delay_s)
            code = (body.get("arguments") or {}).get("code")
            if body.get("name") != "python" or not isinstance(code, str):
                return {"output": "", "status": "invalid", "error": "call python with a string argument `code`",
                        "reward": None, "done": False, "elapsed_ms": 0.0}
            proc = await asyncio.create_subprocess_exec(sys.executable, "-I", "-c", code, stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.STDOUT)
            try:
                out, _ = await asyncio.wait_for(proc.communicate(), 10)
            except asyncio.TimeoutError:
                proc.kill()
                return {"output": "", "status": "timeout", "error": "ran past 10 s", "reward": None, "done": False,
                        "elapsed_ms": 10000.0}
            return {"output": out.decode()[-500:], "status": "ok", "error": None, "reward": None, "done": False,
                    "elapsed_ms": (time.perf_counter() - start) * 1000}

        @app.post("/v1/sessions/{sid}/verify")
        async def verify(sid: str, body: dict):
            task = session(sid)["task"]
            del self.sessions[sid]
            self.verified += 1
            boxed = re.findall(r"\\boxed\{([^{}]*)\}", body.get("response", ""))
            ok = bool(boxed) and boxed[-1].strip() == str(task.get("ground_truth"))
            return {"verifier": "python", "reward": float(ok), "status": "ok", "error": None,
                    "details": {"reward_components": {"answer": float(ok)}}, "elapsed_ms": 0.0}

        @app.delete("/v1/sessions/{sid}")
        async def delete(sid: str):
            session(sid)
            del self.sessions[sid]
            self.deleted += 1
            return {"session_id": sid, "closed": True}

        return app

    def start(self) -> "SessionEnvServer":
        config = uvicorn.Config(self._app(), host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        threading.Thread(target=self._server.run, daemon=True).start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("session env server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
