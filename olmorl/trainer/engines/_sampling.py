"""The engine's sampling distribution: temperature, then top-k, then top-p (nucleus), renormalized.

The log-probabilities returned here are those of the distribution a token was actually drawn from (the
behaviour policy). The learner scores the same token under the full softmax at the same temperature, so with
truncation the two differ by the log of the kept mass; the truncated importance-sampling weight (capped at
`tis_cap`) is what corrects for it (trl#6789: top-p/top-k bias the ratio by exactly that mass).
"""

from __future__ import annotations

import torch


def check_sampling(temperature: float, top_k: int, top_p: float) -> None:
    """Raise ValueError for settings no engine accepts (shared by the config and every engine)."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, not {temperature!r}")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], not {top_p!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be an integer >= 0 (0 = off), not {top_k!r}")


def sampling_logprobs(logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0,
                      top_p: float = 1.0) -> torch.Tensor:
    """[rows, vocab] log-probabilities of the truncated, renormalized sampling distribution (-inf = cut)."""
    scaled = logits / temperature
    if top_k and top_k < scaled.shape[-1]:
        keep = scaled.topk(top_k, dim=-1).indices  # exactly k tokens, ties broken by index
        scaled = torch.full_like(scaled, float("-inf")).scatter(-1, keep, scaled.gather(-1, keep))
    if top_p < 1.0:
        probs, order = torch.softmax(scaled, dim=-1).sort(dim=-1, descending=True)
        # the smallest prefix whose mass reaches top_p: cut a token once the mass before it already does
        cut_sorted = (probs.cumsum(dim=-1) - probs) >= top_p
        cut_sorted[:, 0] = False
        scaled = scaled.masked_fill(cut_sorted.scatter(-1, order, cut_sorted), float("-inf"))
    return torch.log_softmax(scaled, dim=-1)
