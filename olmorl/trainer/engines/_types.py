"""The engine interface: what the training loop sends an engine (`GenerationRequest`), what it gets back
(`Group`s of `Completion`s), and the `Engine` protocol every engine implements (in-process, child process,
HTTP, Ray actors, vLLM). Engines import these from here; none of them imports another engine for its types.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

import torch


@dataclass
class GenerationRequest:
    request_id: Any  # echoed on the finished group
    prompt_ids: list[int]
    n: int  # completions sampled for this prompt (the GRPO group size)
    meta: Any = None  # carried through untouched (ground truth, verifier, ...)
    max_new_tokens: int | None = None  # per-request cap (default: the engine's)
    ignore_eos: bool = False  # run to max_new_tokens (benchmarks with controlled lengths)
    stop: tuple[tuple[int, ...], ...] = ()  # token sequences that also end the completion ("stop"), e.g. </tool_call>
    # keep the finished row's KV cache under this key, and start from the cache kept under it when prompt_ids
    # extend the ids it holds (multi-turn: the next turn prefills only the tool reply); engines without their
    # own KV cache store ignore it (vLLM has prefix caching)
    cache_key: str | None = None


@dataclass
class Completion:
    token_ids: list[int]
    logprobs: list[float]  # under the distribution sampled from (temperature, top-k/top-p, renormalized)
    versions: list[int]  # policy version that sampled each token
    finish_reason: str  # "stop" (EOS or a stop sequence), "length" (hit max_new_tokens); multi-turn adds "max_turns"
    # multi-turn rollouts (olmorl.trainer._multiturn) also fill these; single-turn completions leave the defaults
    loss_mask: list[int] | None = None  # 1 = sampled by the policy (trained), 0 = tool/template tokens (None: all 1)
    prompt_ids: list[int] | None = None  # this completion's own prompt (the rendered tools), None: the group's
    result: Any = None  # the session's VerifyResult, already scored (the loop does not score it again)


@dataclass
class Group:
    request_id: Any
    prompt_ids: list[int]
    completions: list[Completion]
    meta: Any
    submitted_version: int  # engine policy version when the request was submitted


def take_groups(finished: queue.Queue, timeout: float | None) -> list[Group]:
    """Wait up to `timeout` (None or 0: no wait) for one finished group, then take every other one queued."""
    out = []
    try:
        out.append(finished.get(timeout=timeout) if timeout else finished.get_nowait())
        while True:
            out.append(finished.get_nowait())
    except queue.Empty:
        return out


class Engine(Protocol):
    """Everything the training loop calls on a generator (`olmorl.trainer._loop`); every engine implements it."""

    version: int

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def submit(self, requests: list[GenerationRequest]) -> None: ...
    def get_groups(self, timeout: float | None = None) -> list[Group]: ...
    def update_weights(self, weights: Mapping[str, torch.Tensor], version: int, wait: bool = False) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def stats(self) -> dict[str, float]: ...  # at least "tokens" (generated so far) and "idle_s"
    @property
    def in_flight_groups(self) -> int: ...  # submitted and not yet taken by get_groups
    def get_rng_state(self) -> Any: ...  # what set_rng_state takes back (checkpoint and resume)
    def set_rng_state(self, state: Any) -> None: ...
