"""The GRPO objective, OlmoRL defaults, every deviation a switch. Pure tensor functions.

Notation: per completion token, `logp` is the current policy (with grad), `logp_old` the learner's policy
before this step (pi_old, also AReaL's proximal policy), `logp_behav` the engine's sampling logprob
(pi_vllm / pi_behav). `mask` is 1 on completion tokens that enter the loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# Log-ratio clamp before exp(): keeps a wildly off-policy token from overflowing (open-instruct clamps too).
_MAX_LOG_RATIO = 20.0


def group_advantages(rewards: torch.Tensor, normalization: str = "centered", eps: float = 1e-6) -> torch.Tensor:
    """Advantages of one group: reward - group mean (OlmoRL, Dr GRPO); `std` also divides by the std (GRPO)."""
    centered = rewards - rewards.mean()
    if normalization == "centered":
        return centered
    if normalization == "std":
        return centered / (rewards.std(unbiased=True) + eps) if rewards.numel() > 1 else centered
    raise ValueError(f"unknown advantage normalization {normalization!r} (centered | std)")


def decoupled_group_advantages(components: dict[str, tuple[float, list[float]]],
                               normalization: str = "centered") -> torch.Tensor:
    """GDPO-style advantages (group reward-decoupled normalization: "GDPO: Group reward-Decoupled Normalization
    Policy Optimization for Multi-reward RL Optimization", Liu et al. 2026): each component's rewards are
    normalized within the group on their own (`normalization`, as for one reward), then summed with the
    components' weights, so a component of large scale or variance does not drown the others' signal. GDPO
    also normalizes the sum over the batch; here the sum is the advantage, as one reward's would be.
    `components`: name -> (weight, one reward per completion)."""
    total = None
    for weight, rewards in components.values():
        term = weight * group_advantages(torch.tensor(rewards, dtype=torch.float64), normalization)
        total = term if total is None else total + term
    assert total is not None, "no component"
    return total


def is_zero_std(rewards: torch.Tensor) -> bool:
    """A group whose rewards are all equal carries no gradient signal (exact comparison, not a float std)."""
    return bool((rewards == rewards[0]).all())


@dataclass(frozen=True)
class LossSettings:
    objective: str = "olmorl"  # olmorl (truncated IS) | decoupled (AReaL) | ppo (ratio against the engine)
    eps_low: float = 0.2  # lower clip: ratio >= 1 - eps_low
    eps_high: float = 0.272  # upper clip (clip-higher): ratio <= 1 + eps_high
    tis_cap: float | None = 2.0  # olmorl: IS weight min(pi_old/pi_behav, cap); decoupled: tokens above are masked
    kl_beta: float = 0.0  # weight of the k3 KL to the reference policy (0 = no reference)


def token_loss_terms(
    logp: torch.Tensor,
    logp_old: torch.Tensor,
    logp_behav: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    settings: LossSettings,
    logp_ref: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token loss (to be summed under `mask` and normalized by the caller) and per-token diagnostics.

    olmorl:    -min(pi_old/pi_behav, cap) * min(r A, clip(r, 1-el, 1+eh) A), r = pi/pi_old
    decoupled: same with the behaviour weight uncapped, tokens whose weight exceeds `cap` masked (AReaL)
    ppo:       -min(r A, clip(r) A), r = pi/pi_behav (the "coupled" baseline; no correction)
    """
    advantages = advantages.to(logp.dtype)
    if settings.objective == "ppo":
        anchor = logp_behav
        weight = torch.ones_like(logp)
    elif settings.objective in ("olmorl", "decoupled"):
        anchor = logp_old
        weight = torch.exp((logp_old - logp_behav).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)).detach()
    else:
        raise ValueError(f"unknown objective {settings.objective!r} (olmorl | decoupled | ppo)")
    raw_weight = weight
    capped = torch.zeros_like(mask, dtype=torch.bool)
    if settings.tis_cap is not None and settings.objective == "olmorl":
        capped = weight > settings.tis_cap
        weight = weight.clamp(max=settings.tis_cap)
    elif settings.tis_cap is not None and settings.objective == "decoupled":
        capped = weight > settings.tis_cap
        weight = torch.where(capped, torch.zeros_like(weight), weight)

    ratio = torch.exp((logp - anchor.detach()).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO))
    clipped_ratio = ratio.clamp(1.0 - settings.eps_low, 1.0 + settings.eps_high)
    surrogate = torch.minimum(ratio * advantages, clipped_ratio * advantages)
    loss = -weight * surrogate
    if settings.kl_beta:
        if logp_ref is None:
            raise ValueError("kl_beta > 0 needs reference logprobs")
        loss = loss + settings.kl_beta * k3_kl(logp, logp_ref)
    stats = {
        "ratio": ratio.detach(),
        "is_weight": raw_weight,
        "is_capped": capped.float(),
        # the clipped branch is active (no gradient through the ratio) below 1-el with A<0 / above 1+eh with A>0
        "clip_low": ((ratio < 1.0 - settings.eps_low) & (advantages < 0)).float(),
        "clip_high": ((ratio > 1.0 + settings.eps_high) & (advantages > 0)).float(),
    }
    return loss, stats


def k3_kl(logp: torch.Tensor, logp_ref: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(pi || pi_ref) per token: exp(d) - d - 1 with d = logp_ref - logp (>= 0, unbiased)."""
    d = (logp_ref - logp).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
    return torch.exp(d) - d - 1.0


def loss_counts(lengths: list[int], in_loss: list[bool]) -> tuple[float, float]:
    """(loss tokens, loss sequences) of a batch: what the normalizations divide by."""
    used = [n for n, keep in zip(lengths, in_loss) if keep and n > 0]
    return float(sum(used)), float(len(used))


def per_sequence_token_weight(lengths: list[int], in_loss: list[bool], normalization: str,
                              constant: float | None, totals: tuple[float, float] | None = None) -> list[float]:
    """Weight of every loss token of each sequence so that the sum over the whole optimizer batch is the loss.

    Computed once per optimizer batch (never per micro-batch): token = 1/total tokens (OlmoRL/DAPO),
    sequence = 1/(len * n_seqs) (GRPO), constant = 1/(constant * n_seqs) (Dr GRPO). `totals` overrides the
    counts when this is one data-parallel rank's share of a larger batch.
    """
    n_tokens, n_seqs = totals if totals is not None else loss_counts(lengths, in_loss)
    out = []
    for n, keep in zip(lengths, in_loss):
        if not keep or n == 0:
            out.append(0.0)
        elif normalization == "token":
            out.append(1.0 / n_tokens)
        elif normalization == "sequence":
            out.append(1.0 / (n * n_seqs))
        elif normalization == "constant":
            if not constant:
                raise ValueError("loss normalization 'constant' needs a positive constant")
            out.append(1.0 / (constant * n_seqs))
        else:
            raise ValueError(f"unknown loss normalization {normalization!r} (token | sequence | constant)")
    return out
