"""The engine's weight dtypes, known on the learner side, so that each weight sync is cast there once.

A learner with fp32 master weights (`learner_dtype: bfloat16_mixed`) syncing to a bf16 engine would otherwise
send fp32 bytes that the engine rounds on load. Every engine reports the dtypes of its model's floating-point
weights (`WeightDtypes.of_model`: the in-process engine directly, a child process over its pipe, an HTTP engine
in /health, a Ray actor through a method); the sender casts each tensor to its engine's dtype with `.to`, the
same round-to-nearest-even `load_state_dict` applies, so the engine ends up with the same bits as before.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

import torch

from olmorl.trainer._lora import same_kind

INFO_KEY = "weight_dtype"  # /health: the engine's floating-point weight dtype
INFO_EXCEPTIONS_KEY = "weight_dtype_exceptions"  # /health: {tensor name: dtype} for tensors kept in another dtype


def _dtype(name: str) -> torch.dtype:
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise ValueError(f"not a floating-point torch dtype: {name!r}")
    return value


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class WeightDtypes:
    """What an engine holds: `default` for its floating-point weights (and adapter tensors it injects, which
    peft creates in their base layer's dtype), `exceptions` for tensors it keeps in another dtype."""
    default: str
    exceptions: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of_model(cls, model: torch.nn.Module) -> WeightDtypes:
        floating = {k: v for k, v in model.state_dict().items() if v.is_floating_point()}
        if not floating:
            raise ValueError("the engine's model has no floating-point weights")
        by_size: Counter[str] = Counter()
        for v in floating.values():
            by_size[_name(v.dtype)] += v.numel()
        default = by_size.most_common(1)[0][0]
        return cls(default, {k: _name(v.dtype) for k, v in floating.items() if _name(v.dtype) != default})

    @classmethod
    def from_info(cls, info: Mapping[str, Any], engine: str) -> WeightDtypes:
        """From an engine's model info (/health); an engine that does not report its dtype is an error."""
        if INFO_KEY not in info:
            raise ValueError(f"engine {engine} does not report its weight dtype ({INFO_KEY!r} in /health): "
                             "the learner cannot cast weight syncs to it; run an olmorl-engine of this version")
        spec = cls(str(info[INFO_KEY]), {str(k): str(v) for k, v in (info.get(INFO_EXCEPTIONS_KEY) or {}).items()})
        for name in (spec.default, *spec.exceptions.values()):
            _dtype(name)  # a clear error for a dtype torch does not have
        return spec

    def to_info(self) -> dict[str, Any]:
        return {INFO_KEY: self.default, INFO_EXCEPTIONS_KEY: dict(self.exceptions)}

    def cast(self, weights: Mapping[str, torch.Tensor], device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
        """A copy of `weights` on `device`, each floating-point tensor in the engine's dtype (one pass: copy and
        cast together); integer tensors keep theirs. An adapter update stays an adapter update."""
        return same_kind(weights, {k: v.detach().to(device, dtype=_dtype(self.exceptions.get(k, self.default))
                                                   if v.is_floating_point() else v.dtype, copy=True)
                                   for k, v in weights.items()})


def common_dtypes(engines: Mapping[str, WeightDtypes]) -> WeightDtypes:
    """The one `WeightDtypes` of a pool's engines (each sync is one payload for all of them): engines that hold
    different dtypes are an error naming each."""
    distinct = set((d.default, tuple(sorted(d.exceptions.items()))) for d in engines.values())
    if len(distinct) != 1:
        raise ValueError("the engines hold their weights in different dtypes, and one weight sync goes to all: "
                         + ", ".join(f"{name}: {d.default}" + (f" (+{len(d.exceptions)} tensors in others)"
                                                                if d.exceptions else "")
                                     for name, d in engines.items()))
    return next(iter(engines.values()))


def payload_bytes(weights: Mapping[str, torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in weights.values())
