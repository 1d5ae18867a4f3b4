"""A session environment (a plugin the tests load) whose teardown is slow and leaves a file when done: for
tests of when a verified session's teardown runs."""

import asyncio
from pathlib import Path

from pydantic import BaseModel

from olmorl.rewards import Environment, Score, register


class Marked(BaseModel):
    marker: str  # written when close() is done
    close_s: float = 3.0


@register
class SlowCloseEnvironment(Environment):
    name = "slow_close"
    description = "Every answer scores 1; closing takes `close_s` and then writes `marker`."
    task_type = Marked

    async def verify(self, response: str, messages: list | None) -> Score:
        return Score(1.0, {})

    async def close(self) -> None:
        await asyncio.sleep(self.task.close_s)
        Path(self.task.marker).write_text("closed")
