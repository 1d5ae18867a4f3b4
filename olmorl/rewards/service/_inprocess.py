"""Scoring without a server: the reward server's engine, run in this process.

`verify(items, **settings)` gives what `POST /v1/verify` answers for the same items, on a server started
with the same settings: the items travel as JSON, the results come back through the server's encoder, so
even odd details read the same. Settings are `Settings` fields (`workers=2`, `sandbox={"backend": "bwrap"}`),
on top of the OLMORL_* environment, as for the server. Starting the worker pool and the sandbox takes
seconds, so repeated calls want one `InProcessVerifier` (or its async twin) kept open.

The engine forks its workers from this process, as the server does from its own. It needs the `[server]`
extra; it is imported when a verifier starts, never by `import olmorl`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import difflib
import gc
import json
import threading
from typing import TYPE_CHECKING, Any, Iterable

from pydantic import TypeAdapter

from olmorl.rewards._models import VerifierInfo, VerifyItem, VerifyResult

if TYPE_CHECKING:
    from olmorl.rewards.engine._engine import RewardEngine
    from olmorl.rewards._settings import Settings

__all__ = ["AsyncInProcessVerifier", "InProcessVerifier", "averify", "verify"]

_RESULTS = TypeAdapter(list[VerifyResult])


def make_settings(overrides: dict[str, Any]) -> "Settings":
    """`Settings` from keyword overrides; a name that is no Settings field is an error (Settings itself ignores
    unknown names, which would let a typo pass for a setting)."""
    try:
        from olmorl.rewards._settings import Settings
    except ImportError as exc:
        raise ImportError(f"scoring in-process runs the reward server's engine, which needs the [server] extra: "
                          f"pip install 'olmorl[server]' ({exc})") from None
    unknown = sorted(set(overrides) - set(Settings.model_fields))
    if unknown:
        hints = [f"{name!r} (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(
            name, Settings.model_fields, n=1)) else repr(name) for name in unknown]
        raise TypeError(f"unknown setting {', '.join(hints)}: settings are the fields of "
                        f"olmorl.rewards._settings.Settings (docs/settings.md)")
    return Settings(**overrides)


def _engine(settings: "Settings") -> "RewardEngine":
    try:
        from olmorl.rewards.engine._engine import RewardEngine
    except ImportError as exc:
        raise ImportError(f"scoring in-process needs the [server] extra: pip install 'olmorl[server]' ({exc})") from None
    return RewardEngine(settings)


def _as_item_list(items: Iterable[VerifyItem | dict[str, Any]]) -> list[Any]:
    if isinstance(items, (str, bytes, dict, VerifyItem)) or not isinstance(items, Iterable):
        raise TypeError(f"items must be a list of items (dicts or VerifyItem), not {type(items).__name__}")
    return list(items)


def _wire(item: Any) -> Any:
    """The item as the server would read it from a request body: a JSON value. An item with no JSON form is
    returned as the `invalid` result it gets."""
    if isinstance(item, VerifyItem):
        return item.model_dump(mode="json", exclude_none=True)  # what the clients send
    try:
        return json.loads(json.dumps(item))
    except (TypeError, ValueError, RecursionError) as exc:
        raw_id = item.get("id") if isinstance(item, dict) else None
        raw_name = item.get("verifier") if isinstance(item, dict) else None
        return VerifyResult(id=raw_id if isinstance(raw_id, str) else None,
                            verifier=raw_name if isinstance(raw_name, str) else "", reward=None, status="invalid",
                            error=f"item: not JSON, so no server could receive it: {type(exc).__name__}: {exc}")


async def _score(engine: "RewardEngine", items: Iterable[VerifyItem | dict[str, Any]]) -> list[VerifyResult]:
    """One result per item, in order. Batches past `max_items_per_request` (a 413 on the server) are scored in
    batches of that size, as the clients split them."""
    wire = [_wire(item) for item in _as_item_list(items)]
    results: list[VerifyResult | None] = [w if isinstance(w, VerifyResult) else None for w in wire]
    todo = [index for index, result in enumerate(results) if result is None]
    size = engine.settings.max_items_per_request
    for start in range(0, len(todo), size):
        indexes = todo[start:start + size]
        _, encoded = await engine.verify_batch_encoded([wire[i] for i in indexes])
        for index, result in zip(indexes, _RESULTS.validate_json(encoded)):  # read back as a client reads it
            results[index] = result
    return results  # type: ignore[return-value]  # every slot filled


class AsyncInProcessVerifier:
    """`async with AsyncInProcessVerifier(workers=2) as v: await v.verify(items)`: the engine runs on the caller's
    event loop (and must be used on that loop only); started on entry or at the first call, stopped by
    `aclose()`."""

    def __init__(self, **settings: Any) -> None:
        self.settings = make_settings(settings)
        self._engine: RewardEngine | None = None
        self._starting = asyncio.Lock()
        self._closed = False

    async def start(self) -> "AsyncInProcessVerifier":
        async with self._starting:
            if self._closed:
                raise RuntimeError("this AsyncInProcessVerifier is closed")
            if self._engine is None:
                engine = _engine(self.settings)
                frozen = gc.get_freeze_count()
                await engine.start()
                if not frozen:
                    # The pool froze the heap so that its workers' collections skip it; in a server that heap
                    # lives as long as the process, here it is the caller's, and what of it dies later must still
                    # be collected. The workers forked so far keep their frozen copy.
                    gc.unfreeze()
                self._engine = engine
        return self

    async def verify(self, items: Iterable[VerifyItem | dict[str, Any]]) -> list[VerifyResult]:
        """What `POST /v1/verify` answers for these items: one result per item, in order, whatever fails."""
        await self.start()
        return await _score(self._engine, items)  # type: ignore[arg-type]

    async def verifiers(self) -> list[VerifierInfo]:
        """What `GET /v1/verifiers` answers: names, aliases, ground-truth and options schemas."""
        await self.start()
        return self._engine.describe()  # type: ignore[union-attr]

    async def aclose(self) -> None:
        self._closed = True
        engine, self._engine = self._engine, None
        if engine is not None:
            await engine.stop()

    async def __aenter__(self) -> "AsyncInProcessVerifier":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class InProcessVerifier:
    """`with InProcessVerifier(workers=2) as v: v.verify(items)`: the engine runs on an event loop of its own, in a
    thread, started here and stopped by `close()`; `verify` blocks, from any thread, inside a running event loop
    too. `submit` returns a `concurrent.futures.Future` instead (`await asyncio.wrap_future(v.submit(items))` from
    any event loop)."""

    def __init__(self, **settings: Any) -> None:
        self._async = AsyncInProcessVerifier(**settings)
        self.settings = self._async.settings
        self._runner = asyncio.Runner()
        self._loop = self._runner.get_loop()
        self._thread = threading.Thread(target=self._serve, name="olmorl-in-process", daemon=True)
        self._thread.start()
        try:
            self._run(self._async.start())
        except BaseException:
            self.close()
            raise

    def submit(self, items: Iterable[VerifyItem | dict[str, Any]]) -> concurrent.futures.Future[list[VerifyResult]]:
        items = _as_item_list(items)  # a wrong argument raises here, in the caller
        return self._submit(self._async.verify(items))

    def verify(self, items: Iterable[VerifyItem | dict[str, Any]]) -> list[VerifyResult]:
        """What `POST /v1/verify` answers for these items: one result per item, in order, whatever fails."""
        return self.submit(items).result()

    def verifiers(self) -> list[VerifierInfo]:
        """What `GET /v1/verifiers` answers: names, aliases, ground-truth and options schemas."""
        return self._run(self._async.verifiers())

    def _serve(self) -> None:
        # closing the runner, as asyncio.run does, cancels what is left (a dead worker's reaper) and shuts down
        # the async generators and the default executor
        with self._runner:
            self._loop.run_forever()

    def _submit(self, coroutine: Any) -> concurrent.futures.Future[Any]:
        if self._loop.is_closed():
            coroutine.close()
            raise RuntimeError("this InProcessVerifier is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def _run(self, coroutine: Any) -> Any:
        return self._submit(coroutine).result()

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        try:
            self._run(self._async.aclose())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()

    def __enter__(self) -> "InProcessVerifier":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def verify(items: Iterable[VerifyItem | dict[str, Any]], **settings: Any) -> list[VerifyResult]:
    """Score `items` in this process, as `POST /v1/verify` would on a server with these settings. Starts and stops
    a worker pool (seconds): for repeated calls keep an `InProcessVerifier` open."""
    with InProcessVerifier(**settings) as verifier:
        return verifier.verify(items)


async def averify(items: Iterable[VerifyItem | dict[str, Any]], **settings: Any) -> list[VerifyResult]:
    """The async twin of `verify`, on the caller's event loop."""
    async with AsyncInProcessVerifier(**settings) as verifier:
        return await verifier.verify(items)
