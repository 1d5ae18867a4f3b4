"""The torch engine's rows: one sequence being sampled each, the group of `n` it belongs to, and when it ends.

A row records every token it is given with its logprob and the policy version that sampled it, and ends
("stop") on an EOS token (unless the request ignores EOS) or one of the request's stop sequences, or
("length") at the request's token cap (default: the engine's). A group is finished once all its rows are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from olmorl.trainer.engines._types import Completion, GenerationRequest, Group


@dataclass
class PendingGroup:
    request: GenerationRequest
    submitted_version: int
    done: list[Completion | None]

    def complete(self, row: Row) -> Group | None:
        """Record the finished `row`; the group once every row of it is finished, else None."""
        if row.finish_reason is None:
            raise RuntimeError("a sequence finishes only once it has a finish_reason")
        self.done[row.index] = Completion(row.tokens, row.logprobs, row.versions, row.finish_reason)
        completions = [c for c in self.done if c is not None]
        if len(completions) < len(self.done):
            return None
        req = self.request
        return Group(req.request_id, list(req.prompt_ids), completions, req.meta, self.submitted_version)


@dataclass
class Row:
    group: PendingGroup
    index: int
    prompt_ids: list[int]
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    finish_reason: str | None = None

    def record(self, token: int, logprob: float, version: int, eos_ids: set[int], max_new_tokens: int) -> None:
        """Append a sampled token; set `finish_reason` when it ends the row."""
        self.tokens.append(token)
        self.logprobs.append(logprob)
        self.versions.append(version)
        request = self.group.request
        if (token in eos_ids and not request.ignore_eos) or _ends_with_stop(self.tokens, request.stop):
            self.finish_reason = "stop"
        elif len(self.tokens) >= (request.max_new_tokens or max_new_tokens):
            self.finish_reason = "length"


def _ends_with_stop(tokens: list[int], stop: tuple[tuple[int, ...], ...]) -> bool:
    return any(seq and len(tokens) >= len(seq) and tuple(tokens[-len(seq):]) == tuple(seq) for seq in stop)
