"""The `function_call` verifier: a response's tool calls against BFCL-style expected calls."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from olmorl.rewards.engine._registry import Score, Task, Verifier, register
from olmorl.rewards.function_call._match import MAX_CALLS, best_matching, parse_expected
from olmorl.rewards.function_call._parse import Call, MalformedCall, parse_calls

_MAX_DETAIL_CALLS = 20
# Validated by `parse_expected` (its messages name the BFCL form); the schema says the shape for /v1/verifiers.
_EXPECTED_CALLS = Annotated[Any, WithJsonSchema({
    "description": 'BFCL\'s expected calls: [{"function": {"argument": [acceptable values]}}]; "" among the values '
                   "marks an optional argument; [] expects no call. Or a string holding that JSON.",
    "anyOf": [{"type": "array", "items": {"type": "object", "additionalProperties": {
        "type": "object", "additionalProperties": {"type": "array", "minItems": 1}}}}, {"type": "string"}]})]


class FunctionCallOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    partial_credit: bool = Field(
        default=False, description="reward = matched expected calls / max(expected, made) instead of 1 only when "
                                   "every expected call is matched and no other call is made")


@register
class FunctionCallVerifier(Verifier):
    name = "function_call"
    aliases = ("tool_call", "bfcl")
    description = ("Tool use (BFCL style): the response's calls (Hermes <tool_call> tags, OpenAI tool_calls JSON or "
                   "BFCL's [f(x=1)] syntax) against BFCL's expected calls [{function: {argument: [acceptable values]}}] (\"\" marks an "
                   "optional argument; [] expects no call); parallel calls match in any order.")
    ground_truth_type = _EXPECTED_CALLS
    options_model = FunctionCallOptions

    def make_task(self, response: str, ground_truth: Any, options: dict[str, Any], prompt: Any) -> Task:
        task = super().make_task(response, ground_truth, options, prompt)
        return Task(response=task.response, ground_truth=parse_expected(ground_truth), options=task.options,
                    prompt=task.prompt)

    def score(self, task: Task) -> Score:
        expected = task.ground_truth
        try:
            calls = parse_calls(task.response)
        except MalformedCall as exc:
            return Score(0.0, {"reason": "malformed_call", "message": str(exc), "expected": len(expected)})
        details: dict[str, Any] = {"calls": [_shown(call) for call in calls[:_MAX_DETAIL_CALLS]],
                                   "expected": len(expected)}
        if not expected:
            called = bool(calls)
            return Score(0.0 if called else 1.0, {**details, "reason": "unexpected_call" if called else None})
        if not calls:
            return Score(0.0, {**details, "matched": 0, "reason": "no_call"})
        if len(calls) > MAX_CALLS:  # more than any ground truth expects: not matched one by one
            return Score(0.0, {**details, "made": len(calls), "reason": "too_many_calls"})
        matched, errors = best_matching(calls, expected)
        correct = matched == len(expected) == len(calls)
        reason = None if correct else ("mismatch" if errors else "extra_call")
        details.update(matched=matched, reason=reason)
        if errors:
            details["errors"] = errors[:_MAX_DETAIL_CALLS]
        if correct:
            return Score(1.0, details)
        partial = matched / max(len(expected), len(calls)) if task.options.partial_credit else 0.0
        return Score(partial, details)


def _shown(call: Call) -> dict[str, Any]:
    return {"name": call.name, "arguments": call.arguments}
