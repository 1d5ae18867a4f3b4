"""Verifiers for the fault and load tests: one that reports its worker's pid and then blocks (so a test
can kill that worker mid-batch), and one that takes a fixed short time per item."""

from __future__ import annotations

import os
import time

from pydantic import BaseModel, ConfigDict

from olmorl.rewards import Score, Task, Verifier, register


class BlockTruth(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pid_file: str
    seconds: float


@register
class BlockVerifier(Verifier):
    name = "test_block"
    description = "Writes its worker's pid to ground_truth.pid_file, then sleeps ground_truth.seconds."
    ground_truth_type = BlockTruth

    def score(self, task: Task) -> Score:
        with open(task.ground_truth.pid_file, "w") as handle:
            handle.write(str(os.getpid()))
        time.sleep(task.ground_truth.seconds)
        return Score(1.0)


@register
class SleepVerifier(Verifier):
    name = "test_sleep"
    description = "Sleeps ground_truth seconds, then rewards 1: a verifier of known cost."
    ground_truth_type = float

    def score(self, task: Task) -> Score:
        time.sleep(task.ground_truth)
        return Score(1.0, {"pid": os.getpid()})
