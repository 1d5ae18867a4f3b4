"""Sequence packing and activation checkpointing: packed rows give the unpacked logprobs and the same update."""

import copy
import random

import pytest
import torch

from olmorl.trainer.learners._plain import Learner
from olmorl.trainer.learners._samples import TrainSample
from olmorl.trainer._objective import LossSettings
from olmorl.trainer.learners._packing import pack_rows


@pytest.fixture(scope="module")
def model():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=40, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, max_position_embeddings=256, tie_word_embeddings=True)
    return LlamaForCausalLM(cfg)


def _samples(n=10, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        p = [rng.randrange(4, 40) for _ in range(rng.randrange(2, 9))]
        c = [rng.randrange(4, 40) for _ in range(rng.randrange(1, 30))]
        out.append(TrainSample(p, c, [-3.6] * len(c), [0] * len(c), advantage=rng.uniform(-1, 1)))
    return out


def test_rows_respect_the_budget_and_hold_every_sample_once():
    lengths = [50, 7, 30, 30, 12, 90, 1, 64, 64]
    rows = pack_rows(lengths, 64)
    assert sorted(i for r in rows for i in r) == list(range(len(lengths)))
    for r in rows:
        assert sum(lengths[i] for i in r) <= 64 or len(r) == 1  # an over-long sequence rides alone
    assert len(rows) <= 6  # first-fit decreasing: 348 tokens, one 90-token row, five rows of <= 64


@pytest.mark.parametrize("impl", ["chunked", "naive"])
def test_packed_logprobs_equal_unpacked_ones(model, impl):
    samples = _samples()
    plain = Learner(copy.deepcopy(model), loss=LossSettings(), learning_rate=1e-3, logprob_impl=impl)
    packed = Learner(copy.deepcopy(model), loss=LossSettings(), learning_rate=1e-3, logprob_impl=impl, packing=True)
    with torch.no_grad():
        want, want_h = plain._logprobs(plain.base, plain.head, samples)
        got, got_h = packed._logprobs(packed.base, packed.head, samples)
    assert got.shape == want.shape == (sum(len(s.completion_ids) for s in samples),)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)
    torch.testing.assert_close(got_h, want_h, rtol=0, atol=1e-5)
    # the mask matters: without it, later samples would see earlier ones and their logprobs would change
    from olmorl.trainer.learners._packing import packed_inputs

    ids, pos, _, cols, targets = packed_inputs(samples)
    with torch.no_grad():
        leaky = torch.log_softmax(packed.model(input_ids=ids, position_ids=pos).logits[0, cols], -1)
    assert (leaky.gather(1, targets[:, None]).squeeze(1) - want).abs().max() > 1e-3


def test_packed_and_checkpointed_training_makes_the_same_update(model):
    samples = _samples(12, seed=3)
    results = []
    for kw in ({}, {"packing": True}, {"packing": True, "activation_checkpointing": True}):
        learner = Learner(copy.deepcopy(model), loss=LossSettings(), learning_rate=1e-2, micro_batch_tokens=80, **kw)
        assert learner.model.is_activation_checkpointing == bool(kw.get("activation_checkpointing"))
        stats = [learner.train_step(samples) for _ in range(2)]
        results.append((learner.weights(), stats))
    (base, base_stats), *others = results
    for weights, stats in others:
        for k in base:
            torch.testing.assert_close(weights[k], base[k], rtol=1e-4, atol=1e-5, msg=k)
        assert stats[0]["loss"] == pytest.approx(base_stats[0]["loss"], rel=1e-4, abs=1e-7)
