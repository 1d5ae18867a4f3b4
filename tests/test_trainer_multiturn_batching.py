"""Continuous batching of turns in the torch engine: a sequence admitted while others decode (a rollout's next
turn, back from its tool) is prefilled in the same forward as the running rows' next decode step when it adds
at most `join_span` tokens, so that engine step is one forward; a longer one is prefilled in a forward of its
own, so the running rows are not fed its length in pad tokens. Its tokens are exactly those it decodes alone
(greedy), also when the running rows' pad columns pile up and the cache is compacted; its logprobs are one full
forward's."""

import pytest
import torch

import olmorl.trainer.engines._torch as torch_engine
from olmorl.trainer.engines._torch import TorchEngine
from olmorl.trainer.engines._types import GenerationRequest
from _engine_checks import full_logprobs, random_llama

NEVER = -1


@pytest.fixture(scope="module")
def model():
    return random_llama()


def _engine(model, **kw):
    return TorchEngine(model, **{"eos_token_id": NEVER, "pad_token_id": 0, "max_new_tokens": 8, "seed": 3, **kw})


def _count_forwards(model, run) -> int:
    calls = [0]
    hook = model.register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    try:
        run()
    finally:
        hook.remove()
    return calls[0]


def _staggered(engine, arrivals: dict[int, list[GenerationRequest]], steps: int = 400):
    """Submit each step's arrivals, then run one engine step; the finished completions by request id."""
    done, expected = {}, sum(len(r) for r in arrivals.values())
    for step in range(steps):
        if arrivals.get(step):
            engine.submit(arrivals[step])
        engine.run_steps(1)
        for group in engine.get_groups(0):
            done[group.request_id] = group.completions[0]
        if len(done) == expected:
            return done
    raise AssertionError("the requests did not finish")


def _alone(model, request: GenerationRequest) -> list[int]:
    engine = _engine(model, top_k=1, max_new_tokens=64)
    engine.submit([request])
    for _ in range(200):
        engine.run_steps(1)
        groups = engine.get_groups(0)
        if groups:
            return groups[0].completions[0].token_ids
    raise AssertionError("did not finish")


def _request(rid, prompt, n_new, key=None):
    return GenerationRequest(rid, prompt, 1, max_new_tokens=n_new, cache_key=key)


def test_a_sequence_admitted_beside_running_rows_decodes_what_it_decodes_alone(model):
    engine = _engine(model, top_k=1, max_new_tokens=64)
    arrivals = {0: [_request("a", [5, 6, 7], 12)],
                3: [_request("b", [9, 10, 11, 12, 13, 14, 15, 16, 17], 6), _request("c", [8], 9)],
                5: [_request("d", [18, 19], 4)]}
    done: dict = {}
    engine_forwards = _count_forwards(model, lambda: done.update(_staggered(engine, arrivals)))
    for reqs in arrivals.values():
        for req in reqs:
            assert done[req.request_id].token_ids == _alone(model, req), req.request_id
    # one forward per engine step but the first (a's prefill, then its decode step): the admissions at steps 3
    # and 5 rode on the running rows' decode step (before: a prefill forward each, then the decode forward).
    # a: 2 tokens at step 0, one a step to step 10; c: 9 tokens, steps 3-11
    assert engine_forwards == 13
    assert engine.stats()["decode_steps"] == 12


def test_a_turn_extending_its_kept_cache_beside_running_rows_matches_a_full_prefill(model):
    engine = _engine(model, top_k=1, max_new_tokens=64)
    first = _staggered(engine, {0: [_request("x", [5, 6, 7], 5, key="x")]})["x"].token_ids
    turn = [5, 6, 7] + first + [20, 21, 22]  # the conversation so far, a tool reply appended
    done = _staggered(engine, {0: [_request("long", [30, 31], 20)], 4: [_request("x", turn, 7, key="x")]})
    assert engine.stats()["prefill_tokens_reused"] == 3 + len(first) - 1
    assert done["x"].token_ids == _alone(model, _request("x", turn, 7))
    assert done["long"].token_ids == _alone(model, _request("long", [30, 31], 20))


def test_sampled_logprobs_of_a_joined_row_are_one_full_forwards(model):
    engine = _engine(model)  # sampled, full softmax: the recorded logprobs are exactly the model's
    done = _staggered(engine, {0: [_request("run", [5, 6], 30)], 2: [_request("j", [7, 8, 9, 10], 9)]})
    for rid, prompt in (("run", [5, 6]), ("j", [7, 8, 9, 10])):
        torch.testing.assert_close(torch.tensor(done[rid].logprobs), full_logprobs(model, prompt, done[rid].token_ids),
                                   rtol=0, atol=2e-5)


def test_pad_columns_of_many_admissions_are_compacted_and_change_nothing(model, monkeypatch):
    shrunk = []

    def watched(cache, mask):
        out = compacted(cache, mask)
        shrunk.append(out.shape[1] < mask.shape[1])
        return out

    compacted = torch_engine.compacted
    monkeypatch.setattr(torch_engine, "compacted", watched)
    # join_span 24: the 24-token prompts join the decode step (by default a suffix that long is prefilled apart)
    engine = _engine(model, top_k=1, max_new_tokens=64, max_batch_size=4, join_span=24)
    # a long-running row while 24-token prompts arrive one per step: each admission leaves it 23 pad columns
    prompts = {step: [_request(f"p{step}", [(step * 7 + i) % 37 + 2 for i in range(24)], 2)] for step in range(1, 30)}
    arrivals = {0: [_request("long", [5, 6, 7], 40)], **prompts}
    done = _staggered(engine, arrivals)
    assert any(shrunk)
    assert engine._mask is None or engine._mask.shape[1] <= 64
    assert done["long"].token_ids == _alone(model, _request("long", [5, 6, 7], 40))
    for step in (1, 15, 29):
        assert done[f"p{step}"].token_ids == _alone(model, prompts[step][0])


def _fed_pads(model, run) -> list[int]:
    """Per forward while `run` runs: the pad tokens it was fed (a row widened to a longer row's suffix)."""
    pads = []

    def count(_module, _args, kwargs):
        ids, mask = kwargs["input_ids"], kwargs["attention_mask"]
        pads.append(int(ids.numel() - mask[:, -ids.shape[1]:].sum()))

    hook = model.register_forward_pre_hook(count, with_kwargs=True)
    try:
        run()
    finally:
        hook.remove()
    return pads


def test_a_long_suffix_beside_running_rows_is_prefilled_apart_so_they_are_not_padded_to_it(model):
    engine = _engine(model, top_k=1, max_new_tokens=64)
    first = _staggered(engine, {0: [_request("x", [5, 6, 7], 5, key="x")]})["x"].token_ids
    turn = [5, 6, 7] + first + [(20 + i) % 37 + 2 for i in range(24)]  # a tool reply longer than join_span (16)
    fresh = [(3 * i) % 37 + 2 for i in range(30)]  # a fresh prompt, also longer
    arrivals = {0: [_request("long", [30, 31], 20)], 4: [_request("x", turn, 7, key="x")], 6: [_request("f", fresh, 5)]}
    done: dict = {}
    pads = _fed_pads(model, lambda: done.update(_staggered(engine, arrivals)))
    # before: x and f joined long's decode step, feeding it 24 and 29 pad tokens (one forward each: 20 in all);
    # now each is prefilled in a forward of its own (22 in all: long's prefill, 19 decode steps, 2 admissions)
    assert pads == [0] * 22
    assert engine.stats()["forward_pad_tokens"] == 0
    assert engine.stats()["prefill_tokens_reused"] == 3 + len(first) - 1
    for rid, req in (("long", _request("long", [30, 31], 20)), ("x", _request("x", turn, 7)), ("f", _request("f", fresh, 5))):
        assert done[rid].token_ids == _alone(model, req), rid


def test_rows_prefilled_apart_are_admitted_a_few_free_slots_at_a_time(model):
    # Prompts longer than join_span cost a prefill forward of their own: admitting each as soon as one slot frees
    # (admit_chunk=1) takes more forwards than waiting for admit_chunk free slots (default: max_batch_size // 8).
    def forwards(**kw) -> int:
        engine = _engine(model, max_batch_size=16, **kw)
        prompts = [[(rid * 7 + i) % 37 + 2 for i in range(40)] for rid in range(80)]
        arrivals = {0: [_request(rid, p, 4 + (rid * 13) % 36) for rid, p in enumerate(prompts)]}
        _staggered(engine, arrivals, steps=2000)
        return int(engine.stats()["forwards"])

    gathered, one_by_one = forwards(), forwards(admit_chunk=1)
    assert gathered < one_by_one, (gathered, one_by_one)
