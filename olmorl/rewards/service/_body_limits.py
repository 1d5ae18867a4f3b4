"""`BodyLimits`: one ASGI middleware that bounds every request body before any route sees it.

It reads the body itself and counts the bytes as they stream in, so a chunked body with no Content-Length is
bounded too (413 past `max_body_bytes`); a body that looks like JSON has its nesting checked once against
`max_json_depth` (422), so no route's parser (ours, FastAPI's, a plugin's) meets a pathological body. The route
then gets the body as read.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_ESCAPES = (b"\\\\", b'\\"')  # removed first, so every quote left opens or closes a string
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'[]{}"')
_ONE_BRACKET = bytes.maketrans(b"{}", b"[]")  # a mismatched pair is the parser's error, not a depth
_IN_THREAD = 1 << 20  # bodies past this are scanned off the event loop


def nesting_exceeds(body: bytes, limit: int) -> bool:
    """Whether the JSON text nests arrays/objects deeper than `limit` (brackets inside strings ignored). Each pass
    removes the innermost empty pairs, at C speed: about as fast as json.loads on a typical batch."""
    for escape in _ESCAPES:
        body = body.replace(escape, b"")
    outside_strings = b"".join(body.translate(None, _NOT_STRUCTURE).split(b'"')[::2])
    shape = outside_strings.translate(_ONE_BRACKET)
    for _ in range(limit):
        if not shape:
            return False
        shorter = shape.replace(b"[]", b"")
        if len(shorter) == len(shape):  # unbalanced: not JSON, which the route's parser reports
            return False
        shape = shorter
    return bool(shape)


class BodyLimits:
    def __init__(self, app: Callable[..., Awaitable[None]], max_body_bytes: int, max_json_depth: int) -> None:
        self.app, self.max_body_bytes, self.max_json_depth = app, max_body_bytes, max_json_depth

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_body_bytes
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await _refuse(send, 413, f"body of {int(declared)} bytes exceeds max_body_bytes={limit}")
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _refuse(send, 413, f"body exceeds max_body_bytes={limit}")
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if body.lstrip()[:1] in (b"[", b"{"):
            scan = nesting_exceeds(body, self.max_json_depth) if len(body) < _IN_THREAD else \
                await asyncio.to_thread(nesting_exceeds, body, self.max_json_depth)
            if scan:
                await _refuse(send, 422, [{"loc": ["body"], "type": "json_invalid",
                                           "msg": f"body nests deeper than max_json_depth={self.max_json_depth} "
                                                  "levels of arrays/objects"}])
                return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: the client's disconnect, for routes that watch for it

        await self.app(scope, replay, send)


async def _refuse(send: Send, status: int, detail: Any) -> None:
    content = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": content})
