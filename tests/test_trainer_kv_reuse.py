"""KV-cache reuse across turns in the torch engine: a request that extends a kept cache (same `cache_key`,
prompt = the earlier row's prompt + its tokens + more) prefills only the new tokens, and decodes exactly what a
full re-prefill of the whole conversation decodes (greedy, token for token; logprobs as one full forward)."""

import pytest
import torch

from olmorl.trainer.engines._torch import TorchEngine
from olmorl.trainer.engines._types import GenerationRequest
from _engine_checks import full_logprobs, random_llama

NEVER = -1
PROMPTS = {"a": [5, 6, 7], "b": [8], "c": [9, 10, 11, 12, 13, 14, 15, 16, 17]}
REPLIES = {"a": [20, 21], "b": [22, 23, 24, 25, 26], "c": [27]}  # a tool's reply, a different length per row


@pytest.fixture(scope="module")
def model():
    return random_llama()


def _engine(model, **kw):
    return TorchEngine(model, **{"eos_token_id": NEVER, "pad_token_id": 0, "max_new_tokens": 6, "seed": 3, **kw})


def _run(engine, requests):
    engine.submit(requests)
    groups = []
    for _ in range(300):
        engine.run_steps(1)
        groups += engine.get_groups(0)
        if len(groups) == len(requests):
            return {g.request_id: g.completions[0] for g in groups}
    raise AssertionError("the requests did not finish")


def _turns(engine, keyed: bool, turns: int = 3) -> dict[str, list[list[int]]]:
    """Three turns of three conversations (plus an unkeyed row each turn); each turn's prompt is the whole
    conversation so far. The sampled tokens of every turn, per conversation."""
    contexts = {k: list(p) for k, p in PROMPTS.items()}
    sampled: dict[str, list[list[int]]] = {k: [] for k in PROMPTS}
    for turn in range(turns):
        requests = [GenerationRequest(k, list(c), 1, max_new_tokens=4 + turn, cache_key=k if keyed else None)
                    for k, c in contexts.items()]
        requests.append(GenerationRequest(f"fresh{turn}", [30 + turn, 31], 1))  # admitted with the extensions
        done = _run(engine, requests)
        for k in contexts:
            sampled[k].append(done[k].token_ids)
            contexts[k] += done[k].token_ids + REPLIES[k]
    return sampled


def test_kv_reuse_decodes_what_a_full_reprefill_decodes_greedy(model):
    reused, full = _engine(model, top_k=1), _engine(model, top_k=1, kept_caches=0)
    assert _turns(reused, keyed=True) == _turns(full, keyed=True)
    stats, full_stats = reused.stats(), full.stats()
    # turns 2 and 3 prefilled only the last sampled token and the reply of each conversation
    assert full_stats["prefill_tokens_reused"] == 0
    assert stats["prefill_tokens_reused"] > 0
    assert stats["prefill_tokens"] + stats["prefill_tokens_reused"] == full_stats["prefill_tokens"]
    assert stats["prefill_tokens"] == sum(len(p) for p in PROMPTS.values()) + 2 * sum(
        1 + len(r) for r in REPLIES.values()) + 3 * 2


def test_an_extending_turn_has_the_logprobs_of_one_full_forward(model):
    engine = _engine(model)  # sampled, full softmax: the recorded logprobs are exactly the model's
    first = _run(engine, [GenerationRequest("x", [5, 6, 7], 1, cache_key="x")])["x"]
    prompt = [5, 6, 7] + first.token_ids + [20, 21, 22]
    second = _run(engine, [GenerationRequest("x", prompt, 1, max_new_tokens=8, cache_key="x")])["x"]
    assert engine.stats()["prefill_tokens_reused"] == 3 + len(first.token_ids) - 1
    torch.testing.assert_close(torch.tensor(second.logprobs), full_logprobs(model, prompt, second.token_ids),
                               rtol=0, atol=2e-5)


def test_a_prompt_that_does_not_extend_the_kept_ids_is_prefilled_whole(model):
    engine, reference = _engine(model, top_k=1), _engine(model, top_k=1, kept_caches=0)
    first = _run(engine, [GenerationRequest("x", [5, 6, 7], 1, cache_key="x")])["x"]
    edited = [5, 9, 7] + first.token_ids + [20]  # the history changed: the kept cache must not be used
    again = _run(engine, [GenerationRequest("x", edited, 1, cache_key="x")])["x"]
    assert engine.stats()["prefill_tokens_reused"] == 0
    assert again.token_ids == _run(reference, [GenerationRequest("x", edited, 1)])["x"].token_ids


def test_a_weight_update_drops_the_kept_caches(model):
    engine = _engine(model, top_k=1)
    first = _run(engine, [GenerationRequest("x", [5, 6, 7], 1, cache_key="x")])["x"]
    engine.update_weights({k: v.clone() for k, v in model.state_dict().items()}, version=1)
    engine.run_steps(1)
    _run(engine, [GenerationRequest("x", [5, 6, 7] + first.token_ids + [20], 1, cache_key="x")])
    assert engine.stats()["prefill_tokens_reused"] == 0  # computed under version 0: prefilled again
