"""KV caches kept across requests by `GenerationRequest.cache_key` (the torch engine's multi-turn reuse).

A multi-turn rollout sends each turn as a new request whose prompt is the whole conversation so far: without
this, every turn re-prefills it. A finished row with a `cache_key` leaves its KV cache here (its own columns
only, `[1, heads, length, dim]` per layer, for the ids it covers: prompt + tokens but the last, which was
sampled and never fed). A later request with that key whose prompt starts with exactly those ids takes it
and prefills only the rest (the last sampled token and the tool reply). A prompt that does not extend the
kept ids (an edited history, another template rendering) is prefilled whole, as without a key.

Kept caches are dropped on every weight update (they were computed under the old weights) and past
`capacity` (least recently kept first), so memory is bounded.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch


@dataclass
class KeptCache:
    ids: list[int]  # the tokens whose keys and values these are, in order (positions 0..len-1)
    layers: list[tuple[torch.Tensor, torch.Tensor]]  # per layer (keys, values), each [1, heads, len(ids), dim]

    def empty(self) -> KeptCache:
        """A cache of no tokens with this one's layout: what a fresh row extends."""
        return KeptCache([], [(k[:, :, :0], v[:, :, :0]) for k, v in self.layers])


class KeptCaches:
    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError("kept_caches must be >= 0")
        self.capacity = capacity
        self._kept: OrderedDict[str, KeptCache] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, key: str, kept: KeptCache) -> None:
        if self.capacity == 0:
            return
        self._kept.pop(key, None)
        self._kept[key] = kept
        while len(self._kept) > self.capacity:
            self._kept.popitem(last=False)

    def take(self, key: str | None, prompt_ids: list[int]) -> KeptCache | None:
        """The cache kept under `key` if `prompt_ids` strictly extends its ids (it is removed either way)."""
        kept = self._kept.pop(key, None) if key is not None else None
        if kept is None or len(prompt_ids) <= len(kept.ids) or prompt_ids[:len(kept.ids)] != kept.ids:
            return None
        return kept

    def clear(self) -> None:
        self._kept.clear()


def row_cache(cache, mask: torch.Tensor, row: int, ids: list[int]) -> KeptCache:
    """Row `row` of a batch cache, its padding columns dropped."""
    columns = mask[row].nonzero().squeeze(1)
    if len(columns) != len(ids):
        raise AssertionError(f"row cache holds {len(columns)} tokens, expected {len(ids)}")
    return KeptCache(list(ids), [(layer.keys[row:row + 1].index_select(2, columns),
                                  layer.values[row:row + 1].index_select(2, columns)) for layer in cache.layers])


@dataclass
class Past:
    """Rows of KV cache that a forward extends: kept caches, or the running batch (which may hold pad columns)."""
    layers: list[tuple[torch.Tensor, torch.Tensor]]  # per layer (keys, values), each [rows, heads, columns, dim]
    mask: torch.Tensor  # [rows, columns] 1 where the column is one of the row's tokens
    starts: torch.Tensor  # [rows] position id of each row's first new token


def kept_past(kept: KeptCache) -> Past:
    return Past(kept.layers, torch.ones((1, len(kept.ids)), dtype=torch.long), torch.tensor([len(kept.ids)]))


def batch_past(cache, mask: torch.Tensor, positions: torch.Tensor) -> Past:
    """The running batch: each row's next token (sampled, not yet fed) goes in at `positions`."""
    return Past([(layer.keys, layer.values) for layer in cache.layers], mask, positions)


def extension_inputs(pasts: list[Past], suffixes: list[list[int]], pad_id: int, config, device):
    """A batch that extends caches: (input_ids, attention_mask, position_ids, cache), rows in order of `pasts`.

    Caches are left-padded to the longest and stacked; each suffix is left-padded after its cache, so a row
    reads [pad | its columns | pad | suffix] with the pads masked and positions counted over its own tokens only.
    """
    from transformers import DynamicCache

    width = max(p.mask.shape[1] for p in pasts)
    cache = DynamicCache(config=config)
    for index in range(len(pasts[0].layers)):
        keys = torch.cat([left_pad(p.layers[index][0].to(device), width) for p in pasts])
        values = torch.cat([left_pad(p.layers[index][1].to(device), width) for p in pasts])
        cache.update(keys, values, index)
    past_mask = torch.cat([left_pad(p.mask.to(device), width) for p in pasts])
    input_ids, new_mask = left_padded_ids(suffixes, pad_id)
    starts = torch.cat([p.starts.to(device) for p in pasts])[:, None]
    positions = (starts + new_mask.to(device).cumsum(dim=1) - 1).clamp(min=0)
    return input_ids.to(device), torch.cat([past_mask, new_mask.to(device)], dim=1), positions, cache


def compacted(cache, mask: torch.Tensor) -> torch.Tensor:
    """Drop pad columns in place when they are most of the cache: each row's own columns, in order, right-aligned.

    A forward that admits rows beside running ones leaves the running rows a pad column per admitted token;
    keys carry their rotary positions, so moving a column changes nothing but the cost of attending over it.
    Returns the (new) mask."""
    width = int(mask.sum(dim=1).max())
    if mask.shape[1] <= max(2 * width, 64):
        return mask
    columns = torch.sort(mask, dim=1, stable=True).indices[:, -width:]  # pads first, then the row's own in order
    for layer in cache.layers:
        spread = columns[:, None, :, None].expand(-1, layer.keys.shape[1], -1, layer.keys.shape[3])
        layer.keys, layer.values = layer.keys.gather(2, spread), layer.values.gather(2, spread)
    return mask.gather(1, columns)


def left_padded_ids(id_lists: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token id lists left-padded to the longest: (input_ids, mask with 1 on each list's own ids), [rows, width]."""
    width = max(len(ids) for ids in id_lists)
    input_ids = torch.full((len(id_lists), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(id_lists), width), dtype=torch.long)
    for r, ids in enumerate(id_lists):
        input_ids[r, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
        mask[r, width - len(ids):] = 1
    return input_ids, mask


def left_pad(t: torch.Tensor, width: int) -> torch.Tensor:
    """Pad the sequence axis (dim 2 for KV [B, H, T, D], dim 1 for masks [B, T]) on the left with zeros."""
    axis = 2 if t.dim() == 4 else 1
    missing = width - t.shape[axis]
    if missing <= 0:
        return t
    shape = list(t.shape)
    shape[axis] = missing
    return torch.cat([torch.zeros(shape, dtype=t.dtype, device=t.device), t], dim=axis)
