"""Sandboxed code verifiers: `code` (asserts, stdio, function calls, HumanEval check) and `code_stdio`."""

from olmorl.rewards.code import _routes  # noqa: F401  (registers the compatibility routes)
from olmorl.rewards.code._grading import normalize_output, stdout_matches
from olmorl.rewards.code._tests import TestSuite, parse_ground_truth
from olmorl.rewards.code._verifiers import (
    CodeOptions,
    CodeStdioVerifier,
    CodeVerifier,
    SandboxVerifier,
    extract_program,
    make_pool,
)

__all__ = [
    "CodeOptions",
    "CodeStdioVerifier",
    "CodeVerifier",
    "SandboxVerifier",
    "TestSuite",
    "extract_program",
    "make_pool",
    "normalize_output",
    "parse_ground_truth",
    "stdout_matches",
]
