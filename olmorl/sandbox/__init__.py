"""Isolation for model-written code: warm sandboxes (bubblewrap by default) that fork per test."""

from olmorl.sandbox._backends import SandboxLimits
from olmorl.sandbox._languages import LANGUAGES, Language, LanguageUnavailable, UnknownLanguage, language
from olmorl.sandbox._pool import SandboxPool, SandboxUnavailable, TestInput, TestRun
from olmorl.sandbox._values import decode_value

__all__ = ["LANGUAGES", "Language", "LanguageUnavailable", "SandboxLimits", "SandboxPool", "SandboxUnavailable",
           "TestInput", "TestRun", "UnknownLanguage", "decode_value", "language"]
