"""The math verifier's reward for one response, as a trainer's request gets it (default settings), for the tests
that pin a form read from a real-output row."""

from __future__ import annotations

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import load_verifiers

VERIFIER = load_verifiers()["math"](Settings())


def math_reward(response: str, reference: str, prompt: str | None = None) -> float:
    return VERIFIER.score(VERIFIER.make_task(response, reference, {}, prompt)).reward
