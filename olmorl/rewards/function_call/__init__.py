"""The `function_call` verifier (tool use, BFCL style): parse a response's tool calls, match them against
BFCL's expected calls."""

from olmorl.rewards.function_call._match import parse_expected, value_matches
from olmorl.rewards.function_call._parse import Call, MalformedCall, parse_calls
from olmorl.rewards.function_call._verifier import FunctionCallOptions, FunctionCallVerifier

__all__ = [
    "Call",
    "FunctionCallOptions",
    "FunctionCallVerifier",
    "MalformedCall",
    "parse_calls",
    "parse_expected",
    "value_matches",
]
