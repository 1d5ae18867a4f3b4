"""Built-in session environments (one folder per concept); importing this package registers them."""

from olmorl.rewards.environments.code_feedback import CodeFeedbackEnvironment
from olmorl.rewards.environments.ifeval_multiturn import IFEvalMultiTurnEnvironment
from olmorl.rewards.environments.python import PythonEnvironment
from olmorl.rewards.environments.swe import SweEnvironment

__all__ = ["CodeFeedbackEnvironment", "IFEvalMultiTurnEnvironment", "PythonEnvironment", "SweEnvironment"]
