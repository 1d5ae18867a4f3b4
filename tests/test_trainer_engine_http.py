"""Engines as separate processes: two `olmorl-engine` servers on loopback driven over HTTP by a learner-side pool.

Generate (streamed groups with logprobs and per-token versions), inflight weight updates through a
safetensors file in /dev/shm, pause keep / abort + resume, and weight syncs that fail: a hung engine
(SIGSTOP) misses its deadline, a stale version and misfit weights are refused, all with clear errors.
"""

import copy
import os
import signal
import time

import httpx
import pytest
import torch

from olmorl.trainer.engines._types import GenerationRequest
from olmorl.trainer.engines._engine_pool import EnginePool
from olmorl.trainer.engines._http import RemoteEngine, WeightSyncError
from olmorl.trainer.engines._server import EngineServerProcess
from _engine_checks import collect_groups, full_logprobs

NEVER = -1


@pytest.fixture(scope="module")
def model():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=40, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, max_position_embeddings=512, tie_word_embeddings=True)
    return LlamaForCausalLM(cfg).eval()


@pytest.fixture(scope="module")
def servers(model, tmp_path_factory):
    root = tmp_path_factory.mktemp("engines")
    model.save_pretrained(str(root / "m"))
    procs = [EngineServerProcess(str(root / "m"), log_path=str(root / f"engine{i}.log"),
                                 extra_args=["--eos-token-id", str(NEVER), "--pad-token-id", "0",
                                             "--max-new-tokens", "12", "--seed", str(i)]).start() for i in range(2)]
    yield procs
    for p in procs:
        p.stop()


@pytest.fixture
def pool(servers):
    engines = [RemoteEngine(p.url, sync_timeout_s=5.0, ready_timeout_s=120.0) for p in servers]
    pool = EnginePool(engines)
    pool.start()
    version = max(e.health()["version"] for e in engines)
    pool.version = version
    yield pool
    for e in engines:  # leave every engine running and unpaused for the next test
        if e.health()["paused"]:
            e.resume()
        e.stop()


def _perturbed(model, scale=0.05, seed=1):
    new = copy.deepcopy(model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in new.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g))
    return new


def test_two_engine_processes_stream_groups_with_exact_logprobs(pool, model):
    base = pool.version
    pool.submit([GenerationRequest(f"r{i}", [i + 1, 2, 3], n=2, meta={"i": i}) for i in range(6)])
    groups = collect_groups(pool, 6)
    assert sorted(g.request_id for g in groups) == [f"r{i}" for i in range(6)]
    assert pool.in_flight_groups == 0
    served = [e.stats()["tokens"] for e in pool.engines]
    assert all(t > 0 for t in served), f"both engines generate: {served}"
    if base == 0:  # the served weights are the fixture's model: logprobs match a full forward pass
        for g in groups:
            assert g.meta == {"i": int(g.request_id[1:])}
            for c in g.completions:
                assert len(c.token_ids) == 12 and c.finish_reason == "length" and set(c.versions) == {0}
                torch.testing.assert_close(torch.tensor(c.logprobs), full_logprobs(model, g.prompt_ids, c.token_ids),
                                           rtol=0, atol=2e-5)


def test_inflight_update_reaches_both_engines_and_versions_are_recorded_per_token(pool, model):
    v = pool.version + 1
    pool.submit([GenerationRequest(i, [1, 2], n=2, max_new_tokens=400, ignore_eos=True) for i in range(8)])
    deadline = time.monotonic() + 60
    while min(e.stats()["tokens"] for e in pool.engines) < 100:  # both engines are mid-generation
        assert time.monotonic() < deadline
        time.sleep(0.05)
    pool.update_weights(_perturbed(model).state_dict(), v, wait=True)  # without stopping generation
    assert [e.health()["version"] for e in pool.engines] == [v, v]
    groups = collect_groups(pool, 8)
    spans = 0
    for g in groups:
        for c in g.completions:
            assert len(c.versions) == 400 and c.versions == sorted(c.versions)
            assert set(c.versions) <= {v - 1, v}
            spans += set(c.versions) == {v - 1, v}
    assert spans > 0, "some sequences span the two policy versions"
    assert pool.stats()["kv_stale_tokens"] > 0


def test_a_turn_that_extends_a_kept_cache_over_http_prefills_only_the_new_tokens(servers, model):
    engine = RemoteEngine(servers[0].url, sync_timeout_s=5.0, ready_timeout_s=120.0)
    engine.start()
    try:
        before = engine.stats()["prefill_tokens_reused"]
        engine.submit([GenerationRequest("t1", [5, 6, 7], 1, max_new_tokens=4, cache_key="rollout-x")])
        first = collect_groups(engine, 1)[0].completions[0]
        prompt = [5, 6, 7] + first.token_ids + [20, 21]
        engine.submit([GenerationRequest("t2", prompt, 1, max_new_tokens=4, cache_key="rollout-x")])
        second = collect_groups(engine, 1)[0].completions[0]
        assert engine.stats()["prefill_tokens_reused"] - before == 3 + 4 - 1  # the cache_key crossed HTTP
        if set(second.versions) == {0}:  # the fixture's weights: the extended turn is exact
            torch.testing.assert_close(torch.tensor(second.logprobs), full_logprobs(model, prompt, second.token_ids),
                                       rtol=0, atol=2e-5)
    finally:
        engine.stop()


def _tokens(pool):
    return [e.stats()["tokens"] for e in pool.engines]


def _wait_until_generating(pool, before, timeout=60.0):
    """Every engine has sampled tokens of the new requests: pause mid-flight, not after a fixed sleep (on an
    idle machine the tiny model finishes 300 tokens in about the time such a sleep takes)."""
    deadline = time.monotonic() + timeout
    while any(now <= then for now, then in zip(_tokens(pool), before)):
        assert time.monotonic() < deadline, "the engines never started generating"
        time.sleep(0.002)


def _settled_tokens(pool, quiet_s: float = 0.3, timeout: float = 30.0) -> list[float]:
    """The engines' token counts once they stop moving for `quiet_s` (a step under way when paused ends; a
    loaded machine may take longer than any fixed wait): a paused engine settles, a running one never does."""
    deadline = time.monotonic() + timeout
    last = [e.stats()["tokens"] for e in pool.engines]
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        now = [e.stats()["tokens"] for e in pool.engines]
        if now == last:
            break
        last = now
    return last


def test_pause_keep_stages_weights_and_resume_applies_them(pool, model):
    v = pool.version + 1
    before = _tokens(pool)
    pool.submit([GenerationRequest(i, [5, 6], n=2, max_new_tokens=300, ignore_eos=True) for i in range(4)])
    _wait_until_generating(pool, before)
    pool.pause("keep")
    frozen = _settled_tokens(pool)  # a decode step that was running finishes
    time.sleep(0.5)
    assert [e.stats()["tokens"] for e in pool.engines] == frozen, "a paused engine generates nothing"
    pool.update_weights(model.state_dict(), v, wait=True)
    assert [e.health()["version"] for e in pool.engines] == [v - 1, v - 1], "staged, not live, while paused"
    pool.resume()
    assert [e.health()["version"] for e in pool.engines] == [v, v]
    groups = collect_groups(pool, 4)
    assert all(len(c.token_ids) == 300 and c.versions[-1] == v for g in groups for c in g.completions)


def test_pause_abort_returns_partial_output_that_is_continued_after_resume(pool, model):
    v = pool.version + 1
    before = _tokens(pool)
    pool.submit([GenerationRequest(i, [7, 8, 9], n=2, max_new_tokens=300, ignore_eos=True) for i in range(4)])
    _wait_until_generating(pool, before)
    aborted = sum(e.pause("abort")["aborted"] for e in pool.engines)
    assert aborted > 0
    pool.update_weights(_perturbed(model, seed=5).state_dict(), v, wait=True)
    pool.resume()
    groups = collect_groups(pool, 4)
    new = _perturbed(model, seed=5)
    for g in groups:
        for c in g.completions:
            # re-prefilled under the new weights (AReaL): tokens after the abort are the new policy's exactly
            assert len(c.token_ids) == 300 and c.versions == sorted(c.versions) and c.versions[-1] == v
            assert c.finish_reason == "length"
            cut = c.versions.index(v)
            torch.testing.assert_close(torch.tensor(c.logprobs[cut:cut + 20]),
                                       full_logprobs(new, g.prompt_ids, c.token_ids)[cut:cut + 20], rtol=0, atol=5e-5)


def test_sync_to_a_hung_engine_misses_its_deadline_with_a_clear_error(pool, servers, model):
    v = pool.version + 1
    for e in pool.engines:
        e.sync_timeout_s = 1.0
    hung = servers[1].process.pid
    os.kill(hung, signal.SIGSTOP)
    try:
        start = time.monotonic()
        with pytest.raises(WeightSyncError, match=rf"{servers[1].url}.*version {v}.*not acknowledged within 3 s"):
            pool.update_weights(model.state_dict(), v, wait=True)
        assert time.monotonic() - start < 10
    finally:
        os.kill(hung, signal.SIGCONT)
    # the healthy engine took it; the hung one catches up with the next version once it is back
    assert pool.engines[0].health()["version"] == v
    for e in pool.engines:
        e.sync_timeout_s = 30.0
    pool.update_weights(model.state_dict(), v + 1, wait=True)
    assert [e.health()["version"] for e in pool.engines] == [v + 1, v + 1]


def test_stale_versions_and_misfit_weights_are_refused_and_leave_the_engine_serving(pool, model):
    engine = pool.engines[0]
    v = engine.health()["version"]
    with pytest.raises(WeightSyncError, match=r"409.*stale weight update"):
        engine.update_weights(model.state_dict(), v - 1)
    bad = dict(model.state_dict())
    bad["model.norm.weight"] = torch.zeros(7)
    with pytest.raises(WeightSyncError, match=r"400.*model.norm.weight: shape \(7,\)"):
        engine.update_weights(bad, v + 1)
    with pytest.raises(WeightSyncError, match="unknown tensor not.a.weight"):
        engine.update_weights({"not.a.weight": torch.zeros(1)}, v + 1)
    assert engine.health()["status"] == "ok" and engine.health()["version"] == v
    engine.submit([GenerationRequest("after", [1], n=1)])
    assert collect_groups(engine, 1)[0].request_id == "after"


def test_pool_start_names_engines_that_never_come_up():
    from olmorl.rewards.service._local import free_port
    from olmorl.trainer.engines._http import EngineError

    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EngineError, match=rf"not ready within 1 s: {url} \(ConnectError\)"):
        EnginePool([RemoteEngine(url, ready_timeout_s=1.0)]).start()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/health")
