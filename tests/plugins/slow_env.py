"""A session environment whose setup and verify take a while, so a test can cancel a client in the middle."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

from olmorl.rewards import Environment, Score, Step, register


class SlowStart(BaseModel):
    delay_s: float = 1.0  # setup
    verify_delay_s: float = 0.0


@register
class SlowStartEnvironment(Environment):
    name = "test_slow_start"
    description = "Takes delay_s to set up and verify_delay_s to verify; no tools; any answer scores 1."
    task_type = SlowStart
    tools = ()

    async def setup(self) -> str:
        await asyncio.sleep(self.task.delay_s)
        return "ready"

    async def step(self, tool: str, arguments) -> Step:
        raise AssertionError("this environment has no tools")

    async def verify(self, response: str, messages: list | None) -> Score:
        await asyncio.sleep(self.task.verify_delay_s)
        return Score(1.0)
