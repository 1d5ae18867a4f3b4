"""The `python` environment: a persistent sandboxed interpreter per session (tool-integrated reasoning)."""

from olmorl.rewards.environments.python._env import PythonEnvironment

__all__ = ["PythonEnvironment"]
