"""LoRA policies through `peft`: the learner trains low-rank adapters on a frozen base, and only the adapter's
lora_A / lora_B tensors travel to the engines.

An adapter update is an `AdapterWeights`: a dict of those tensors named as in the engine's own model once the
adapter is injected into it (`model.layers.0.self_attn.q_proj.lora_A.default.weight`), carrying the `LoraSpec`
that injection needs. Every engine applies it with `load_policy_weights`: the first adapter update injects the
LoRA layers into the engine's base model (peft's `inject_adapter_in_model`), every update then loads the
adapter's tensors only. The base weights an engine started with never change.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

import torch

PEFT_PREFIX = "base_model.model."  # a PeftModel's state-dict names: this + the wrapped model's own names
ADAPTER_NAME = "default"  # peft's adapter name; the only adapter a policy has
SAFETENSORS_METADATA_KEY = "olmorl_lora"  # a weights file holding an adapter update: its LoraSpec as JSON


@dataclass(frozen=True)
class LoraSpec:
    """What injecting the adapter into a model needs: rank, alpha and the full names of the adapted modules."""
    rank: int
    alpha: int
    target_modules: tuple[str, ...]

    def peft_config(self, dropout: float = 0.0):
        from peft import LoraConfig

        return LoraConfig(r=self.rank, lora_alpha=self.alpha, target_modules=list(self.target_modules),
                          lora_dropout=dropout)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> LoraSpec:
        values = json.loads(text)
        return cls(int(values["rank"]), int(values["alpha"]), tuple(values["target_modules"]))


class AdapterWeights(dict):
    """A weight update of adapter tensors only (see the module docstring); `spec` says how to inject them."""

    def __init__(self, tensors: Mapping[str, torch.Tensor], spec: LoraSpec) -> None:
        super().__init__(tensors)
        self.spec = spec

    def __reduce__(self):  # pickled with its spec (process pipes, Ray)
        return AdapterWeights, (dict(self), self.spec)

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.values())


def same_kind(weights: Mapping[str, Any], tensors: Mapping[str, Any]) -> dict[str, Any]:
    """`tensors` (a copy or conversion of `weights`) as the same kind of update: an adapter stays an adapter."""
    return AdapterWeights(tensors, weights.spec) if isinstance(weights, AdapterWeights) else dict(tensors)


# -- learner side ----------------------------------------------------------------------------------------------
def wrap_policy(model: torch.nn.Module, rank: int, alpha: int, target_modules: tuple[str, ...],
                dropout: float) -> torch.nn.Module:
    """`model` as a peft LoRA model (its base frozen); target_modules empty = every linear layer but the head."""
    from peft import LoraConfig, get_peft_model

    targets: list[str] | str = list(target_modules) if target_modules else "all-linear"
    config = LoraConfig(r=rank, lora_alpha=alpha, target_modules=targets, lora_dropout=dropout)
    return get_peft_model(model, config)  # ValueError naming target modules that match no layer


def is_lora(model: torch.nn.Module) -> bool:
    return hasattr(model, "peft_config")


def unwrapped(model: torch.nn.Module) -> torch.nn.Module:
    """The Hugging Face model inside a peft wrapper (its adapted layers live in it), or `model` itself."""
    return model.get_base_model() if is_lora(model) else model  # type: ignore[operator]


def adapter_weights(model: torch.nn.Module) -> AdapterWeights:
    """The adapter of a peft-wrapped policy as an engine update (live tensors: copy before the next step)."""
    config: Any = model.peft_config[ADAPTER_NAME]  # type: ignore[index]
    tensors = {name.removeprefix(PEFT_PREFIX): p.detach() for name, p in model.named_parameters()
               if ".lora_A." in name or ".lora_B." in name}
    layers = sorted({name.split(".lora_A.")[0] for name in tensors if ".lora_A." in name})  # full names, not suffixes
    return AdapterWeights(tensors, LoraSpec(int(config.r), int(config.lora_alpha), tuple(layers)))


def load_adapter_into_policy(model: torch.nn.Module, weights: Mapping[str, torch.Tensor]) -> None:
    """Set a peft-wrapped policy's adapter from `adapter_weights` output (a checkpoint's)."""
    missing, unexpected = model.load_state_dict({PEFT_PREFIX + k: v for k, v in weights.items()}, strict=False)
    lost = [k for k in missing if ".lora_A." in k or ".lora_B." in k]
    if unexpected or lost:
        raise KeyError(f"adapter does not fit the policy: unexpected {unexpected[:3]}, missing {lost[:3]}")


# -- engine side -----------------------------------------------------------------------------------------------
def load_policy_weights(model: torch.nn.Module, weights: Mapping[str, torch.Tensor]) -> None:
    """Apply a weight update to an engine's model: full weights, or an adapter (injected at its first update)."""
    if isinstance(weights, AdapterWeights):
        problems = adapter_problems(model, weights)
        if problems:
            raise ValueError("adapter does not fit the model: " + "; ".join(problems[:5]))
        if not any(".lora_A." in name for name, _ in model.named_parameters()):
            from peft import inject_adapter_in_model

            inject_adapter_in_model(weights.spec.peft_config(), model, adapter_name=ADAPTER_NAME)
            model.requires_grad_(False)
    missing, unexpected = model.load_state_dict(dict(weights), strict=False)
    if unexpected:
        raise KeyError(f"unknown weights in update: {unexpected[:5]}")


def adapter_problems(model: torch.nn.Module, weights: AdapterWeights) -> list[str]:
    """Why `weights` cannot be an adapter of `model` (empty when it can): each tensor must be the lora_A
    [rank, in] or lora_B [out, rank] of a linear layer named in the spec."""
    modules = dict(model.named_modules())
    targets, rank = set(weights.spec.target_modules), weights.spec.rank
    problems, seen = [], set()
    for name, tensor in weights.items():
        for part, expect in ((".lora_A.", "A"), (".lora_B.", "B")):
            if part in name:
                layer_name = name.split(part)[0]
                break
        else:
            problems.append(f"{name} is not a lora_A / lora_B tensor")
            continue
        seen.add(layer_name)
        layer = modules.get(layer_name)
        base = getattr(layer, "base_layer", layer)  # an already injected layer wraps the linear
        if layer_name not in targets or not isinstance(base, torch.nn.Linear):
            problems.append(f"{name}: {layer_name} is not an adapted linear layer of the model")
            continue
        injected = getattr(layer, "lora_" + expect, {})  # an adapter already in the model fixes the shapes
        if ADAPTER_NAME in injected:
            shape = tuple(injected[ADAPTER_NAME].weight.shape)
            if layer.scaling[ADAPTER_NAME] != weights.spec.alpha / rank:  # type: ignore[union-attr, index]
                problems.append(f"{name}: scaling alpha/rank {weights.spec.alpha / rank:g} != the engine's "
                                f"{layer.scaling[ADAPTER_NAME]:g}")  # type: ignore[union-attr, index]
        else:
            shape = (rank, base.in_features) if expect == "A" else (base.out_features, rank)
        if tuple(tensor.shape) != shape:
            problems.append(f"{name}: shape {tuple(tensor.shape)} != {shape}")
    problems += [f"no tensors for {t}" for t in sorted(targets - seen)]
    return problems


def read_weights_file(path: str) -> dict[str, torch.Tensor]:
    """A safetensors weights file as an update: an `AdapterWeights` when its metadata carries a LoRA spec."""
    from safetensors import safe_open

    with safe_open(path, framework="pt") as f:
        metadata = f.metadata() or {}
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    if SAFETENSORS_METADATA_KEY in metadata:
        return AdapterWeights(tensors, LoraSpec.from_json(metadata[SAFETENSORS_METADATA_KEY]))
    return tensors


def weights_file_metadata(weights: Mapping[str, torch.Tensor]) -> dict[str, str] | None:
    return {SAFETENSORS_METADATA_KEY: weights.spec.to_json()} if isinstance(weights, AdapterWeights) else None


def save_peft_adapter(weights: AdapterWeights, directory: str | Path) -> Path:
    """`weights` as a PEFT adapter directory (adapter_config.json + adapter_model.safetensors), the format
    vLLM's LoRA requests and `PeftModel.from_pretrained` load."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    weights.spec.peft_config().save_pretrained(str(directory))
    tensors = {PEFT_PREFIX + k.replace(f".{ADAPTER_NAME}.", "."): v.detach().to("cpu").contiguous()
               for k, v in weights.items()}
    save_file(tensors, str(directory / "adapter_model.safetensors"))
    return directory


def merge_adapter(base_model: str, adapter_dir: str | Path, out_dir: str | Path, tokenizer_dir: Any = None) -> Path:
    """A Hugging Face model directory holding `base_model` with the adapter merged into its weights."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = AutoModelForCausalLM.from_pretrained(base_model, dtype=torch.float32)
    merged = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()
    out = Path(out_dir)
    merged.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(tokenizer_dir or base_model)).save_pretrained(str(out))
    return out
