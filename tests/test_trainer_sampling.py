"""Top-k / top-p sampling: what is kept, the logprobs returned (the behaviour policy), the default reproducing
plain temperature sampling bit for bit, and the config's validation. Whole engine runs (top_k=1 = greedy, served
engines) are in test_trainer_engine.py."""

import math
import re

import pytest
import torch

from olmorl.trainer._config import TrainConfig, config_from_dict
from olmorl.trainer.engines._rows import PendingGroup, Row
from olmorl.trainer.engines._torch import TorchEngine
from olmorl.trainer.engines._types import GenerationRequest
from olmorl.trainer.engines._sampling import sampling_logprobs

NEVER = -1  # an EOS id that is never sampled


def _bare_engine(**kw) -> TorchEngine:
    """A real engine whose `_sample` is called on hand-made logits (the model is only asked for its device)."""
    return TorchEngine(torch.nn.Linear(1, 1), eos_token_id=NEVER, pad_token_id=0, max_new_tokens=10**6, **kw)


def _rows(n: int) -> list[Row]:
    group = PendingGroup(GenerationRequest(0, [1], n=n), 0, [None] * n)
    return [Row(group, i, [1]) for i in range(n)]


def _draw(engine: TorchEngine, logits: torch.Tensor, n: int) -> tuple[list[int], list[float]]:
    rows = _rows(n)
    tokens = engine._sample(logits.expand(n, -1).clone(), rows)
    assert tokens.tolist() == [r.tokens[0] for r in rows]
    return tokens.tolist(), [r.logprobs[0] for r in rows]


def test_top_k_never_leaves_the_k_likeliest_and_logprobs_are_renormalized():
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0, 3.0, 2.5]])
    tokens, logprobs = _draw(_bare_engine(top_k=2, seed=1), logits, 4000)
    assert set(tokens) == {4, 5}  # the two largest logits, both drawn
    full = torch.softmax(logits[0].double(), dim=-1)
    kept = full[4] + full[5]
    for tok, lp in zip(tokens, logprobs):
        assert lp == pytest.approx(math.log(full[tok] / kept), abs=1e-6)
    share = tokens.count(4) / len(tokens)
    assert share == pytest.approx(float(full[4] / kept), abs=0.03)  # 0.62: drawn from the renormalized pair


def test_top_k_with_temperature_applies_the_temperature_first():
    logits = torch.tensor([[2.0, 0.0, 1.0, -3.0]])
    lp = sampling_logprobs(logits, temperature=0.5, top_k=3)[0].double()
    scaled = torch.softmax(logits[0].double() / 0.5, dim=-1)
    expect = torch.log(scaled / scaled[[0, 1, 2]].sum())
    torch.testing.assert_close(lp[[0, 1, 2]], expect[[0, 1, 2]], rtol=0, atol=1e-6)
    assert lp[3] == float("-inf")


# probabilities 1/2, 1/4, 1/8, 1/8 are exact in float32: the cumulative masses 0.5, 0.75, 0.875 are too
DYADIC = torch.log(torch.tensor([[0.5, 0.25, 0.125, 0.125]]))


@pytest.mark.parametrize("top_p,kept", [(0.3, [0]), (0.5, [0]), (0.6, [0, 1]), (0.75, [0, 1]), (0.76, [0, 1, 2]),
                                        (0.875, [0, 1, 2]), (0.9, [0, 1, 2, 3]), (1.0, [0, 1, 2, 3])])
def test_top_p_keeps_the_smallest_set_whose_mass_reaches_p(top_p, kept):
    lp = sampling_logprobs(DYADIC, top_p=top_p)[0]
    assert torch.isfinite(lp).nonzero().flatten().tolist() == kept
    mass = sum([0.5, 0.25, 0.125, 0.125][i] for i in kept)
    torch.testing.assert_close(lp[kept].exp(), torch.tensor([0.5, 0.25, 0.125, 0.125])[kept] / mass)


def test_top_p_sampling_draws_only_the_nucleus_with_its_renormalized_logprob():
    tokens, logprobs = _draw(_bare_engine(top_p=0.7, seed=2), DYADIC, 2000)
    assert set(tokens) == {0, 1}
    for tok, lp in zip(tokens, logprobs):
        assert lp == pytest.approx(math.log([2 / 3, 1 / 3][tok]), abs=1e-6)


def test_top_k_then_top_p_is_the_nucleus_of_the_top_k():
    logits = torch.log(torch.tensor([[0.4, 0.3, 0.2, 0.1]]))
    # top-2 renormalized: 4/7, 3/7; top_p 0.5 keeps only the first of those
    assert torch.isfinite(sampling_logprobs(logits, top_k=2, top_p=0.5)[0]).tolist() == [True, False, False, False]
    assert torch.isfinite(sampling_logprobs(logits, top_k=2, top_p=0.6)[0]).tolist() == [True, True, False, False]


def test_no_truncation_reproduces_plain_temperature_sampling_bit_for_bit():
    """top_p=1, top_k=0 is the sampling the engine did before they existed: same seed, same tokens and logprobs."""
    engine = _bare_engine(temperature=0.7, top_p=1.0, top_k=0, seed=11)
    reference = torch.Generator().manual_seed(11)
    batches = torch.randn(5, 16, 50, generator=torch.Generator().manual_seed(0))
    for logits in batches:
        rows = _rows(16)
        tokens = engine._sample(logits, rows)
        expect_lp = torch.log_softmax(logits / 0.7, dim=-1)
        expect = torch.multinomial(expect_lp.exp(), 1, generator=reference).squeeze(1)
        assert torch.equal(tokens, expect)
        assert [r.logprobs[0] for r in rows] == expect_lp.gather(1, expect[:, None]).squeeze(1).tolist()


@pytest.mark.parametrize("values,message", [
    ({"top_p": 0.0}, "top_p must be in (0, 1]"), ({"top_p": 1.5}, "top_p must be in (0, 1]"),
    ({"top_p": -0.1}, "top_p must be in (0, 1]"), ({"top_k": -1}, "top_k must be an integer >= 0"),
    ({"temperature": 0.0}, "temperature must be > 0"),
])
def test_config_rejects_sampling_settings_outside_their_range(values, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        config_from_dict(values)
    with pytest.raises(ValueError):
        TrainConfig(**values)


def test_config_takes_top_p_and_top_k_from_yaml_values():
    cfg = config_from_dict({"top_p": "0.95", "top_k": 20})
    assert (cfg.top_p, cfg.top_k) == (0.95, 20)
    assert TrainConfig().top_p == 1.0 and TrainConfig().top_k == 0
