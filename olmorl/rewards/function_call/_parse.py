"""The tool calls in a response: Hermes `<tool_call>` tags, OpenAI-style JSON, or BFCL's Python-call syntax.

Read after the last `</think>`, in this order (the first form found wins):

1. Hermes: every `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (Qwen, Hermes, Olmo chat
   templates). A missing closing tag at the very end is tolerated (generation cut at the stop token).
2. OpenAI JSON: the whole text (or its one fenced ```json block) is a JSON object with `tool_calls`
   (an assistant message), a list of tool calls, or one tool call. A tool call is
   `{"type": "function", "function": {"name", "arguments"}}` or `{"name", "arguments"}`; `arguments`
   may be an object or a string holding one (OpenAI sends a string). `parameters` is read as
   `arguments` too (Llama 3's JSON tool format).

3. BFCL's Python-call syntax (its prompting mode): the whole text is a list of calls with keyword arguments,
   `[get_weather(city="Paris"), math.hypot(x=3, y=4)]`, the values Python literals.

Anything else holds no call. A call that is announced but cannot be read (bad JSON inside a tag, no
name, arguments that are not an object) is a `MalformedCall`: the response tried to call and failed.
"""

from __future__ import annotations

import ast
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
        return _python_calls(text) if text.startswith("[") else []
    return _openai_calls(value)


def _python_calls(text: str) -> list[Call]:
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []  # prose that happens to start with a bracket: no call
    if not isinstance(tree, ast.List) or not tree.elts:
        return []
    nodes = [e for e in tree.elts if isinstance(e, ast.Call)]
    if len(nodes) != len(tree.elts):
        return []
    calls = []
    for node in nodes:
        name = _dotted_name(node.func)
        if name is None:
            raise MalformedCall(f"a call's function is not a (dotted) name: {ast.unparse(node.func)[:100]}")
        if node.args or any(kw.arg is None for kw in node.keywords):
            raise MalformedCall(f"the call of {name!r} has positional or ** arguments; name every argument")
        try:
            calls.append(Call(name, {str(kw.arg): _json_value(ast.literal_eval(kw.value)) for kw in node.keywords}))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise MalformedCall(f"an argument of {name!r} is not a JSON-like literal") from None
    return calls


def _json_value(value: Any) -> Any:
    """A Python literal as the JSON value it stands for (a tuple is a list, as in BFCL); ValueError if none."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: _json_value(item) for key, item in value.items()}
    raise ValueError(f"no JSON form: {type(value).__name__}")


def _dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted_name(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


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
