"""The engine contract, one test suite for every engine implementation.

Runs for each engine whose dependency is importable here: the in-process transformers engine, the same
engine in a child process, and an `olmorl-engine` server over HTTP. The two vLLM engines (in-process
AsyncLLM and a remote `vllm serve`) run wherever vLLM and a CUDA GPU are present; on CPU-only hosts they are
reported as skipped with the reason (vLLM ships CUDA-only wheels).
"""

import copy
import os
import subprocess
import sys
import time

import pytest
import torch

from olmorl.trainer.engines._types import GenerationRequest
from _engine_checks import collect_groups, full_logprobs

MAX_NEW = 8
ENGINES = ["torch", "process", "http", "vllm", "vllm_serve"]
VLLM_SKIP = "vLLM is not installable on this host (CUDA-only wheels, see docs/scaling.md); runs where it is"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    from olmorl.trainer._tiny import build_tiny_llama

    root = tmp_path_factory.mktemp("contract")
    _, tok = build_tiny_llama(root / "m", hidden=32, layers=2, heads=4, seed=0, max_positions=64)
    model = AutoModelForCausalLM.from_pretrained(str(root / "m"), dtype=torch.float32).eval()
    return root, model, tok


def _needs_vllm():
    try:
        import vllm  # noqa: F401
    except ImportError:
        pytest.skip(VLLM_SKIP)
    if not torch.cuda.is_available():
        pytest.skip("vLLM is installed but no CUDA GPU is visible")


def _start_vllm_serve(model_dir, log_path):
    from olmorl.rewards.service._local import free_port

    port = free_port()
    env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model_dir,
                             "--port", str(port), "--dtype", "float32", "--enforce-eager",
                             "--weight-transfer-config", '{"backend": "nccl"}', "--logprobs-mode", "processed_logprobs",
                             "--max-logprobs", "-1", "--gpu-memory-utilization", "0.3"],
                            env=env, stdout=open(log_path, "ab"), stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module", params=ENGINES)
def engine(request, tiny):
    root, model, tok = tiny
    kind = request.param
    common = dict(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, max_new_tokens=MAX_NEW, seed=1)
    cleanup = []
    if kind == "torch":
        from olmorl.trainer.engines._torch import TorchEngine

        eng = TorchEngine(copy.deepcopy(model), **common)
    elif kind == "process":
        from olmorl.trainer.engines._process import ProcessEngine

        eng = ProcessEngine(str(root / "m"), **common)
    elif kind == "http":
        from olmorl.trainer.engines._engine_pool import EnginePool
        from olmorl.trainer.engines._http import RemoteEngine
        from olmorl.trainer.engines._server import EngineServerProcess

        server = EngineServerProcess(str(root / "m"), log_path=str(root / "engine.log"),
                                     extra_args=["--max-new-tokens", str(MAX_NEW), "--seed", "1"]).start()
        eng = EnginePool([RemoteEngine(server.url)], owned=[server])
    elif kind == "vllm":
        _needs_vllm()
        from olmorl.trainer.engines._vllm import VLLMEngine

        eng = VLLMEngine(str(root / "m"), max_new_tokens=MAX_NEW, dtype="float32", enforce_eager=True,
                         gpu_memory_utilization=0.3)
    else:
        _needs_vllm()
        from olmorl.trainer.engines._vllm_server import VLLMServerEngine

        proc, url = _start_vllm_serve(str(root / "m"), str(root / "vllm.log"))
        cleanup.append(proc.terminate)
        eng = VLLMServerEngine(url, model=str(root / "m"), max_new_tokens=MAX_NEW)
    eng.start()
    eng.kind = kind
    eng.atol = 2e-5 if kind in ("torch", "process", "http") else 2e-3  # vLLM: GPU kernels vs a CPU reference
    yield eng
    eng.stop()
    for fn in cleanup:
        fn()


def _prompts(tok, texts):
    return [tok(t, add_special_tokens=False).input_ids for t in texts]


def test_groups_come_back_whole_with_sampling_logprobs_and_versions(engine, tiny):
    _, model, tok = tiny
    prompts = _prompts(tok, ["12+34=", "7+8=", "99+1="])
    engine.submit([GenerationRequest(f"q{i}", p, n=2, meta={"row": i}) for i, p in enumerate(prompts)])
    groups = collect_groups(engine, 3)
    assert sorted(g.request_id for g in groups) == ["q0", "q1", "q2"]
    assert engine.in_flight_groups == 0
    for g in groups:
        assert g.meta == {"row": int(g.request_id[1:])} and len(g.completions) == 2
        for c in g.completions:
            assert 1 <= len(c.token_ids) <= MAX_NEW and len(c.logprobs) == len(c.versions) == len(c.token_ids)
            assert c.finish_reason in ("stop", "length") and set(c.versions) == {engine.version}
            assert (c.finish_reason == "length") == (len(c.token_ids) == MAX_NEW and tok.eos_token_id not in c.token_ids)
            torch.testing.assert_close(torch.tensor(c.logprobs), full_logprobs(model, g.prompt_ids, c.token_ids),
                                       rtol=0, atol=engine.atol)


def test_a_paused_engine_finishes_nothing_until_resumed(engine, tiny):
    _, _, tok = tiny
    engine.pause()
    try:
        engine.submit([GenerationRequest(f"p{i}", p, n=2) for i, p in enumerate(_prompts(tok, ["1+1=", "2+2="]))])
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            assert engine.get_groups(timeout=0.2) == [], f"{engine.kind} generated while paused"
    finally:
        engine.resume()
    assert sorted(g.request_id for g in collect_groups(engine, 2)) == ["p0", "p1"]


def test_new_weights_with_a_version_govern_later_generation(engine, tiny):
    _, model, tok = tiny
    new = copy.deepcopy(model)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in new.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
    version = engine.version + 3
    engine.update_weights(new.state_dict(), version, wait=True)
    prompts = _prompts(tok, ["40+2=", "5+5="])
    engine.submit([GenerationRequest(i, p, n=2) for i, p in enumerate(prompts)])
    for group in collect_groups(engine, 2):
        for c in group.completions:
            assert set(c.versions) == {version}
            torch.testing.assert_close(torch.tensor(c.logprobs), full_logprobs(new, group.prompt_ids, c.token_ids),
                                       rtol=0, atol=engine.atol)
