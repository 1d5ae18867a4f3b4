"""One judge call whose reply is read by a caller-given reader, shared by the rubric and comparative
judges: identical calls in flight are coalesced (the G items of one group make one call per order),
verdicts are cached, and every failure is a `CallFailed` with its reason, never a value."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from olmorl.rewards.judge._cache import CachedJudgement
from olmorl.rewards.judge._client import JudgeCallError
from olmorl.rewards.judge._parse import JudgementError

if TYPE_CHECKING:
    from olmorl.rewards.judge._verifier import _Backend

RAW_EXCERPT_CHARS = 1000
Reader = Callable[[str | None], tuple[Any, str | None]]  # reply text -> (value, reasoning); raises JudgementError


@dataclass(frozen=True)
class Verdict:
    value: Any
    reasoning: str | None
    attempts: int
    cache_hit: bool
    elapsed_s: float


@dataclass(frozen=True)
class CallFailed:
    reason: str  # judge_unavailable | judge_cut_off | unparseable_judgement
    error: str
    attempts: int
    raw: str | None = None

    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason, "attempts": self.attempts}
        if self.raw is not None:
            out["raw"] = self.raw[:RAW_EXCERPT_CHARS]
        return out


async def judge_call(backend: _Backend, model: str, key: str, prompt_text: str, read: Reader) -> Verdict | CallFailed:
    """The verdict for `prompt_text` (`key` names it in the cache and among the calls in flight)."""
    cached = await backend.cache.get(key)
    if cached is not None:
        return Verdict(cached.score, cached.reasoning, 0, True, 0.0)
    call = backend.calls.get(key)
    if call is None:
        call = asyncio.create_task(_call(backend, model, key, prompt_text, read))
        backend.calls[key] = call
        call.add_done_callback(lambda _: backend.calls.pop(key, None))
    # Shielded: an item that times out does not cancel the call the rest of its group waits on.
    verdict: Verdict | CallFailed = await asyncio.shield(call)
    return verdict


async def _call(backend: _Backend, model: str, key: str, prompt_text: str, read: Reader) -> Verdict | CallFailed:
    try:
        reply = await backend.client.complete([{"role": "user", "content": prompt_text}])
    except JudgeCallError as exc:
        return CallFailed("judge_unavailable", str(exc), exc.attempts)
    if reply.finish_reason == "length":
        return CallFailed("judge_cut_off", "the judge reply was cut off (finish_reason=length) before its "
                          "verdict; raise judge.max_tokens", reply.attempts, reply.text or "")
    try:
        value, reasoning = read(reply.text)
    except JudgementError as exc:
        return CallFailed("unparseable_judgement", f"could not read the judge's verdict: {exc}", reply.attempts,
                          reply.text or "")
    numeric = isinstance(value, (int, float))
    await backend.cache.put(key, CachedJudgement(float(value) if numeric else 0.0, value, reasoning, model))
    return Verdict(value, reasoning, reply.attempts, False, reply.at_judge_s)
