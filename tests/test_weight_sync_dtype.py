"""A weight sync travels in the engine's dtype: an fp32 learner (bfloat16_mixed keeps fp32 master weights)
syncing to a bf16 engine sends bf16 tensors, half the bytes, and the engine ends up with the same bits it got
when it cast the fp32 tensors on load. An fp32 engine still gets fp32. In-process engine (full weights and a
LoRA adapter), olmorl-engine servers over HTTP, and pools whose engines disagree (an error)."""

from __future__ import annotations

import copy
import os

import pytest
import torch
from _engine_checks import tiny_random_llama

from olmorl.trainer import TrainConfig
from olmorl.trainer._distill import sequence_logprobs
from olmorl.trainer._lora import AdapterWeights, adapter_weights, load_policy_weights
from olmorl.trainer.engines import _engine_pool, _http
from olmorl.trainer.engines._engine_pool import EnginePool
from olmorl.trainer.engines._http import EngineError, RemoteEngine
from olmorl.trainer.engines._server import EngineServerProcess
from olmorl.trainer.engines._torch import TorchEngine
from olmorl.trainer.engines._weight_dtypes import WeightDtypes
from olmorl.trainer.learners._build import build_local_learner

NEVER = -1


def _trained(model):
    """`model`'s fp32 weights moved off their initial values (so a lost or mis-rounded sync shows)."""
    generator = torch.Generator().manual_seed(3)
    trained = copy.deepcopy(model)
    with torch.no_grad():  # per parameter: tied weights stay one tensor under both names
        for p in trained.parameters():
            p.add_(1e-3 * torch.randn(p.shape, generator=generator))
    return trained.state_dict()


def _old_path(engine_model, weights):
    """What the engine held before: the fp32 tensors loaded as sent, cast by load_state_dict."""
    reference = copy.deepcopy(engine_model)
    load_policy_weights(reference, weights)
    return reference


def _staged(engine):
    """The tensors an engine that has not started holds queued for its next update (its sync payload)."""
    kind, staged, *_ = engine._commands[-1]
    assert kind == "update"
    return staged


def _bytes(weights):
    return sum(t.numel() * t.element_size() for t in weights.values())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_the_in_process_engine_stages_an_update_in_its_own_dtype_with_the_old_bits(dtype):
    learner_model = tiny_random_llama()
    engine = TorchEngine(copy.deepcopy(learner_model).to(dtype), eos_token_id=NEVER, pad_token_id=0, max_new_tokens=4)
    weights = _trained(learner_model)
    engine.update_weights(weights, 1)
    staged = _staged(engine)
    assert {t.dtype for t in staged.values()} == {dtype}
    assert _bytes(staged) == _bytes(weights) * dtype.itemsize // 4  # bf16: half the fp32 bytes
    engine._apply(engine._commands.popleft())  # the engine thread's step, here
    reference = _old_path(copy.deepcopy(learner_model).to(dtype), weights)
    for name, tensor in reference.state_dict().items():
        assert torch.equal(engine.model.state_dict()[name], tensor), name


def test_an_adapter_update_to_a_bf16_engine_is_bf16_and_loads_the_same_adapter():
    base = tiny_random_llama()
    learner = build_local_learner(TrainConfig(lora_rank=4, lora_alpha=8), copy.deepcopy(base))
    with torch.no_grad():
        for name, p in learner.model.named_parameters():
            if "lora_B" in name:
                p.copy_(0.2 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))
    adapter = adapter_weights(learner.model)
    engine = TorchEngine(copy.deepcopy(base).to(torch.bfloat16), eos_token_id=NEVER, pad_token_id=0, max_new_tokens=4)
    engine.update_weights(adapter, 1)
    staged = _staged(engine)
    assert isinstance(staged, AdapterWeights) and staged.spec == adapter.spec
    assert {t.dtype for t in staged.values()} == {torch.bfloat16}
    assert _bytes(staged) * 2 == adapter.nbytes()
    engine._apply(engine._commands.popleft())
    reference = _old_path(copy.deepcopy(base).to(torch.bfloat16), adapter)
    for name, tensor in reference.state_dict().items():
        assert torch.equal(engine.model.state_dict()[name], tensor), name


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """One bf16 and one fp32 olmorl-engine on the same tiny model."""
    root = tmp_path_factory.mktemp("engines")
    tiny_random_llama().save_pretrained(str(root / "m"))
    args = ["--eos-token-id", str(NEVER), "--pad-token-id", "0", "--max-new-tokens", "4"]
    procs = {dtype: EngineServerProcess(str(root / "m"), log_path=str(root / f"engine-{dtype}.log"),
                                        extra_args=[*args, "--dtype", dtype]).start()
             for dtype in ("bfloat16", "float32")}
    yield procs
    for p in procs.values():
        p.stop()


@pytest.fixture
def written(monkeypatch):
    """The weights files the learner side writes for a sync: (bytes on disk, the tensors in them)."""
    from safetensors.torch import load_file

    files = []
    real = _http.write_weights_file

    def spy(weights, version, directory=None):
        path = real(weights, version, directory)
        files.append((os.path.getsize(path), load_file(path)))
        return path

    for module in (_http, _engine_pool):  # a RemoteEngine's own sync, an EnginePool's broadcast
        monkeypatch.setattr(module, "write_weights_file", spy)
    return files


def _pool(server):
    pool = EnginePool([RemoteEngine(server.url, sync_timeout_s=30.0, ready_timeout_s=120.0)])
    pool.start()
    return pool


def test_an_http_sync_to_a_bf16_engine_writes_half_the_bytes_and_the_engine_scores_as_before(servers, written):
    learner_model = tiny_random_llama()
    weights = _trained(learner_model)
    sizes, tensor_bytes = {}, {}
    for dtype, server in servers.items():
        pool = _pool(server)
        try:
            assert pool.weight_dtypes == WeightDtypes(dtype)
            version = int(pool.engines[0].health()["version"]) + 1
            pool.update_weights(weights, version, wait=True)
            sizes[dtype], tensors = written[-1]
            tensor_bytes[dtype] = _bytes(tensors)
            assert {t.dtype for t in tensors.values()} == {getattr(torch, dtype)}
            assert pool.stats()["weight_sync_bytes"] == _bytes(tensors)
            reference = _old_path(copy.deepcopy(learner_model).to(getattr(torch, dtype)), weights)
            ref_state = reference.state_dict()
            for name, tensor in tensors.items():  # the bits the engine loads are the old path's
                assert torch.equal(tensor, ref_state[name]), name
            sequences = [([1, 2, 3], [4, 5, 6, 7]), ([9], [8, 7])]
            served = pool.engines[0]._post("/v1/logprobs", json={"sequences": [
                {"prompt_ids": p, "completion_ids": c} for p, c in sequences]})["logprobs"]
            threads = torch.get_num_threads()
            torch.set_num_threads(1)  # the server's: the same reduction order, so the same floats
            try:
                assert served == sequence_logprobs(reference, sequences)
            finally:
                torch.set_num_threads(threads)
        finally:
            pool.stop()
    # the tensors' bytes halve; the file also holds a JSON header (about 1 KiB here, as long for both)
    assert tensor_bytes["bfloat16"] * 2 == tensor_bytes["float32"] == _bytes(weights)
    assert sizes["float32"] - sizes["bfloat16"] >= tensor_bytes["bfloat16"] - 64, sizes


def test_engines_in_one_pool_holding_different_dtypes_are_an_error_naming_them(servers):
    engines = [RemoteEngine(s.url, sync_timeout_s=30.0) for s in servers.values()]
    pool = EnginePool(engines)
    pool.start()
    try:
        with pytest.raises(EngineError, match="different dtypes") as err:
            pool.update_weights(tiny_random_llama().state_dict(), 10**6, wait=True)
        assert all(s.url in str(err.value) for s in servers.values())
    finally:
        pool.stop()


def test_an_engine_that_does_not_report_its_dtype_is_an_error():
    with pytest.raises(ValueError, match="does not report its weight dtype"):
        WeightDtypes.from_info({"version": 0}, "http://engine")
    with pytest.raises(ValueError, match="not a floating-point torch dtype"):
        WeightDtypes.from_info({"weight_dtype": "int8"}, "http://engine")


def test_a_child_process_engine_is_sent_its_own_dtype_through_shared_memory(tmp_path):
    from olmorl.trainer.engines._process import ProcessEngine

    learner_model = tiny_random_llama()
    learner_model.save_pretrained(str(tmp_path / "m"))
    engine = ProcessEngine(str(tmp_path / "m"), dtype="bfloat16", eos_token_id=NEVER, pad_token_id=0,
                           max_new_tokens=4)
    sent = []
    put = engine._commands.put
    engine._commands.put = lambda cmd: (sent.append(cmd), put(cmd))[1]  # what crosses the pipe
    engine.start()
    try:
        weights = _trained(learner_model)
        engine.update_weights(weights, 1, wait=True)
        payload = next(cmd[1] for cmd in sent if cmd[0] == "update")
        assert {t.dtype for t in payload.values()} == {torch.bfloat16}
        assert _bytes(payload) * 2 == _bytes(weights)
        reference = _old_path(copy.deepcopy(learner_model).to(torch.bfloat16), weights).state_dict()
        assert all(torch.equal(t, reference[k]) for k, t in payload.items())
    finally:
        engine.stop()
