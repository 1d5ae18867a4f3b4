"""Isolation for model-written code: warm sandboxes (bubblewrap by default); a test runs in a process
of its own that the program cannot reach, against a fresh program process (see `_harness`)."""

from olmorl.sandbox._backends import SandboxLimits
from olmorl.sandbox._languages import LANGUAGES, Language, LanguageUnavailable, UnknownLanguage, language
from olmorl.sandbox._pool import SandboxPool, SandboxUnavailable, TestInput, TestRun
from olmorl.sandbox._wire import TAMPER_KINDS, TASK_TAMPER_KINDS

__all__ = ["LANGUAGES", "Language", "LanguageUnavailable", "SandboxLimits", "SandboxPool", "SandboxUnavailable",
           "TAMPER_KINDS", "TASK_TAMPER_KINDS", "TestInput", "TestRun", "UnknownLanguage", "language"]
