"""A scripted judge: a real uvicorn server on 127.0.0.1 speaking OpenAI chat completions.

Stands in for the one part that cannot run here (an LLM). Behaviour is chosen by the request itself: a
marker `[[fake: step; step; ...]]` anywhere in the messages (the judge prompt embeds the graded
response, so an item scripts its own judge). The n-th call with the same messages plays the n-th step;
the last step repeats. Without a marker the server plays `default_script`.

Steps: `json N` (plain JSON verdict), `upper N` (open-instruct's {"REASONING", "SCORE": "N"}), `fenced N`
(```json fence after prose), `think N` (<think> with a decoy score, then JSON), `pattern N` (prose ending
"Score: N"), `garbage`, `empty`, `429 [S]` (Retry-After: S), `500`, `503`, `400`, `slow S [N]` (sleep S
seconds, then `json N`), `drop` (headers sent, then the connection is closed mid-body), `echo [N]` (a
judge that quotes the graded response, fake verdicts and all, comments, then gives `json N` or no
verdict; `echo KIND ARG` ends with that verdict instead), `cut` (quotes the response and is cut off:
finish_reason "length"). Rubric and comparative verdicts: `met true|false|X` ({"met": ...}), `winner
A|B|tie|X` and `positional 9,5,1` (by position, whatever the content: a position-biased judge), and
`compare` (a consistent judge: each shown response is worth the `q=N` written in it).

Usage in tests: `with FakeOpenAI() as judge: judge.url` (the base URL with /v1). As a process (for
benchmarks): `python tests/fake_openai.py --latency-ms 200` prints `READY <url>` on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import sys
import threading
import time
from collections import Counter
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

_MARKER = re.compile(r"\[\[fake:(.*?)\]\]", re.DOTALL)
_RESPONSE_BLOCK = re.compile(r"<response>\n(.*)\n</response>", re.DOTALL)


def _verdict(kind: str, score: str) -> str:
    if kind == "json":
        return json.dumps({"reasoning": "Scripted verdict.", "score": int(float(score))})
    if kind == "upper":
        return json.dumps({"REASONING": "Scripted verdict.", "SCORE": score})
    if kind == "fenced":
        return f"The answer is decent.\n```json\n{{\"reasoning\": \"Fenced verdict.\", \"score\": {score}}}\n```\n"
    if kind == "think":
        return (f"<think>Maybe {{\"score\": 1}}? No, looking again it deserves {score}.</think>\n"
                f"{{\"reasoning\": \"Thought first.\", \"score\": {score}}}")
    if kind == "pattern":
        return f"Overall the response is reasonable.\n**Score:** {score}/10"
    if kind == "met":  # rubric criterion verdict: `met true`, `met false`, or anything else verbatim
        value = {"true": True, "false": False}.get(score, score)
        return json.dumps({"reasoning": "Scripted criterion verdict.", "met": value})
    if kind == "winner":  # pairwise, by position whatever the content: a position-biased judge
        return json.dumps({"reasoning": "Scripted pairwise verdict.", "winner": score})
    if kind == "positional":  # group scores by position whatever the content: `positional 9,5,1`
        return json.dumps({"reasoning": "Scripted group verdict.", "scores": [int(x) for x in score.split(",")]})
    raise ValueError(kind)


def _content_verdict(prompt: str) -> str:
    """A consistent comparative judge: each shown response is worth the `q=N` written in it; pairwise
    (<response_A>/<response_B>) names the better one (or a tie), a group gets the scores in shown order."""
    blocks = re.findall(r"<response_(\w+)>\n(.*?)\n</response_\1>", prompt, re.DOTALL)
    worth = {label: int(m.group(1)) if (m := re.search(r"q=(\d+)", text)) else 0 for label, text in blocks}
    if set(worth) == {"A", "B"}:
        winner = "tie" if worth["A"] == worth["B"] else max(worth, key=worth.__getitem__)
        return json.dumps({"reasoning": "Compared both.", "winner": winner})
    return json.dumps({"reasoning": "Scored each.", "scores": [worth[label] for label, _ in blocks]})


class FakeOpenAI:
    def __init__(self, *, latency_s: float = 0.0, default_script: str = "json 7",
                 models: tuple[str, ...] = ("judge-model",)) -> None:
        self.latency_s = latency_s
        self.default_script = default_script
        self.models = models
        self.requests: list[dict[str, Any]] = []  # every chat-completions body received
        self.calls_per_prompt: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0  # most chat calls being answered at once
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.app = self._build_app()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- the protocol --------------------------------------------------------------------------------
    def _build_app(self) -> FastAPI:
        app = FastAPI()

        @app.get("/v1/models")
        async def models() -> dict[str, Any]:
            return {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                                               for m in self.models]}

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Any:
            body = await request.json()
            self.requests.append(body)
            text = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
            match = _MARKER.search(text)
            steps = [s.strip() for s in (match.group(1) if match else self.default_script).split(";") if s.strip()]
            index = self.calls_per_prompt[text]
            self.calls_per_prompt[text] += 1
            step = steps[min(index, len(steps) - 1)].split()
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                if self.latency_s:
                    await asyncio.sleep(self.latency_s)
                return await self._play(step, body)
            finally:
                self.in_flight -= 1

        return app

    async def _play(self, step: list[str], body: dict[str, Any]) -> Any:
        kind, args = step[0], step[1:]
        if kind == "429":
            headers = {"Retry-After": args[0]} if args else {}
            return JSONResponse({"error": {"message": "rate limited", "type": "rate_limit"}}, 429, headers)
        if kind in ("500", "503", "400"):
            return JSONResponse({"error": {"message": f"scripted {kind}", "type": "server_error"}}, int(kind))
        if kind == "drop":
            async def broken():
                yield b'{"id": "chatcmpl-drop", '
                raise ConnectionResetError("scripted drop")
            return StreamingResponse(broken(), media_type="application/json")
        if kind == "slow":
            await asyncio.sleep(float(args[0]))
            kind, args = "json", args[1:] or ["7"]
        finish = "stop"
        prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
        block = _RESPONSE_BLOCK.search(prompt)
        quoted = _MARKER.sub("", block.group(1) if block else "").strip()
        if kind == "echo":
            content = f'The response says: "{quoted}"\nIt tries to dictate its own grade.'
            if args:  # `echo N` ends with `json N`; `echo KIND ARG` with that verdict
                content += "\n" + (_verdict("json", args[0]) if len(args) == 1 else _verdict(args[0], args[1]))
        elif kind == "compare":
            content = _content_verdict(prompt)
        elif kind == "cut":
            content, finish = f"The response says: {quoted}", "length"
        elif kind == "garbage":
            content = "I find this response hard to evaluate; it has strengths and weaknesses."
        elif kind == "empty":
            content = ""
        else:
            content = _verdict(kind, args[0] if args else "7")
        return JSONResponse({"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                             "model": body.get("model", ""), "choices": [{"index": 0, "finish_reason": finish,
                             "message": {"role": "assistant", "content": content}}],
                             "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})

    # -- running -------------------------------------------------------------------------------------
    def start(self) -> FakeOpenAI:
        # proto=IPPROTO_TCP so asyncio sets TCP_NODELAY on accepted connections (it skips proto 0);
        # without it, Nagle + delayed ACK add ~40 ms to every keep-alive request.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="critical", access_log=False, lifespan="off",
                                timeout_keep_alive=30)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake OpenAI server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)  # type: ignore[union-attr]
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--default-script", default="json 7")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    fake = FakeOpenAI(latency_s=args.latency_ms / 1000, default_script=args.default_script)
    fake.port = args.port
    fake.start()
    print(f"READY {fake.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()
        sys.exit(0)


if __name__ == "__main__":
    main()
