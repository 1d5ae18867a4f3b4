"""The `code_feedback` environment: submit a program, see the visible tests, resubmit; hidden tests score."""

from olmorl.rewards.environments.code_feedback._env import CodeFeedbackEnvironment

__all__ = ["CodeFeedbackEnvironment"]
