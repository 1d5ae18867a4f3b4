"""Isolation for model-written code: warm sandboxes (bubblewrap by default) that fork per test."""

from olmorl.sandbox._backends import SandboxLimits
from olmorl.sandbox._pool import SandboxPool, SandboxUnavailable, TestInput, TestRun
from olmorl.sandbox._values import decode_value

__all__ = ["SandboxLimits", "SandboxPool", "SandboxUnavailable", "TestInput", "TestRun", "decode_value"]
