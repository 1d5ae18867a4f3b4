"""A loop (event-loop) verifier of known cost, for tests that need pool and loop work side by side."""

from __future__ import annotations

import asyncio

from olmorl.rewards import Score, Task, Verifier, register


@register
class LoopSleepVerifier(Verifier):
    name = "test_loop_sleep"
    description = "Awaits ground_truth seconds on the event loop, then rewards 0.5."
    ground_truth_type = float
    runs_in = "loop"

    async def score_async(self, task: Task) -> Score:
        await asyncio.sleep(task.ground_truth)
        return Score(0.5)
