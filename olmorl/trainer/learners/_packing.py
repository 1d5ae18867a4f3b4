"""Sequence packing for training: several samples in one row, each with its own positions and attention.

A packed row holds samples back to back (no padding). Position ids restart at 0 for every sample, and a
block-diagonal causal mask keeps each sample from attending to the ones before it, so every token's
logprob equals the unpacked one. Rows are filled first-fit-decreasing up to a token budget; a row is one
micro-batch. The mask is boolean [1, 1, row, row] (row^2 bytes): keep rows at a few thousand tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import torch

from olmorl.trainer.learners._samples import TrainSample

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def pack_rows(lengths: list[int], row_tokens: int) -> list[list[int]]:
    """Indices of sequences grouped into rows of at most `row_tokens` tokens (a longer one gets its own row)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    rows: list[list[int]] = []
    room: list[int] = []
    for i in order:
        for r, free in enumerate(room):
            if lengths[i] <= free:
                rows[r].append(i)
                room[r] -= lengths[i]
                break
        else:
            rows.append([i])
            room.append(row_tokens - lengths[i])
    return [sorted(r) for r in rows]


def packed_inputs(samples: list[TrainSample]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                                                       torch.Tensor]:
    """input_ids, position_ids, the boolean block-causal mask, and (column, target) of every completion token."""
    ids: list[int] = []
    positions: list[int] = []
    segments: list[int] = []
    cols: list[int] = []
    targets: list[int] = []
    for k, s in enumerate(samples):
        seq = s.prompt_ids + s.completion_ids
        start = len(ids)
        ids += seq
        positions += range(len(seq))
        segments += [k] * len(seq)
        cols += range(start + len(s.prompt_ids) - 1, start + len(seq) - 1)  # hidden at t predicts token t+1
        targets += s.completion_ids
    seg = torch.tensor(segments)
    n = len(ids)
    causal = torch.ones((n, n), dtype=torch.bool).tril_()
    mask = (causal & (seg[:, None] == seg[None, :]))[None, None]
    return (torch.tensor([ids]), torch.tensor([positions]), mask, torch.tensor(cols), torch.tensor(targets))


def enable_activation_checkpointing(model: torch.nn.Module, offload: bool = False) -> None:
    """Recompute each decoder layer's activations in backward instead of keeping them (HF models).

    `offload` keeps the saved layer inputs in host memory (GPU only; Unsloth's offloaded checkpointing)."""
    hf = cast("PreTrainedModel", model)  # the methods below are transformers', not torch's
    kwargs = {"use_reentrant": False}
    if hasattr(hf, "activation_checkpointing_enable"):  # transformers >= 5.2x
        hf.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs, offload=offload)
    else:
        hf.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    hf.config.use_cache = False
