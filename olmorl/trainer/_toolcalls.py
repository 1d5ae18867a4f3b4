"""Tool calls in the chat template's own format: finding them in sampled text, and the tokens of a tool reply.

`HermesToolCalls` reads the Hermes / Qwen format, `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
(Qwen2.5/3, Hermes 2/3, OLMo 3 and most tool-tuned open models). Another format is a class with `stop_text`
and `parse(text)`, named in the config as `package.module:Class`.

`ToolChat` turns tool outputs into the token ids that follow a sampled assistant turn: the template's tool
message(s) and the next generation prompt, rendered by the tokenizer's chat template around a placeholder
assistant turn and cut right after it. Sampled tokens are never re-tokenized; only these new tokens are.
"""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

_PLACEHOLDER = "OLMORL_SAMPLED_ASSISTANT_TURN"


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # the model wrote a malformed call: answered with this, never sent to the server


class ToolCallParser(Protocol):
    stop_text: str  # generation of a turn stops once this is sampled (the call is complete)

    def parse(self, text: str) -> list[ToolCall]: ...


class HermesToolCalls:
    """`<tool_call>{json}</tool_call>` blocks, in order; an unclosed block at the end is not a call."""

    stop_text = "</tool_call>"
    _block = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)

    def parse(self, text: str) -> list[ToolCall]:
        calls = []
        for match in self._block.finditer(text):
            try:
                body = json.loads(match.group(1).strip())
            except json.JSONDecodeError as exc:
                calls.append(ToolCall("", error=f"the tool call is not valid JSON ({exc.msg} at char {exc.pos})"))
                continue
            if not isinstance(body, dict) or not isinstance(body.get("name"), str):
                calls.append(ToolCall("", error='a tool call is a JSON object {"name": ..., "arguments": {...}}'))
                continue
            arguments = body.get("arguments", {})
            if isinstance(arguments, str):  # some models write the arguments object as JSON text
                try:
                    arguments = json.loads(arguments)
                except json.JSONDecodeError:
                    pass
            if not isinstance(arguments, dict):
                calls.append(ToolCall(body["name"], error="the tool call's arguments must be a JSON object"))
                continue
            calls.append(ToolCall(body["name"], arguments))
        return calls


PARSERS = {"hermes": HermesToolCalls}


def tool_call_parser(name: str) -> ToolCallParser:
    """A registered parser (`hermes`) or `package.module:Class`."""
    if name in PARSERS:
        return PARSERS[name]()
    if ":" not in name:
        raise ValueError(f"unknown tool_call_parser {name!r}: one of {sorted(PARSERS)} or package.module:Class")
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)()


class ToolChat:
    """Chat-template rendering of a multi-turn rollout, as token ids, for one tokenizer."""

    def __init__(self, tokenizer, parser: ToolCallParser) -> None:
        self.tokenizer = tokenizer
        self.parser = parser
        eos = tokenizer.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos])
        self.eos_text = tokenizer.eos_token or ""
        stop = tokenizer(parser.stop_text, add_special_tokens=False).input_ids if parser.stop_text else []
        self.stop = (tuple(stop),) if stop else ()

    def prompt_ids(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        text = self.tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False,
                                                  add_generation_prompt=True)
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def reply_ids(self, tool_messages: list[dict], ended_with_eos: bool) -> list[int]:
        """Tokens after a sampled assistant turn: its template end (unless the sampled EOS already is it), the
        tool message(s), and the next assistant generation prompt."""
        conversation = [{"role": "user", "content": "u"}, {"role": "assistant", "content": _PLACEHOLDER}]
        text = self.tokenizer.apply_chat_template(conversation + tool_messages, tokenize=False,
                                                  add_generation_prompt=True)
        at = text.rfind(_PLACEHOLDER)
        if at < 0:
            raise ValueError("the chat template dropped the assistant turn's content; cannot place tool replies")
        tail = text[at + len(_PLACEHOLDER):]
        if ended_with_eos and self.eos_text and tail.startswith(self.eos_text):
            tail = tail[len(self.eos_text):]  # the policy sampled the end of its turn itself
        return self.tokenizer(tail, add_special_tokens=False).input_ids

    def text(self, token_ids: list[int]) -> str:
        return self.tokenizer.decode(token_ids, skip_special_tokens=True)
