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


# Objectives whose engine mismatch is corrected by the truncated IS weight min(pi_old/pi_behav, tis_cap).
_TRUNCATED_IS = ("olmorl", "gspo", "cispo", "sapo")
OBJECTIVES = ("olmorl", "decoupled", "ppo", "gspo", "cispo", "sapo")


@dataclass(frozen=True)
class LossSettings:
    objective: str = "olmorl"  # one of OBJECTIVES (token_loss_terms says what each computes)
    eps_low: float = 0.2  # lower clip: ratio >= 1 - eps_low
    eps_high: float = 0.272  # upper clip (clip-higher): ratio <= 1 + eps_high; cispo: IS weight <= 1 + eps_high
    tis_cap: float | None = 2.0  # olmorl: IS weight min(pi_old/pi_behav, cap); decoupled: tokens above are masked
    kl_beta: float = 0.0  # weight of the k3 KL to the reference policy (0 = no reference)
    sapo_tau_pos: float = 1.0  # sapo: gate temperature of tokens with A > 0 (SAPO paper, TRL default)
    sapo_tau_neg: float = 1.05  # sapo: gate temperature of tokens with A <= 0


def token_loss_terms(
    logp: torch.Tensor,
    logp_old: torch.Tensor,
    logp_behav: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    settings: LossSettings,
    logp_ref: torch.Tensor | None = None,
    seq_ids: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token loss (to be summed under `mask` and normalized by the caller) and per-token diagnostics.

    With w = min(pi_old/pi_behav, cap) (the truncated IS weight) and r = pi/pi_old:
    olmorl:    -w * min(r A, clip(r, 1-el, 1+eh) A)
    decoupled: same with the behaviour weight uncapped, tokens whose weight exceeds `cap` masked (AReaL)
    ppo:       -min(r A, clip(r) A), r = pi/pi_behav (the "coupled" baseline; no correction)
    gspo:      olmorl's form with r replaced by the sequence ratio s = exp(mean of log r over the sequence's
               masked tokens), the same value on each of its tokens (GSPO; `seq_ids` numbers each token's sequence)
    cispo:     -w * sg(min(r, 1+eh)) * A * log pi (MiniMax-M1: the IS weight is clipped, never a token)
    sapo:      -w * (4/tau) sigmoid(tau (r - 1)) * A, tau = sapo_tau_pos if A > 0 else sapo_tau_neg (SAPO's gate)
    """
    advantages = advantages.to(logp.dtype)
    if settings.objective == "ppo":
        anchor = logp_behav
        weight = torch.ones_like(logp)
    elif settings.objective in _TRUNCATED_IS or settings.objective == "decoupled":
        anchor = logp_old
        weight = torch.exp((logp_old - logp_behav).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)).detach()
    else:
        raise ValueError(f"unknown objective {settings.objective!r} ({' | '.join(OBJECTIVES)})")
    raw_weight = weight
    capped = torch.zeros_like(mask, dtype=torch.bool)
    if settings.tis_cap is not None and settings.objective in _TRUNCATED_IS:
        capped = weight > settings.tis_cap
        weight = weight.clamp(max=settings.tis_cap)
    elif settings.tis_cap is not None and settings.objective == "decoupled":
        capped = weight > settings.tis_cap
        weight = torch.where(capped, torch.zeros_like(weight), weight)

    log_ratio = logp - anchor.detach()
    if settings.objective == "gspo":
        if seq_ids is None:
            raise ValueError("objective gspo needs seq_ids (the sequence of each token)")
        log_ratio = _sequence_mean(log_ratio, seq_ids, mask)
    ratio = torch.exp(log_ratio.clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO))
    surrogate, clip_low, clip_high = _surrogate(logp, ratio, advantages, settings)
    loss = -weight * surrogate
    if settings.kl_beta:
        if logp_ref is None:
            raise ValueError("kl_beta > 0 needs reference logprobs")
        loss = loss + settings.kl_beta * k3_kl(logp, logp_ref)
    stats = {"ratio": ratio.detach(), "is_weight": raw_weight, "is_capped": capped.float(),
             "clip_low": clip_low.float(), "clip_high": clip_high.float()}
    return loss, stats


def _surrogate(logp: torch.Tensor, ratio: torch.Tensor, advantages: torch.Tensor,
               settings: LossSettings) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token policy term to maximize, and where its clip acts low / high (whatever carries no gradient
    through the ratio: PPO's clipped branch; cispo's clipped weight, whose token keeps its log pi gradient)."""
    upper = 1.0 + settings.eps_high
    if settings.objective == "cispo":
        clipped = ratio > upper
        return ratio.clamp(max=upper).detach() * advantages * logp, torch.zeros_like(clipped), clipped
    if settings.objective == "sapo":  # a smooth gate: its slope 4 s(1-s) r is 1 at r = 1 and fades both ways
        tau = torch.where(advantages > 0, settings.sapo_tau_pos, settings.sapo_tau_neg).to(ratio.dtype)
        gate = torch.sigmoid(tau * (ratio - 1.0)) * 4.0 / tau
        none = torch.zeros_like(ratio, dtype=torch.bool)
        return gate * advantages, none, none
    clipped_ratio = ratio.clamp(1.0 - settings.eps_low, upper)
    surrogate = torch.minimum(ratio * advantages, clipped_ratio * advantages)
    # the clipped branch is active (no gradient through the ratio) below 1-el with A<0 / above 1+eh with A>0
    return surrogate, (ratio < 1.0 - settings.eps_low) & (advantages < 0), (ratio > upper) & (advantages > 0)


def _sequence_mean(values: torch.Tensor, seq_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each token gets the mean of `values` over the masked tokens of its sequence (differentiable)."""
    seq_ids = seq_ids.to(values.device, torch.long)
    n = int(seq_ids.max()) + 1 if seq_ids.numel() else 0
    m = mask.to(values.dtype)
    sums = torch.zeros(n, dtype=values.dtype, device=values.device).index_add(0, seq_ids, values * m)
    counts = torch.zeros(n, dtype=values.dtype, device=values.device).index_add(0, seq_ids, m)
    return (sums / counts.clamp(min=1.0))[seq_ids]


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
