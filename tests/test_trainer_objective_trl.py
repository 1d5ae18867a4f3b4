"""The objectives against TRL 1.16's own loss code (GRPOTrainer._compute_loss), value and gradient.

TRL's method runs unchanged on a stand-in trainer object that carries only the attributes it reads; the policy
logprobs it would compute are fed in. Each case makes the check able to fail: ratios on both sides of the clip
range, advantages of both signs, engine logprobs whose truncated IS weight is above the cap on some tokens, and
a padded batch (mask zeros) so the per-sequence means are taken over unequal lengths.

The mapping (what each olmorl objective is in TRL's terms):
| olmorl | TRL loss_type | importance_sampling_level | our loss_norm | TRL IS correction |
| olmorl | dapo  | token    | token    | token_truncate at tis_cap |
| gspo   | grpo  | sequence | sequence | token_truncate at tis_cap |
| cispo  | cispo | token    | token    | token_truncate at tis_cap (TRL's epsilon_high = our 1 + eps_high) |
| sapo   | sapo  | token    | sequence | token_truncate at tis_cap |
"""

from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

from olmorl.trainer._objective import LossSettings, per_sequence_token_weight, token_loss_terms

trl_grpo = pytest.importorskip("trl.trainer.grpo_trainer")

CAP = 2.0


def _batch():
    """3 sequences x 5 positions (float64). Row lengths 5, 3, 4 (right padding)."""
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]], dtype=torch.float64)
    old = torch.tensor([[-1.0, -2.0, -0.5, -1.5, -3.0], [-0.7, -1.1, -2.2, 0.0, 0.0], [-0.3, -1.9, -0.8, -1.2, 0.0]],
                       dtype=torch.float64)
    # log r per token: both sides of [1 - 0.2, 1 + 0.272] (log 0.8 = -0.22, log 1.272 = 0.24), and the row means
    # of sequence 0 (+0.26) and 1 (-0.33) leave the range while sequence 2's (+0.05) stays inside
    log_r = torch.tensor([[0.6, -0.3, 0.5, 0.1, 0.4], [-0.5, 0.2, -0.7, 0.0, 0.0], [0.4, -0.5, 0.1, 0.2, 0.0]],
                         dtype=torch.float64)
    # log pi_old - log pi_behav: IS weights exp(.) above the cap 2 on three tokens (log 2 = 0.69)
    old_minus_behav = torch.tensor([[0.9, 0.0, -0.4, 1.2, 0.1], [0.3, -0.2, 0.8, 0.0, 0.0],
                                    [0.0, 0.5, -0.1, 0.2, 0.0]], dtype=torch.float64)
    advantages = torch.tensor([1.0, -0.5, 0.75], dtype=torch.float64)
    return mask, old, old + log_r, old - old_minus_behav, advantages


def _trl_loss(loss_type: str, level: str, epsilon_high: float, logp, old, behav, advantages, mask):
    """TRL 1.16's GRPOTrainer._compute_loss on a stand-in trainer (no model: the logprobs are given)."""
    stand_in = SimpleNamespace(
        loss_type=loss_type, importance_sampling_level=level, epsilon_low=0.2, epsilon_high=epsilon_high, beta=0.0,
        top_entropy_quantile=1.0, off_policy_mask_threshold=None, aux_loss_enabled=False,
        _entropy_bonus_enabled=False, use_vllm=True, vllm_importance_sampling_correction=True,
        current_gradient_accumulation_steps=1, model=SimpleNamespace(training=True),
        args=SimpleNamespace(delta=None, sapo_temperature_pos=1.0, sapo_temperature_neg=1.05,
                             use_bias_correction_kl=False, steps_per_generation=1),
        accelerator=SimpleNamespace(num_processes=1, gather=lambda x: x, reduce=lambda x, reduction: x),
        _metrics=defaultdict(lambda: defaultdict(list)),
        _get_per_token_logps_and_entropies=lambda *a, **k: (logp, torch.zeros_like(logp), None))
    # TRL's token_truncate correction (computed in _generate_and_score_completions): exp(old - sampling), capped
    is_ratio = torch.exp((old - behav) * mask).clamp(max=CAP)
    inputs = {"prompt_ids": torch.zeros(3, 1, dtype=torch.long), "prompt_mask": torch.ones(3, 1, dtype=torch.long),
              "completion_ids": torch.zeros(3, 5, dtype=torch.long), "completion_mask": mask,
              "advantages": advantages, "old_per_token_logps": old, "importance_sampling_ratio": is_ratio,
              "num_items_in_batch": mask.sum()}
    return trl_grpo.GRPOTrainer._compute_loss(stand_in, None, inputs)


def _our_loss(settings: LossSettings, loss_norm: str, logp, old, behav, advantages, mask):
    """Ours on the flat masked tokens, normalized the way the learners do."""
    keep = mask.bool()
    lengths = [int(n) for n in mask.sum(1)]
    seq_ids = torch.arange(3).unsqueeze(1).expand(3, 5)[keep]
    adv = advantages.unsqueeze(1).expand(3, 5)[keep]
    loss_tok, stats = token_loss_terms(logp[keep], old[keep], behav[keep], adv, torch.ones_like(adv, dtype=torch.bool),
                                       settings, seq_ids=seq_ids)
    per_seq = per_sequence_token_weight(lengths, [True] * 3, loss_norm, None)
    weights = torch.tensor([per_seq[i] for i in seq_ids.tolist()], dtype=torch.float64)
    return (loss_tok * weights).sum(), stats


CASES = {
    "olmorl": (dict(), "token", ("dapo", "token", 0.272)),
    "gspo": (dict(), "sequence", ("grpo", "sequence", 0.272)),
    "cispo": (dict(eps_high=0.272), "token", ("cispo", "token", 1.272)),
    "sapo": (dict(), "sequence", ("sapo", "token", 0.272)),
}


@pytest.mark.parametrize("objective", list(CASES))
def test_objective_matches_trl_value_and_gradient(objective):
    extra, loss_norm, (loss_type, level, trl_eps_high) = CASES[objective]
    mask, old, logp0, behav, advantages = _batch()
    settings = LossSettings(objective=objective, eps_low=0.2, tis_cap=CAP, **{"eps_high": 0.272, **extra})

    ours_logp = logp0.clone().requires_grad_(True)
    ours, stats = _our_loss(settings, loss_norm, ours_logp, old, behav, advantages, mask)
    ours.backward()
    trl_logp = logp0.clone().requires_grad_(True)
    theirs = _trl_loss(loss_type, level, trl_eps_high, trl_logp, old, behav, advantages, mask)
    theirs.backward()

    torch.testing.assert_close(ours.detach(), theirs.detach(), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ours_logp.grad * mask, trl_logp.grad * mask, rtol=1e-10, atol=1e-12)
    assert stats["is_capped"].sum() == 3  # the check covers the truncated IS weight
    # the clip acts somewhere and somewhere not, so a wrong clip boundary changes the gradient
    if objective in ("olmorl", "gspo", "cispo"):
        clipped = stats["clip_low"] + stats["clip_high"]
        assert 0 < clipped.sum() < clipped.numel()


def test_gspo_is_not_the_token_level_objective():
    """The same batch under olmorl's token ratios gives another gradient: the GSPO case above tests the
    sequence ratio, not an objective that happens to agree with the token-level one here."""
    mask, old, logp0, behav, advantages = _batch()
    grads = []
    for objective in ("olmorl", "gspo"):
        logp = logp0.clone().requires_grad_(True)
        loss, _ = _our_loss(LossSettings(objective=objective, tis_cap=CAP), "sequence", logp, old, behav,
                            advantages, mask)
        loss.backward()
        grads.append(logp.grad)
    assert not torch.allclose(grads[0], grads[1])
