"""Scores batches: validates each item, runs CPU-bound verifiers in a killable process pool and
I/O-bound ones on the event loop, and gives every item exactly one result, in order.

Timeouts are enforced from outside the worker (pebble kills and replaces the process), never with
`signal.alarm`, which only works in the main thread and silently broke SymPy checks in threaded
verifiers.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import resource
import time
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from pebble import ProcessExpired, ProcessPool
from pydantic import ValidationError

from olmorl.rewards._metrics import RewardMetrics
from olmorl.rewards._models import Status, VerifierInfo, VerifyItem, VerifyResult
from olmorl.rewards._registry import (InvalidInput, Score, Task, Verifier, canonical_name, current_request,
                                     load_verifiers)
from olmorl.rewards._settings import Settings

log = logging.getLogger("olmorl.rewards")

# -- worker side -------------------------------------------------------------------------------------
_worker_verifiers: dict[str, Verifier] = {}


def _init_worker(settings: Settings) -> None:
    """Runs once in each worker: build every pool verifier (imports SymPy etc.) and warm it up, then
    set the memory ceiling that bounds what scoring may add."""
    os.nice(settings.worker_nice)  # the event loop (health checks, I/O verifiers) wins the CPU over a busy worker
    for name, cls in load_verifiers(settings.plugins).items():
        if cls.runs_in == "pool":
            verifier = _worker_verifiers[name] = cls(settings)
            try:
                verifier.warm_up()
            except Exception:  # a failed warm-up only costs the first item its speed-up
                log.exception("warm-up of verifier %s failed", name)
    limit = settings.worker_memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _score_in_worker(name: str, task: Task) -> Score:
    return _worker_verifiers[name].score(task)


def _worker_ready() -> bool:
    return True


# -- server side -------------------------------------------------------------------------------------
def _result(raw_id: Any, verifier: str, status: Status, error: str | None = None, started: float = 0.0,
            reward: float = 0.0, details: dict[str, Any] | None = None) -> VerifyResult:
    return VerifyResult(
        id=raw_id if isinstance(raw_id, str) else None,
        verifier=verifier,
        reward=reward if status == "ok" else 0.0,
        status=status,
        error=error,
        details=details or {},
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3) if started else 0.0,
    )


class RewardEngine:
    def __init__(self, settings: Settings, metrics: RewardMetrics | None = None) -> None:
        self.settings = settings
        self.metrics = metrics or RewardMetrics()
        self.verifiers: dict[str, Verifier] = {
            name: cls(settings) for name, cls in load_verifiers(settings.plugins).items()
        }
        self._pool: ProcessPool | None = None
        self._ready = False

    # -- lifecycle -------------------------------------------------------------------------------------
    async def start(self) -> None:
        self._pool = ProcessPool(
            max_workers=self.settings.workers,
            max_tasks=self.settings.worker_max_tasks,
            initializer=_init_worker,
            initargs=(self.settings,),
        )
        # One round-trip per worker, so /readyz turns green only once every worker has its verifiers.
        warmups = [asyncio.wrap_future(self._pool.schedule(_worker_ready)) for _ in range(self.settings.workers)]
        await asyncio.gather(*warmups)
        for verifier in self.verifiers.values():
            if verifier.runs_in == "loop":
                await verifier.start()
        self._ready = True
        log.info("reward engine ready: %d workers, verifiers: %s", self.settings.workers, ", ".join(self.verifiers))

    async def stop(self) -> None:
        self._ready = False
        for verifier in self.verifiers.values():
            if verifier.runs_in == "loop":
                await verifier.stop()
        if self._pool is not None:
            self._pool.stop()
            await asyncio.to_thread(self._pool.join, 10)
            self._pool = None

    def readiness(self) -> dict[str, Any]:
        states = {name: v.readiness() for name, v in self.verifiers.items()}
        extra = {name: state for name, state in states.items() if state is not None}
        return {"ready": self._ready, "workers": self.settings.workers, "verifiers": extra}

    def describe(self) -> list[VerifierInfo]:
        return [v.info() for v in self.verifiers.values()]

    # -- scoring ---------------------------------------------------------------------------------------
    async def verify_batch(self, raw_items: list[Any]) -> list[VerifyResult]:
        """Score raw (unvalidated) items; one result per item, in order, whatever fails."""
        token = current_request.set(object())  # the items' tasks inherit it
        try:
            return list(await asyncio.gather(*(self.verify_one(raw) for raw in raw_items)))
        finally:
            current_request.reset(token)

    async def verify_one(self, raw: Any) -> VerifyResult:
        started = time.perf_counter()
        self.metrics.inflight.inc()
        try:
            result = await self._verify(raw, started)
        finally:
            self.metrics.inflight.dec()
        self.metrics.items.labels(result.verifier, result.status).inc()
        self.metrics.item_latency.labels(result.verifier).observe(time.perf_counter() - started)
        return result

    async def _verify(self, raw: Any, started: float) -> VerifyResult:
        raw_id = raw.get("id") if isinstance(raw, dict) else None
        raw_name = raw.get("verifier") if isinstance(raw, dict) else None
        label = raw_name if isinstance(raw_name, str) else ""
        try:
            item = raw if isinstance(raw, VerifyItem) else VerifyItem.model_validate(raw)
        except ValidationError as exc:
            return _result(raw_id, label, "invalid", f"item: {_describe(exc)}", started)
        name = canonical_name(item.verifier)
        if name is None or name not in self.verifiers:
            return _result(item.id, item.verifier, "invalid",
                           f"unknown verifier {item.verifier!r} (GET /v1/verifiers lists them)", started)
        if len(item.response) > self.settings.max_response_chars:
            return _result(item.id, name, "invalid",
                           f"response has {len(item.response)} characters; the limit is "
                           f"{self.settings.max_response_chars} (max_response_chars)", started)
        verifier = self.verifiers[name]
        try:
            task = verifier.make_task(item.response, item.ground_truth, item.options, item.prompt)
        except InvalidInput as exc:
            return _result(item.id, name, "invalid", str(exc), started)

        deadline = verifier.deadline_s(task)
        try:
            if verifier.runs_in == "pool":
                score = await self._run_in_pool(name, task, deadline or self.settings.item_timeout_s)
            else:
                score = await asyncio.wait_for(verifier.score_async(task), timeout=deadline)
        except InvalidInput as exc:
            return _result(item.id, name, "invalid", str(exc), started)
        except (FutureTimeout, asyncio.TimeoutError):
            if verifier.runs_in == "pool":
                self.metrics.worker_restarts.labels("timeout").inc()
            return _result(item.id, name, "timeout", f"no result within {deadline:g} s" if deadline else "timed out", started,
                           details={"reason": "timeout"})
        except ProcessExpired as exc:
            self.metrics.worker_restarts.labels("died").inc()
            return _result(item.id, name, "error",
                           f"worker process died (exit code {exc.exitcode}); memory ceiling is "
                           f"{self.settings.worker_memory_mb} MiB", started)
        except MemoryError:
            return _result(item.id, name, "error",
                           f"out of memory (worker ceiling {self.settings.worker_memory_mb} MiB)", started)
        except Exception as exc:  # a verifier bug must cost one item, not the batch
            log.exception("verifier %s failed", name)
            return _result(item.id, name, "error", f"{type(exc).__name__}: {exc}", started)

        if not isinstance(score.reward, (int, float)) or not math.isfinite(score.reward):
            return _result(item.id, name, "error", f"verifier returned a non-finite reward {score.reward!r}",
                           started, details=score.details)
        return _result(item.id, name, score.status, score.error, started, float(score.reward), score.details)

    async def _run_in_pool(self, name: str, task: Task, deadline: float) -> Score:
        if self._pool is None:
            raise RuntimeError("reward engine is not started")
        future = self._pool.schedule(_score_in_worker, args=(name, task), timeout=deadline)
        return await asyncio.wrap_future(future)


def _describe(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in err["loc"])
    return f"{loc}: {err['msg']}" if loc else err["msg"]
