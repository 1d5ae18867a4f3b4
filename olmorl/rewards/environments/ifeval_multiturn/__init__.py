"""The `ifeval_multiturn` environment: instructions that accumulate over turns (text only, no sandbox)."""

from olmorl.rewards.environments.ifeval_multiturn._env import IFEvalMultiTurnEnvironment

__all__ = ["IFEvalMultiTurnEnvironment"]
