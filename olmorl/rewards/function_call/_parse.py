"""The tool calls in a response: Hermes `<tool_call>` tags, or OpenAI-style JSON.

Read after the last `</think>`, in this order (the first form found wins):

1. Hermes: every `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (Qwen, Hermes, Olmo chat
   templates). A missing closing tag at the very end is tolerated (generation cut at the stop token).
2. OpenAI JSON: the whole text (or its one fenced ```json block) is a JSON object with `tool_calls`
   (an assistant message), a list of tool calls, or one tool call. A tool call is
   `{"type": "function", "function": {"name", "arguments"}}` or `{"name", "arguments"}`; `arguments`
   may be an object or a string holding one (OpenAI sends a string). `parameters` is read as
   `arguments` too (Llama 3's JSON tool format).

Anything else holds no call. A call that is announced but cannot be read (bad JSON inside a tag, no
name, arguments that are not an object) is a `MalformedCall`: the response tried to call and failed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from olmorl.rewards.text import strip_thinking

_HERMES = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FENCED = re.compile(r"^```(?:json)?\s*\n(.*?)\n```$", re.DOTALL)


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]


class MalformedCall(ValueError):
    """A tool call the response announced but that cannot be read."""


def parse_calls(response: str) -> list[Call]:
    """The calls in `response`, in order; [] when it holds none. Raises MalformedCall."""
    text = strip_thinking(response).strip()
    if "<tool_call>" in text:
        return [_hermes_call(body) for body in _HERMES.findall(text)]
    fenced = _FENCED.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text.startswith(("{", "[")):
        return []
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return []  # prose that happens to start with a bracket: no call
    return _openai_calls(value)


def _hermes_call(body: str) -> Call:
    try:
        value = json.loads(body.strip())
    except json.JSONDecodeError as exc:
        raise MalformedCall(f"a <tool_call> body is not JSON: {exc}") from None
    return _one_call(value)


def _openai_calls(value: Any) -> list[Call]:
    if isinstance(value, dict) and "tool_calls" in value:
        value = value["tool_calls"] or []
    if isinstance(value, dict):
        if not ("name" in value or "function" in value):
            return []  # a JSON answer, not a call
        value = [value]
    if not isinstance(value, list):
        return []
    if not all(isinstance(item, dict) and ("name" in item or "function" in item) for item in value):
        return []  # a JSON list that is not a list of calls
    return [_one_call(item) for item in value]


def _one_call(value: Any) -> Call:
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        value = value["function"]
    if not isinstance(value, dict):
        raise MalformedCall(f"a tool call must be a JSON object, got {type(value).__name__}")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise MalformedCall("a tool call has no function name")
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise MalformedCall(f"the arguments of {name!r} are a string but not JSON: {exc}") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise MalformedCall(f"the arguments of {name!r} must be an object, got {type(arguments).__name__}")
    return Call(name, arguments)
