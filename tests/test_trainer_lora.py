"""LoRA policies: the learner trains a peft adapter on a frozen base, and only the adapter's lora_A / lora_B
tensors travel to the engines (in-process transformers engine and olmorl-engine servers over HTTP here; the
Ray engine actors in the end-to-end runs). After a sync, every engine's logprobs are those of the learner's
merged model. Also: the config's LoRA fields are validated."""

from __future__ import annotations

import copy
import dataclasses
import os

import httpx
import pytest
import torch
from _engine_checks import collect_groups, full_logprobs, tiny_random_llama

from olmorl.trainer import TrainConfig
from olmorl.trainer._lora import AdapterWeights
from olmorl.trainer.engines._http import RemoteEngine, write_weights_file
from olmorl.trainer.engines._server import EngineServerProcess
from olmorl.trainer.engines._torch import TorchEngine
from olmorl.trainer.engines._types import GenerationRequest
from olmorl.trainer.learners._build import build_local_learner

NEVER = -1  # an EOS id no token has: every completion runs to max_new_tokens
LORA = dict(lora_rank=4, lora_alpha=8)


@pytest.fixture(scope="module")
def base():
    return tiny_random_llama()


def _lora_learner(base, **lora):
    learner = build_local_learner(TrainConfig(**{**LORA, **lora}), copy.deepcopy(base))
    with torch.no_grad():  # a trained adapter: lora_B starts at zero, which would hide a missing sync
        generator = torch.Generator().manual_seed(1)
        for name, p in learner.model.named_parameters():
            if "lora_B" in name:
                p.copy_(0.2 * torch.randn(p.shape, generator=generator))
    return learner


def _merged(learner):
    return copy.deepcopy(learner.model).merge_and_unload().eval()


def _model_bytes(model):
    return sum(p.numel() * p.element_size() for p in model.parameters())


def _assert_engine_follows(groups, merged, base):
    for g in groups:
        for c in g.completions:
            want = full_logprobs(merged, g.prompt_ids, c.token_ids)
            torch.testing.assert_close(torch.tensor(c.logprobs), want, rtol=0, atol=2e-5)
            # and not the base model's: the adapter changed the policy
            assert (torch.tensor(c.logprobs) - full_logprobs(base, g.prompt_ids, c.token_ids)).abs().max() > 1e-3


def test_the_sync_payload_is_the_adapter_and_the_in_process_engine_serves_the_merged_model(base):
    learner = _lora_learner(base)
    payload = learner.weights()
    assert isinstance(payload, AdapterWeights)
    assert payload and all(".lora_A." in k or ".lora_B." in k for k in payload)
    trainable = [p for p in learner.model.parameters() if p.requires_grad]
    adapter_bytes = sum(p.numel() * p.element_size() for p in trainable)
    assert payload.nbytes() == adapter_bytes  # what travels is the adapter ...
    assert payload.nbytes() < 0.2 * _model_bytes(base)  # ... not the model
    # the optimizer holds the adapter only
    assert sum(p.numel() for g in learner.optimizer.param_groups for p in g["params"]) == sum(p.numel() for p in trainable)

    engine = TorchEngine(copy.deepcopy(base), eos_token_id=NEVER, pad_token_id=0, max_new_tokens=6, seed=0)
    engine.update_weights(payload, 1)
    engine.submit([GenerationRequest(i, [i + 1, 2, 3], n=2) for i in range(3)])
    engine.run_steps(12)
    _assert_engine_follows(engine.get_groups(0), _merged(learner), base)
    # a second adapter version loads into the adapter already injected; the base weights never moved
    with torch.no_grad():
        for name, p in learner.model.named_parameters():
            if "lora_A" in name:
                p.mul_(-1.5)
    engine.update_weights(learner.weights(), 2)
    engine.submit([GenerationRequest(9, [4, 5], n=2)])
    engine.run_steps(12)
    _assert_engine_follows(engine.get_groups(0), _merged(learner), base)
    q_proj = engine.model.model.layers[0].self_attn.q_proj
    torch.testing.assert_close(q_proj.base_layer.weight, base.model.layers[0].self_attn.q_proj.weight, rtol=0, atol=0)


def test_an_http_engine_applies_an_adapter_only_update_to_its_base_model(base, tmp_path):
    base.save_pretrained(str(tmp_path / "base"))
    server = EngineServerProcess(str(tmp_path / "base"), log_path=str(tmp_path / "engine.log"),
                                 extra_args=["--eos-token-id", str(NEVER), "--pad-token-id", "0",
                                             "--max-new-tokens", "6"]).start()
    try:
        engine = RemoteEngine(server.url, sync_timeout_s=30.0, ready_timeout_s=120.0)
        engine.start()
        learner = _lora_learner(base, lora_target_modules=("q_proj", "v_proj"))
        payload = learner.weights()
        path = write_weights_file(payload, 1)
        try:  # the file is the adapter (plus a safetensors header), not the model
            assert payload.nbytes() <= os.path.getsize(path) < payload.nbytes() + 16384
            assert os.path.getsize(path) < 0.1 * _model_bytes(base)
            body = engine.load_weights_file(path, 1)
        finally:
            os.unlink(path)
        assert body["tensors"] == len(payload) == 2 * 2 * 2  # 2 layers x (q, v) x (A, B)
        engine.submit([GenerationRequest(i, [i + 1, 2, 3], n=2) for i in range(3)])
        _assert_engine_follows(collect_groups(engine, 3), _merged(learner), base)

        # an adapter that does not fit (another rank) is refused with the reason; the engine keeps serving
        wrong = _lora_learner(base, lora_rank=2, lora_target_modules=("q_proj", "v_proj")).weights()
        with pytest.raises(Exception, match=r"shape \(2, 32\) != \(4, 32\)"):
            engine.update_weights(wrong, 2)
        assert httpx.get(server.url + "/health").json()["version"] == 1
        engine.stop()
    finally:
        server.stop()


def test_a_child_process_engine_receives_the_adapter_with_its_spec(base, tmp_path):
    from olmorl.trainer.engines._process import ProcessEngine

    base.save_pretrained(str(tmp_path / "base"))
    engine = ProcessEngine(str(tmp_path / "base"), eos_token_id=NEVER, pad_token_id=0, max_new_tokens=6, seed=0)
    engine.start()
    try:
        learner = _lora_learner(base)
        engine.update_weights(learner.weights(), 1, wait=True)  # pickled across the pipe, spec included
        engine.submit([GenerationRequest(i, [i + 1, 2, 3], n=2) for i in range(2)])
        _assert_engine_follows(collect_groups(engine, 2), _merged(learner), base)
    finally:
        engine.stop()


@pytest.mark.parametrize("field, value, message", [
    ("lora_rank", -1, "lora_rank must be >= 0"),
    ("lora_alpha", 0, "lora_alpha must be > 0"),
    ("lora_dropout", 1.0, r"lora_dropout must be in \[0, 1\)"),
    ("lora_target_modules", ("q_proj", " "), "lora_target_modules must be module names"),
    ("learner_backend", "deepspeed", "plain torch learner"),
])
def test_lora_settings_are_validated(field, value, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**{**LORA, field: value})


def test_target_modules_that_adapt_nothing_are_an_error(base):
    with pytest.raises(ValueError, match="no_such_proj"):
        build_local_learner(dataclasses.replace(TrainConfig(**LORA), lora_target_modules=("no_such_proj",)),
                            copy.deepcopy(base))


def test_the_vllm_adapter_directories_load_as_the_learners_adapter_and_are_deleted_when_unused(base):
    """What vLLM's LoRA path reads (the engines themselves need a GPU): each version's PEFT adapter directory
    gives the learner's merged model under peft, and a version no request uses any more is deleted."""
    from peft import PeftModel

    from olmorl.trainer.engines._vllm_lora import AdapterVersions

    learner = _lora_learner(base, lora_target_modules=("q_proj", "v_proj", "down_proj"))
    versions = AdapterVersions()
    try:
        path = versions.write(learner.weights(), 1)
        assert sorted(p.name for p in path.iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
        loaded = PeftModel.from_pretrained(copy.deepcopy(base), str(path)).eval()
        ids = torch.tensor([[3, 4, 5, 6]])
        with torch.no_grad():
            torch.testing.assert_close(loaded(ids).logits, _merged(learner)(ids).logits, rtol=0, atol=1e-5)
        assert versions.acquire() == 1  # a request generating with version 1
        versions.write(learner.weights(), 2)
        assert versions.retired() == [] and (versions.root / "v1").is_dir()  # still in use
        versions.release(1)
        assert versions.retired() == [1] and not (versions.root / "v1").exists()
        assert (versions.root / "v2").is_dir()  # the current version stays
    finally:
        versions.close()
    assert not versions.root.exists()
