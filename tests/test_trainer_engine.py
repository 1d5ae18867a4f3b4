"""The continuous-batching engine: exact logprobs, continuous vs static batching, inflight and abort updates."""

import copy
import threading
import time

import pytest
import torch

from olmorl.trainer.engines._torch import TorchEngine
from olmorl.trainer.engines._types import GenerationRequest
from _engine_checks import full_logprobs, tiny_random_llama

NEVER = -1  # an EOS id that is never sampled: completion lengths are set by max_new_tokens alone


@pytest.fixture(scope="module")
def model():
    return tiny_random_llama()


def _engine(model, **kw):
    kw = {"eos_token_id": NEVER, "pad_token_id": 0, "max_new_tokens": 12, "seed": 3, **kw}
    return TorchEngine(model, **kw)


def _drain(engine, n_groups, max_steps=500):
    groups = []
    for _ in range(max_steps):
        engine.run_steps(1)
        groups += engine.get_groups(0)
        if len(groups) == n_groups:
            return groups
    raise AssertionError(f"only {len(groups)} of {n_groups} groups finished")


def test_logprobs_match_a_full_forward_under_continuous_batching(model):
    engine = _engine(model, max_batch_size=3)
    prompts = [[5, 6, 7], [8], [9, 10, 11, 12, 13, 14], [15, 16]]
    engine.submit([GenerationRequest(i, p, n=2, meta={"i": i}, max_new_tokens=3 + 4 * i) for i, p in enumerate(prompts)])
    groups = _drain(engine, 4)
    assert sorted(g.request_id for g in groups) == [0, 1, 2, 3]
    for g in groups:
        assert g.meta == {"i": g.request_id} and len(g.completions) == 2
        for c in g.completions:
            assert len(c.token_ids) == 3 + 4 * g.request_id and c.finish_reason == "length"
            assert c.versions == [0] * len(c.token_ids)
            torch.testing.assert_close(torch.tensor(c.logprobs), full_logprobs(model, g.prompt_ids, c.token_ids),
                                       rtol=0, atol=2e-5)


@pytest.mark.parametrize("continuous,bound", [(True, (30, 31)), (False, (32, 40))])
def test_a_finished_row_is_replaced_at_once(model, continuous, bound):
    # two slots: one long sequence (30 tokens) and three short ones (3 tokens) that share the other slot
    engine = _engine(model, max_batch_size=2, continuous=continuous)
    engine.submit([GenerationRequest("long", [1, 2], 1, max_new_tokens=30)] +
                  [GenerationRequest(f"short{i}", [3 + i], 1, max_new_tokens=3) for i in range(3)])
    groups = _drain(engine, 4)
    steps = engine.stats()["decode_steps"]
    # continuous: the shorts run beside the long one (~29 decode steps); static: the last two wait for it
    assert bound[0] - 2 <= steps <= bound[1], steps
    order = [g.request_id for g in groups]
    assert (order[-1] == "long") == continuous


@pytest.mark.parametrize("mode", ["inflight", "abort"])
def test_weight_update_mid_generation_records_versions(model, mode):
    engine = _engine(copy.deepcopy(model), max_batch_size=4, max_new_tokens=10, update_mode=mode)
    new_model = copy.deepcopy(model)
    with torch.no_grad():
        for p in new_model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    engine.submit([GenerationRequest(0, [4, 5, 6], n=2)])
    engine.run_steps(3)  # 4 tokens: the first iteration prefills (token 1) and decodes (token 2)
    engine.update_weights(new_model.state_dict(), version=7)
    (group,) = _drain(engine, 1)
    assert engine.version == 7
    for c in group.completions:
        assert c.versions == [0] * 4 + [7] * 6  # generation never stopped; later tokens carry the new version
        # tokens before the update are exactly the old policy's
        torch.testing.assert_close(torch.tensor(c.logprobs[:4]), full_logprobs(model, group.prompt_ids, c.token_ids)[:4],
                                   rtol=0, atol=2e-5)
        after = torch.tensor(c.logprobs[4:])
        fresh = full_logprobs(new_model, group.prompt_ids, c.token_ids)[4:]
        if mode == "abort":  # re-prefilled: the new policy's exact logprobs
            torch.testing.assert_close(after, fresh, rtol=0, atol=2e-5)
        else:  # inflight: KV cache of the prompt kept from the old weights, so they differ from a fresh pass
            assert (after - fresh).abs().max() > 1e-4
    assert engine.stats()["updates"] == 1


def test_threaded_engine_serves_submissions_and_updates(model):
    engine = _engine(copy.deepcopy(model), max_batch_size=8)
    engine.start()
    try:
        engine.submit([GenerationRequest(i, [i + 1], n=3) for i in range(5)])
        engine.update_weights(model.state_dict(), version=1, wait=True)
        groups = []
        while len(groups) < 5:
            got = engine.get_groups(timeout=30)
            assert got, "engine produced nothing in 30 s"
            groups += got
        assert engine.in_flight_groups == 0
        assert all(set(c.versions) <= {0, 1} for g in groups for c in g.completions)
    finally:
        engine.stop()



@pytest.mark.parametrize("wait", [True, False])
def test_an_update_is_the_weights_as_given_whatever_the_caller_writes_afterwards(model, wait):
    """wait=True loads straight from the caller's tensors (it returns once they are in the model); wait=False
    copies them first, since the caller may write them before the engine applies the update."""
    engine = _engine(copy.deepcopy(model), max_batch_size=2)
    engine.start()
    try:
        engine.submit([GenerationRequest(0, [1, 2], n=2, max_new_tokens=40)])
        given = {k: v + 0.01 for k, v in model.state_dict().items()}
        expected = {k: v.clone() for k, v in given.items()}
        engine.update_weights(given, version=1, wait=wait)
        for tensor in given.values():  # the caller reuses its buffers at once
            tensor.fill_(7.0)
        deadline = 200
        while engine.version < 1 and deadline:
            engine.get_groups(timeout=0.05)
            deadline -= 1
        assert engine.version == 1
        for name, tensor in engine.model.state_dict().items():
            torch.testing.assert_close(tensor, expected[name], rtol=0, atol=0, msg=name)
    finally:
        engine.stop()

def test_update_with_unknown_weights_fails_loudly(model):
    engine = _engine(copy.deepcopy(model))
    engine.start()
    try:
        engine.update_weights({"not.a.weight": torch.zeros(1)}, version=1)
        with pytest.raises(RuntimeError, match="engine failed"):
            for _ in range(100):
                engine.get_groups(timeout=0.05)
    finally:
        engine.stop()


class _NotAHuggingFaceLM(torch.nn.Module):
    """A causal LM's forward signature with no PretrainedConfig: nothing to size a KV cache from."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(32, 4)

    def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None, use_cache=True):
        raise AssertionError("never called: the engine checks the config first")


def test_a_model_without_a_hugging_face_config_fails_with_a_clear_error():
    engine = _engine(_NotAHuggingFaceLM())
    engine.submit([GenerationRequest(0, [5, 6], n=1)])
    with pytest.raises(TypeError, match="Hugging Face causal LM.*not _NotAHuggingFaceLM"):
        engine.run_steps(1)


def test_process_engine_generates_and_takes_inflight_updates(model, tmp_path):
    from olmorl.trainer.engines._process import ProcessEngine

    model.save_pretrained(str(tmp_path / "m"))
    engine = ProcessEngine(str(tmp_path / "m"), eos_token_id=NEVER, pad_token_id=0, max_new_tokens=6, seed=3)
    engine.start()
    try:
        state = engine.get_rng_state()
        engine.submit([GenerationRequest(i, [i + 1, 2], n=2) for i in range(3)])
        engine.update_weights(model.state_dict(), version=5, wait=True)
        groups = []
        deadline = 60
        while len(groups) < 3 and deadline > 0:
            groups += engine.get_groups(timeout=1.0)
            deadline -= 1
        assert sorted(g.request_id for g in groups) == [0, 1, 2] and engine.in_flight_groups == 0
        assert all(set(c.versions) <= {0, 5} and len(c.token_ids) == 6 for g in groups for c in g.completions)
        assert engine.stats()["tokens"] >= 36
        # the sampling RNG round-trips through the checkpoint hooks
        engine.set_rng_state(state)
        assert torch.equal(engine.get_rng_state(), state)
    finally:
        engine.stop()


def test_process_engine_takes_a_turn_while_get_groups_waits_and_keeps_its_kv_cache(model, tmp_path):
    """Multi-turn over a child-process engine: a rollout's next turn is submitted (from the rollouts' event loop)
    while the loop's reader waits in get_groups; the submit must not wait for that reader, and the turn after it
    reads the first turn's KV cache kept in the child (cache_key), prefilling only the new tokens."""
    from olmorl.trainer.engines._process import ProcessEngine

    model.save_pretrained(str(tmp_path / "m"))
    engine = ProcessEngine(str(tmp_path / "m"), eos_token_id=NEVER, pad_token_id=0, max_new_tokens=4, seed=3)
    engine.start()
    try:
        engine.submit([GenerationRequest("warm-up", [9], 1)])  # the child is up and generating
        assert [g.request_id for g in _collect(engine, 1)] == ["warm-up"]
        got = []
        reader = threading.Thread(target=lambda: got.extend(engine.get_groups(timeout=10.0)))
        reader.start()
        time.sleep(0.3)  # the reader is waiting for results
        start = time.monotonic()
        engine.submit([GenerationRequest("turn-1", [5, 6, 7], 1, cache_key="rollout")])
        submit_s = time.monotonic() - start
        reader.join()
        assert submit_s < 1.0, f"submit waited {submit_s:.1f} s for the reader's get_groups"
        assert [g.request_id for g in got] == ["turn-1"]
        first = got[0].completions[0].token_ids
        engine.submit([GenerationRequest("turn-2", [5, 6, 7] + first + [20, 21], 1, cache_key="rollout")])
        assert [g.request_id for g in _collect(engine, 1)] == ["turn-2"]
        assert engine.stats()["prefill_tokens_reused"] == 3 + len(first) - 1
        assert engine.in_flight_groups == 0
    finally:
        engine.stop()


def _collect(engine, n, timeout_s=60.0):
    groups, deadline = [], time.monotonic() + timeout_s
    while len(groups) < n and time.monotonic() < deadline:
        groups += engine.get_groups(timeout=1.0)
    return groups


# -- top-k / top-p (hand-made logits in test_trainer_sampling.py) ---------------------------------------------------
PROMPTS = [[5, 6, 7], [8], [9, 10, 11, 12, 13], [15, 16]]


def _greedy(model, prompt, n):
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(n):
            ids.append(int(model(torch.tensor([ids])).logits[0, -1].argmax()))
    return ids[len(prompt):]


def test_top_k_1_decodes_greedily_under_continuous_batching(model):
    engine = _engine(model, max_new_tokens=10, top_k=1, temperature=0.8, max_batch_size=3)
    engine.submit([GenerationRequest(i, p, n=2) for i, p in enumerate(PROMPTS)])
    for g in _drain(engine, len(PROMPTS)):
        expect = _greedy(model, g.prompt_ids, 10)
        for c in g.completions:
            assert c.token_ids == expect
            assert c.logprobs == [0.0] * 10  # the one token left has probability one


def test_top_k_logprobs_are_the_full_logprobs_minus_the_log_kept_mass(model):
    engine = _engine(model, max_new_tokens=8, top_k=5, max_batch_size=3)
    engine.submit([GenerationRequest(i, p, n=2) for i, p in enumerate(PROMPTS)])
    for g in _drain(engine, len(PROMPTS)):
        for c in g.completions:
            with torch.no_grad():
                logits = model(torch.tensor([g.prompt_ids + c.token_ids])).logits[0].double()
            steps = torch.log_softmax(logits, dim=-1)[len(g.prompt_ids) - 1:-1]
            top = steps.topk(5, dim=-1)
            assert all(tok in row for tok, row in zip(c.token_ids, top.indices.tolist()))
            full = steps.gather(1, torch.tensor(c.token_ids)[:, None]).squeeze(1)
            behaviour = full - top.values.exp().sum(dim=-1).log()  # what the learner's IS ratio is taken against
            torch.testing.assert_close(torch.tensor(c.logprobs, dtype=torch.float64), behaviour, rtol=0, atol=5e-5)


def test_served_engine_takes_top_k_and_top_p_from_its_flags(model, tmp_path):
    import time

    from olmorl.trainer.engines._http import RemoteEngine
    from olmorl.trainer.engines._server import EngineServerProcess

    model.save_pretrained(str(tmp_path / "m"))
    server = EngineServerProcess(str(tmp_path / "m"), log_path=str(tmp_path / "engine.log"),
                                 extra_args=["--eos-token-id", str(NEVER), "--pad-token-id", "0", "--max-new-tokens",
                                             "6", "--top-k", "1", "--top-p", "0.9"]).start()
    engine = RemoteEngine(server.url, sync_timeout_s=5.0, ready_timeout_s=120.0)
    try:
        engine.start()
        engine.submit([GenerationRequest("a", PROMPTS[0], n=2)])
        groups, deadline = [], time.monotonic() + 120
        while not groups:
            assert time.monotonic() < deadline, "the served engine returned nothing"
            groups = engine.get_groups(timeout=0.5)
        assert [c.token_ids for c in groups[0].completions] == [_greedy(model, PROMPTS[0], 6)] * 2
    finally:
        engine.stop()
        server.stop()
