"""The GRPO objective against hand-computed values on tiny tensors, and the learner's logprob heads."""

import math

import pytest
import torch

from olmorl.trainer.learners._plain import Learner, token_logprobs
from olmorl.trainer.learners._samples import TrainSample
from olmorl.trainer._objective import (
    LossSettings,
    group_advantages,
    is_zero_std,
    k3_kl,
    per_sequence_token_weight,
    token_loss_terms,
)

T = torch.tensor


def test_centered_advantages_subtract_the_group_mean_only():
    adv = group_advantages(T([1.0, 0.0, 0.0, 1.0]))
    assert adv.tolist() == [0.5, -0.5, -0.5, 0.5]
    # a hard prompt (1 of 4 right) gets the same scale as an easy one: no std inflation
    assert group_advantages(T([1.0, 0.0, 0.0, 0.0])).tolist() == [0.75, -0.25, -0.25, -0.25]


def test_std_advantages_divide_by_the_unbiased_group_std():
    adv = group_advantages(T([1.0, 0.0, 0.0, 1.0]), "std", eps=0.0)
    # std = sqrt(4 * 0.25 / 3) = 0.57735
    assert adv.tolist() == pytest.approx([0.866025, -0.866025, -0.866025, 0.866025], abs=1e-5)
    with pytest.raises(ValueError):
        group_advantages(T([1.0, 0.0]), "whitened")


def test_zero_std_is_exact_equality():
    assert is_zero_std(T([1.0, 1.0, 1.0]))
    assert is_zero_std(T([0.0, 0.0]))
    assert not is_zero_std(T([0.0, 1e-9]))


def _terms(logp, old, behav, adv, **kw):
    settings = LossSettings(**kw)
    logp = T(logp, dtype=torch.float64, requires_grad=True)
    loss, stats = token_loss_terms(logp, T(old, dtype=torch.float64), T(behav, dtype=torch.float64),
                                   T(adv, dtype=torch.float64), torch.ones(len(adv), dtype=torch.bool), settings)
    return logp, loss, stats


def test_olmorl_truncated_is_and_clip_higher():
    l3, l15, l05 = math.log(3.0), math.log(1.5), math.log(0.5)
    old = [0.0, 0.0, 0.0, -1.0]
    behav = [-l3, -l3, -l3, -1.0 - l15]  # IS weights 3 (capped to 2), 3, 3, 1.5 (kept)
    logp = [l15, l15, l05, -1.0 + l15]  # ratios 1.5, 1.5, 0.5, 1.5
    adv = [1.0, -1.0, -1.0, 1.0]
    logp_t, loss, stats = _terms(logp, old, behav, adv)
    # token 0: A>0, r=1.5 > 1+0.272 -> clipped: -2 * 1.272
    # token 1: A<0, r=1.5: min(-1.5, -1.272) = -1.5 -> +2 * 1.5 (pessimistic branch, not clipped)
    # token 2: A<0, r=0.5 < 0.8: min(-0.5, -0.8) = -0.8 -> +2 * 0.8 (clipped low)
    # token 3: IS weight 1.5 under the cap: clipped high -> -1.5 * 1.272
    assert loss.tolist() == pytest.approx([-2.544, 3.0, 1.6, -1.908])
    assert stats["is_capped"].tolist() == [1.0, 1.0, 1.0, 0.0]
    assert stats["clip_high"].tolist() == [1.0, 0.0, 0.0, 1.0]
    assert stats["clip_low"].tolist() == [0.0, 0.0, 1.0, 0.0]
    loss.sum().backward()
    # clipped tokens carry no gradient; token 1: d/dlogp (2 * r) = 2 * 1.5
    assert logp_t.grad.tolist() == pytest.approx([0.0, 3.0, 0.0, 0.0])


def test_dapo_eps_high_and_no_cap():
    _, loss, stats = _terms([math.log(1.3)], [0.0], [-math.log(3.0)], [1.0], eps_high=0.28, tis_cap=None)
    assert loss.tolist() == pytest.approx([-3.0 * 1.28])
    assert stats["is_capped"].tolist() == [0.0]


def test_decoupled_masks_tokens_whose_behaviour_weight_exceeds_the_cap():
    l3, l15 = math.log(3.0), math.log(1.5)
    # weights pi_prox / pi_behav = 3 (masked) and 1.5 (kept, not truncated)
    _, loss, stats = _terms([0.0, 0.0], [0.0, 0.0], [-l3, -l15], [1.0, 1.0], objective="decoupled")
    assert loss.tolist() == pytest.approx([0.0, -1.5])
    assert stats["is_capped"].tolist() == [1.0, 0.0]


def test_ppo_objective_takes_the_ratio_against_the_engine():
    # r = pi / pi_behav = 1.5 > 1.272, A > 0 -> clipped; no IS weight
    _, loss, _ = _terms([0.0], [5.0], [-math.log(1.5)], [2.0], objective="ppo")
    assert loss.tolist() == pytest.approx([-2.0 * 1.272])


def test_gspo_needs_the_sequence_of_each_token():
    with pytest.raises(ValueError, match="seq_ids"):
        _terms([0.0], [0.0], [0.0], [1.0], objective="gspo")


def test_sapo_gate_at_ratio_one_has_the_plain_policy_gradient():
    # d/dlogp [(4/tau) sigmoid(tau (r - 1)) A] at r = 1 is A * 4 * 1/4 = A, whatever tau
    logp, loss, stats = _terms([0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [2.0, -1.0], objective="sapo",
                               sapo_tau_pos=3.0, sapo_tau_neg=0.5)
    loss.sum().backward()
    assert logp.grad.tolist() == pytest.approx([-2.0, 1.0])
    assert stats["clip_low"].sum() == 0 and stats["clip_high"].sum() == 0  # no hard clip


def test_cispo_keeps_the_gradient_of_tokens_whose_weight_is_clipped():
    # r = 3 > 1 + 0.272: PPO would drop the token's gradient (A > 0); CISPO weighs log pi by sg(1.272)
    logp, loss, stats = _terms([math.log(3.0)], [0.0], [0.0], [1.0], objective="cispo")
    loss.sum().backward()
    assert logp.grad.tolist() == pytest.approx([-1.272])
    assert stats["clip_high"].tolist() == [1.0]


def test_k3_kl_hand_values():
    # d = log(0.25) - log(0.5) = log 0.5 -> 0.5 - log 0.5 - 1 = 0.193147
    assert k3_kl(T([math.log(0.5)]), T([math.log(0.25)])).tolist() == pytest.approx([0.5 + math.log(2) - 1])
    assert k3_kl(T([-1.0]), T([-1.0])).tolist() == [0.0]
    logp = T([math.log(0.5)], requires_grad=True)
    loss, _ = token_loss_terms(logp, logp.detach(), logp.detach(), T([0.0]), T([True]), LossSettings(kl_beta=0.1),
                               logp_ref=T([math.log(0.25)]))
    assert loss.tolist() == pytest.approx([0.1 * (0.5 + math.log(2) - 1)])
    with pytest.raises(ValueError):
        token_loss_terms(logp, logp, logp, T([0.0]), T([True]), LossSettings(kl_beta=0.1))


def test_loss_normalizations():
    lengths, keep = [2, 1, 3], [True, True, True]
    assert per_sequence_token_weight(lengths, keep, "token", None) == pytest.approx([1 / 6] * 3)
    assert per_sequence_token_weight(lengths, keep, "sequence", None) == pytest.approx([1 / 6, 1 / 3, 1 / 9])
    assert per_sequence_token_weight(lengths, keep, "constant", 4.0) == pytest.approx([1 / 12] * 3)
    # a masked (truncated) completion leaves the numerator and the denominator
    assert per_sequence_token_weight(lengths, [True, False, True], "token", None) == pytest.approx([0.2, 0.0, 0.2])
    with pytest.raises(ValueError):
        per_sequence_token_weight(lengths, keep, "constant", None)


def test_chunked_logprob_matches_naive_values_and_gradients():
    torch.manual_seed(0)
    head = torch.nn.Linear(16, 50, bias=False).double()
    hidden = torch.randn(37, 16, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 50, (37,))
    grads = {}
    for impl in ("naive", "chunked"):
        head.zero_grad()
        hidden.grad = None
        logp, entropy = token_logprobs(hidden, head, targets, temperature=0.7, impl=impl, chunk=8)
        (logp * torch.linspace(-1, 1, 37, dtype=torch.float64)).sum().backward()
        grads[impl] = (logp.detach(), entropy, hidden.grad.clone(), head.weight.grad.clone())
    for a, b in zip(grads["naive"], grads["chunked"]):
        torch.testing.assert_close(a.double(), b.double(), rtol=1e-5, atol=1e-7)


def _tiny_model():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=23, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, tie_word_embeddings=True)
    return LlamaForCausalLM(cfg)


def _samples():
    g = torch.Generator().manual_seed(1)
    out = []
    for i in range(6):
        p = torch.randint(0, 23, (2 + i % 3,), generator=g).tolist()
        c = torch.randint(0, 23, (1 + (i * 5) % 7,), generator=g).tolist()
        out.append(TrainSample(p, c, [-3.0] * len(c), [0] * len(c), advantage=(-1.0) ** i * (0.5 + i / 10)))
    return out


@pytest.mark.parametrize("norm", ["token", "sequence", "constant"])
def test_gradient_accumulation_equals_the_full_batch_gradient(norm):
    grads = []
    for budget in (10_000, 8):  # one micro-batch vs one row per micro-batch
        model = _tiny_model()
        learner = Learner(model, loss=LossSettings(), learning_rate=0.0, micro_batch_tokens=budget,
                          loss_norm=norm, loss_constant=7.0, max_grad_norm=0.0)
        assert len(learner._micro_batches(_samples())) == (1 if budget > 100 else 6)
        learner.train_step(_samples())
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("objective", ["olmorl", "decoupled", "ppo", "gspo", "cispo", "sapo"])
def test_learner_options_run_and_report(objective):
    model = _tiny_model()
    learner = Learner(model, loss=LossSettings(objective=objective, kl_beta=0.05), learning_rate=1e-3,
                      minibatches=2, logprob_impl="naive")
    first = learner.train_step(_samples())
    second = learner.train_step(_samples())
    assert first["kl"] >= 0 and second["kl"] > 0  # the reference is the initial policy
    # two minibatches: the second is scored against pi_old from before the first update, so ratios move
    assert second["ratio_max"] != 1.0 and 0 <= second["clip_low_frac"] <= 1
    assert {"is_weight_mean", "is_capped_frac", "clip_high_frac", "grad_norm", "trained_tokens"} <= set(second)
    assert second["learning_rate"] == pytest.approx(1e-3)  # the step reports the rate the scheduler set
