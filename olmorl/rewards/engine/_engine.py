"""Scores batches: validates each item, sends CPU-bound verifiers to a killable process pool in
chunks (olmorl.rewards.engine._pool) and runs I/O-bound ones on the event loop, and gives every item
exactly one result, in order.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections import Counter
from dataclasses import replace
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from olmorl.rewards._metrics import RewardMetrics
from olmorl.rewards._models import Status, VerifierInfo, VerifyItem, VerifyResult
from olmorl.rewards.engine._pool import ChunkedPool, PoolJob
from olmorl.rewards.engine._registry import (InvalidInput, ItemError, Score, Task, Verifier, canonical_name, current_request,
                                      load_verifiers)
from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._composite import COMPOSITE, CompositePlan

log = logging.getLogger("olmorl.rewards")

UNKNOWN_LABEL = "unknown"  # the metric label of every item whose verifier is not registered

# A validated item: (id, verifier name, verifier, task, ground truth as text).
Prepared = tuple[Any, str, Verifier, Any, str]

# The question `check_item` validates with: the real one is the session's conversation, not known at its start.
CHECK_PROMPT = "(the session's question)"

# Validation runs on the event loop; it yields after this many items so /healthz stays fast.
_ITEMS_PER_YIELD = 128


# -- server side -------------------------------------------------------------------------------------
def _result(raw_id: Any, verifier: str, status: Status, error: str | None = None, seconds: float = 0.0,
            reward: float = 0.0, details: dict[str, Any] | None = None) -> VerifyResult:
    """`seconds`: how long this item took where it ran (a worker, the sandbox, the event loop), not its batch."""
    elapsed_ms = round(seconds * 1000, 3)
    item_id = raw_id if isinstance(raw_id, str) else None
    try:
        return VerifyResult(id=item_id, verifier=verifier, reward=reward if status == "ok" else None, status=status,
                            error=error, details=details or {}, elapsed_ms=elapsed_ms)
    except ValidationError as exc:  # a Score the API cannot carry: a bad status, details keyed by numbers, ...
        got = exc.errors(include_url=False)[0]["input"]
        return VerifyResult(id=item_id, verifier=verifier, reward=None, status="error",
                            error=f"verifier returned a malformed Score the API cannot carry: {_describe(exc)} "
                                  f"(got {got!r:.80})", elapsed_ms=elapsed_ms)


class RewardEngine:
    def __init__(self, settings: Settings, metrics: RewardMetrics | None = None) -> None:
        self.settings = settings
        self.metrics = metrics or RewardMetrics()
        self.verifiers: dict[str, Verifier] = {
            name: cls(settings) for name, cls in load_verifiers(settings.plugins).items()
        }
        self.pool = ChunkedPool(settings, self.metrics)
        self._ready = False

    # -- lifecycle -------------------------------------------------------------------------------------
    async def start(self) -> None:
        await self.pool.start()
        for verifier in self.verifiers.values():  # pool verifiers too: a follow-up may use a loop resource
            await verifier.start()
        self._ready = True
        log.info("reward engine ready: %d workers, verifiers: %s", self.settings.workers, ", ".join(self.verifiers))

    async def stop(self) -> None:
        self._ready = False
        for verifier in self.verifiers.values():
            await verifier.stop()
        await self.pool.stop()

    def readiness(self) -> dict[str, Any]:
        states = {name: v.readiness() for name, v in self.verifiers.items()}
        extra = {name: state for name, state in states.items() if state is not None}
        return {"ready": self._ready, "workers": self.settings.workers, "verifiers": extra}

    def describe(self) -> list[VerifierInfo]:
        return [v.info() for v in self.verifiers.values()]

    def canonical(self, verifier: str) -> str | None:
        """The registered name of a verifier name or alias; None if no verifier of this server has it."""
        name = canonical_name(verifier)
        return name if name in self.verifiers else None

    def check_item(self, verifier: str, ground_truth: Any, options: dict[str, Any]) -> str:
        """Validate a verifier name, ground truth and options without scoring (raises InvalidInput);
        returns the canonical verifier name. Sessions check their final-answer item up front."""
        name = self.canonical(verifier)
        if name is None:
            raise InvalidInput(f"unknown verifier {verifier!r} (GET /v1/verifiers lists them)")
        # the response and the question come later (the conversation): a verifier that needs a question sees one
        self.verifiers[name].make_task("", ground_truth, options, CHECK_PROMPT)
        return name

    # -- scoring ---------------------------------------------------------------------------------------
    async def verify_batch(self, raw_items: list[Any]) -> list[VerifyResult]:
        """Score raw (unvalidated) items; one result per item, in order, whatever fails. Every result can be
        sent as JSON."""
        return (await self.verify_batch_encoded(raw_items))[0]

    async def verify_batch_encoded(self, raw_items: list[Any]) -> tuple[list[VerifyResult], bytes]:
        """`verify_batch`, and its results as a JSON array, encoded once (the server sends these bytes)."""
        token = current_request.set(object())  # the items' tasks (fair turns for sandbox slots) inherit it
        try:
            results = await self._score_batch(raw_items)
        finally:
            current_request.reset(token)
        results, encoded = _encode(results)
        self._count(results)  # what is sent, a result turned into an error by _encode included
        return results, encoded

    async def _score_batch(self, raw_items: list[Any]) -> list[VerifyResult]:
        self.metrics.inflight.inc(len(raw_items))
        try:
            results: list[VerifyResult | None] = []
            plain: list[tuple[int, Prepared]] = []  # (index, prepared item) of each item scored by one verifier
            plans: list[tuple[int, CompositePlan]] = []
            for index, raw in enumerate(raw_items):
                if index and index % _ITEMS_PER_YIELD == 0:
                    await asyncio.sleep(0)
                started = time.perf_counter()
                prepared = self._prepare(raw)
                if isinstance(prepared, VerifyResult):  # refused: its time is the check's
                    prepared.elapsed_ms = round((time.perf_counter() - started) * 1000, 3)
                    results.append(prepared)
                    continue
                results.append(None)
                if prepared[1] == COMPOSITE:
                    plans.append((index, CompositePlan(prepared[0], prepared[3])))
                else:
                    plain.append((index, prepared))
            # one wave scores the plain items and every composite's components together (pool and loop at once);
            # a further wave only for components that wait on another's result (correct_from)
            waiting = [(plan, plan.pending(self._prepare_fields)) for _, plan in plans]
            scored = await self._score_prepared([p for _, p in plain] + [p for _, ready in waiting for p in ready])
            for (index, _), result in zip(plain, scored):
                results[index] = result
            at = len(plain)
            while waiting:
                for plan, ready in waiting:
                    plan.take(scored[at:at + len(ready)])
                    at += len(ready)
                waiting = [(plan, ready) for plan, ready in
                           ((plan, plan.pending(self._prepare_fields)) for _, plan in plans if not plan.done) if ready]
                scored, at = await self._score_prepared([p for _, ready in waiting for p in ready]), 0
            for index, plan in plans:
                results[index] = plan.result()
        finally:
            self.metrics.inflight.dec(len(raw_items))
        done = [result for result in results if result is not None]
        assert len(done) == len(raw_items)  # every item has exactly one result
        return done

    async def _score_prepared(self, items: list[Prepared]) -> list[VerifyResult]:
        """Score validated items, pool ones in the worker pool and loop ones on the event loop, concurrently; one
        result per item, in order."""
        if not items:
            return []
        results: list[VerifyResult | None] = [None] * len(items)
        pool_jobs: list[PoolJob] = []
        pool_items: list[tuple[int, Any]] = []  # (index, id) of each pool job
        loop_work: list[tuple[int, Any, str, Any]] = []  # (index, id, verifier, coroutine)
        for index, (item_id, name, verifier, task, truth) in enumerate(items):
            deadline = verifier.deadline_s(task)
            if verifier.runs_in == "pool":
                # one reference, one worker: its caches (parsed references, normalized answers) serve them all
                pool_jobs.append(PoolJob(name, task, deadline or self.settings.item_timeout_s, hash((name, truth))))
                pool_items.append((index, item_id))
            else:
                loop_work.append((index, item_id, name, self._on_loop(verifier, verifier.score_async(task), deadline)))
        loop_outcomes, pool_outcomes = await asyncio.gather(
            asyncio.gather(*(work[3] for work in loop_work)), self._score_in_pool(items, pool_items, pool_jobs))
        for (index, item_id), job, (outcome, seconds) in zip(pool_items, pool_jobs, pool_outcomes):
            results[index] = self._finish(item_id, job.verifier, outcome, seconds)
        for (index, item_id, name, _), (outcome, seconds) in zip(loop_work, loop_outcomes):
            results[index] = self._finish(item_id, name, outcome, seconds)
        return [result for result in results if result is not None]

    def _count(self, results: list[VerifyResult]) -> None:
        # a label lookup per verifier and status, not per item (it costs as much as the update)
        counts = Counter((self._label(result.verifier), result.status) for result in results)
        for (verifier, status), n in counts.items():
            self.metrics.items.labels(verifier, status).inc(n)
        latency: dict[str, Any] = {}
        for result in results:
            if result.details:
                self.metrics.count_tamper(result.verifier, result.details)
                if result.verifier == COMPOSITE:  # a sandbox component's tamper counts as an item's would
                    for part in result.details.get("components", ()):
                        self.metrics.count_tamper(self._label(str(part.get("verifier"))), part.get("details"))
            if result.verifier not in latency:
                latency[result.verifier] = self.metrics.item_latency.labels(self._label(result.verifier))
            latency[result.verifier].observe(result.elapsed_ms / 1000)

    def _label(self, verifier: str) -> str:
        """A metric label value: a registered verifier's name, else one fixed value, so a client sending made-up
        names cannot grow the label set without bound."""
        return verifier if verifier in self.verifiers else UNKNOWN_LABEL

    def _prepare(self, raw: Any) -> VerifyResult | Prepared:
        """Validate one raw item: its `invalid` result, or (id, verifier name, verifier, task, ground truth as
        text)."""
        raw_id = raw.get("id") if isinstance(raw, dict) else None
        raw_name = raw.get("verifier") if isinstance(raw, dict) else None
        label = raw_name if isinstance(raw_name, str) else ""
        try:
            item = raw if isinstance(raw, VerifyItem) else VerifyItem.model_validate(raw)
        except ValidationError as exc:
            return _result(raw_id, label, "invalid", f"item: {_describe(exc)}")
        return self._prepare_fields(item.id, item.verifier, item.response, item.ground_truth, item.options,
                                    item.prompt, item.completion_tokens)

    def _prepare_fields(self, item_id: str | None, verifier_name: str, response: str, ground_truth: Any,
                        options: dict[str, Any], prompt: Any, completion_tokens: int | None) -> VerifyResult | Prepared:
        """`_prepare` past the item's own validation (a composite's components come here directly)."""
        name = self.canonical(verifier_name)
        if name is None:
            return _result(item_id, verifier_name, "invalid",
                           f"unknown verifier {verifier_name!r} (GET /v1/verifiers lists them)")
        if len(response) > self.settings.max_response_chars:
            return _result(item_id, name, "invalid",
                           f"response has {len(response)} characters; the limit is "
                           f"{self.settings.max_response_chars} (max_response_chars)")
        truth = ground_truth if isinstance(ground_truth, str) else json.dumps(ground_truth)
        truth_chars = len(truth)
        if truth_chars > self.settings.max_ground_truth_chars:
            return _result(item_id, name, "invalid",
                           f"ground_truth has {truth_chars} characters as JSON; the limit is "
                           f"{self.settings.max_ground_truth_chars} (max_ground_truth_chars)")
        verifier = self.verifiers[name]
        try:
            task = verifier.make_task(response, ground_truth, options, prompt)
        except ItemError as exc:
            return _result(item_id, name, exc.status, exc.message, details=exc.details)
        except Exception as exc:  # a validation bug must cost one item, not the batch
            log.exception("verifier %s could not read an item", name)
            return _result(item_id, name, "error", f"{type(exc).__name__}: {exc}")
        if completion_tokens is not None:  # a plain Task is rebuilt directly: dataclasses.replace costs 10x more
            task = (Task(task.response, task.ground_truth, task.options, task.prompt, completion_tokens)
                    if type(task) is Task else replace(task, completion_tokens=completion_tokens))
        return item_id, name, verifier, task, truth

    async def _score_in_pool(self, items: list[Prepared], pool_items: list[tuple[int, Any]],
                             jobs: list[PoolJob]) -> list[tuple[Score | ItemError, float]]:
        """The pool's outcomes, each followed up on the event loop where its verifier asks for it (the math
        verifiers' judge fallback); a follow-up's seconds add to the worker's."""
        outcomes = list(await self.pool.score(jobs))
        follow: list[tuple[int, str, Any]] = []  # (position in outcomes, verifier name, coroutine)
        for at, ((index, _), (outcome, _)) in enumerate(zip(pool_items, outcomes)):
            _, name, verifier, task, _ = items[index]
            if isinstance(outcome, Score) and verifier.needs_follow_up(task, outcome):
                follow.append((at, name, self._on_loop(verifier, verifier.follow_up(task, outcome), None)))
        for (at, name, _), (outcome, seconds) in zip(follow, await asyncio.gather(*(work for *_, work in follow))):
            outcomes[at] = (outcome, outcomes[at][1] + seconds)
            # counted here, where the judge decided: a composite's math component is not a result of its own
            if isinstance(outcome, ItemError):
                self.metrics.count_judge_fallback(name, outcome.status, None, outcome.details)
            else:
                self.metrics.count_judge_fallback(name, "ok", outcome.reward, outcome.details)
        return outcomes

    async def _on_loop(self, verifier: Verifier, work: Any,
                       deadline: float | None) -> tuple[Score | ItemError, float]:
        """An I/O-bound verifier's score (or a pool verifier's follow-up), or the failure that stands for it, and
        the seconds from this item's start (same shape as the pool's)."""
        started = time.perf_counter()
        try:
            outcome: Score | ItemError = await asyncio.wait_for(work, timeout=deadline)
        except ItemError as exc:
            outcome = exc
        except asyncio.TimeoutError:
            outcome = ItemError("timeout", f"no result within {deadline:g} s" if deadline else "timed out",
                                {"reason": "timeout"})
        except MemoryError:
            outcome = ItemError("error", "out of memory on the event loop")
        except Exception as exc:  # a verifier bug must cost one item, not the batch
            log.exception("verifier %s failed", verifier.name)
            outcome = ItemError("error", f"{type(exc).__name__}: {exc}")
        return outcome, time.perf_counter() - started

    def _finish(self, item_id: Any, name: str, outcome: Score | ItemError, seconds: float) -> VerifyResult:
        ran = getattr(outcome, "elapsed_s", None)
        if isinstance(ran, (int, float)) and math.isfinite(ran):
            seconds = max(float(ran), 0.0)  # the verifier timed where its item ran
        if isinstance(outcome, ItemError):
            return _result(item_id, name, outcome.status, outcome.message, seconds, details=outcome.details)
        if not isinstance(outcome.reward, (int, float)) or not math.isfinite(outcome.reward):
            return _result(item_id, name, "error", f"verifier returned a non-finite reward {outcome.reward!r}",
                           seconds, details=outcome.details if isinstance(outcome.details, dict) else {})
        return _result(item_id, name, "ok", None, seconds, float(outcome.reward), outcome.details)


def _encode(results: list[VerifyResult]) -> tuple[list[VerifyResult], bytes]:
    """The results as one JSON array, encoded once. A result whose details have no JSON form becomes that item's
    `error` (and is logged): one verifier's odd details never fail the batch."""
    try:
        return results, _RESULTS.dump_json(results)
    except PydanticSerializationError:
        sent, parts = [], []
        for result in results:
            try:
                parts.append(_RESULT.dump_json(result))
            except PydanticSerializationError as exc:
                log.error("verifier %s returned details that are not JSON: %s", result.verifier, exc)
                result = VerifyResult(id=result.id, verifier=result.verifier, reward=None, status="error",
                                      error=f"verifier returned details that are not JSON: {exc}",
                                      elapsed_ms=result.elapsed_ms)
                parts.append(_RESULT.dump_json(result))
            sent.append(result)
        return sent, b"[" + b",".join(parts) + b"]"


_RESULTS = TypeAdapter(list[VerifyResult])
_RESULT = TypeAdapter(VerifyResult)


def _describe(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    parts = [str(p) for p in err["loc"]]
    if len(parts) > 8:  # deeply nested input: the path's ends say where, the middle would be thousands of characters
        parts = [*parts[:4], f"...({len(parts) - 6} levels)...", *parts[-2:]]
    loc = ".".join(parts)
    return f"{loc}: {err['msg']}" if loc else err["msg"]
