"""The torch engine's running batch in the model's KV cache: one row per sequence, all left-padded to one width.

Rows are independent sequences at different lengths: a row's columns are those its attention mask marks
(`[rows, columns]`, 1 where the column is one of the row's tokens), the others are pad. Rows join (`stacked`:
both batches left-padded to the wider) and leave (`kept_rows`: the columns no remaining row uses are dropped)
between decode steps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

import torch

from olmorl.trainer.engines._kept_cache import left_pad, left_padded_ids

if TYPE_CHECKING:
    from transformers import PretrainedConfig


class KVLayer(Protocol):
    keys: torch.Tensor  # [rows, heads, columns, dim]
    values: torch.Tensor


class KVCache(Protocol):
    """What the engine uses of the model's KV cache (a transformers DynamicCache of attention layers)."""

    @property
    def layers(self) -> Sequence[KVLayer]: ...


def prefill_inputs(id_lists: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask, position_ids) of a forward that prefills `id_lists`, each left-padded."""
    input_ids, mask = left_padded_ids(id_lists, pad_id)
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    return input_ids, mask, positions


def stacked(cache: KVCache, mask: torch.Tensor, more: KVCache, more_mask: torch.Tensor) -> torch.Tensor:
    """Append the rows of `more` to `cache` in place (both left-padded to the wider); returns their mask."""
    width = max(mask.shape[1], more_mask.shape[1])
    for layer, extra in zip(cache.layers, more.layers):
        for attr in ("keys", "values"):
            a, b = left_pad(getattr(layer, attr), width), left_pad(getattr(extra, attr), width)
            setattr(layer, attr, torch.cat([a, b], dim=0))
    return torch.cat([left_pad(mask, width), left_pad(more_mask, width)], dim=0)


def kept_rows(cache: KVCache, mask: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Keep only `rows` of `cache` in place, without the columns none of them uses; returns their mask."""
    mask = mask.index_select(0, rows)
    first = int(mask.any(dim=0).nonzero()[0])
    for layer in cache.layers:
        layer.keys = layer.keys.index_select(0, rows)[:, :, first:]
        layer.values = layer.values.index_select(0, rows)[:, :, first:]
    return mask[:, first:]


def causal_lm_config(model: torch.nn.Module) -> PretrainedConfig:
    """The model's Hugging Face config, which sizes a fresh KV cache; a clear error for any other model."""
    from transformers import PretrainedConfig

    config = getattr(model, "config", None)
    if not isinstance(config, PretrainedConfig):
        raise TypeError(f"TorchEngine generates with a Hugging Face causal LM (a model with a PretrainedConfig), "
                        f"not {type(model).__name__}")
    return config
