"""Verifiers that end items with ItemError, in the worker pool and on the event loop: the response names the
status to raise (`invalid`, `error`, `timeout`); anything else scores 1."""

from __future__ import annotations

from olmorl.rewards import InvalidInput, ItemError, Score, Task, Verifier, register


def _outcome(task: Task, where: str) -> Score:
    if task.response == "invalid":
        raise InvalidInput(f"bad item ({where})", {"where": where, "field": "response"})
    if task.response in ("error", "timeout"):
        raise ItemError(task.response, f"{task.response} ({where})", {"where": where}, elapsed_s=0.25)
    return Score(1.0, {"where": where})


@register
class PoolItemErrors(Verifier):
    name = "test_item_errors_pool"

    def score(self, task: Task) -> Score:
        return _outcome(task, "pool")


@register
class LoopItemErrors(Verifier):
    name = "test_item_errors_loop"
    runs_in = "loop"

    async def score_async(self, task: Task) -> Score:
        return _outcome(task, "loop")
