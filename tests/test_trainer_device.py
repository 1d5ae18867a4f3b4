"""`device` and `learner_dtype`: auto resolves at start (cpu on this CUDA-less machine) and the resolved config
says so; cuda without CUDA is refused in one line; bfloat16_mixed keeps fp32 master weights, so a step at
lr 1e-6 moves them where a pure-bf16 learner rounds the update away; LoRA trains under it; the chunked logprob
head agrees between bf16 and fp32."""

from __future__ import annotations

import copy

import pytest
import torch
from _engine_checks import tiny_random_llama

from olmorl.trainer import TrainConfig
from olmorl.trainer._cli import main
from olmorl.trainer._config import dump_config
from olmorl.trainer._device import resolve_device
from olmorl.trainer.learners._build import build_local_learner
from olmorl.trainer.learners._plain import token_logprobs
from olmorl.trainer.learners._samples import TrainSample

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only resolution and refusal")


def test_device_auto_resolves_to_cpu_here_and_the_resolved_config_prints_it():
    resolved = resolve_device(TrainConfig())
    assert TrainConfig().device == "auto" and resolved.device == "cpu"
    assert '"device": "cpu"' in dump_config(resolved)
    assert resolve_device(TrainConfig(device="cpu")).device == "cpu"


def test_device_cuda_without_cuda_is_refused_at_start_in_one_line(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("")
    assert main(["--model", str(tmp_path), "--train-files", f"[{rows}]", "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "device cuda" in err and "torch.cuda.is_available() is False" in err


@pytest.mark.parametrize("fields, message", [
    (dict(device="gpu"), "device must be one of"),
    (dict(learner_dtype="bfloat16"), "learner_dtype must be one of"),
    (dict(device="cuda", engine_servers=1), "device cuda places the in-process"),
    (dict(device="cuda", learner_backend="deepspeed"), "device cuda places the in-process"),
    (dict(learner_dtype="bfloat16_mixed", learner_backend="deepspeed"), "plain torch learner"),
])
def test_device_and_precision_combinations_are_validated(fields, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**fields)


def _samples(n=4, length=6):
    g = torch.Generator().manual_seed(3)
    out = []
    for k in range(n):
        prompt = torch.randint(4, 40, (5,), generator=g).tolist()
        completion = torch.randint(4, 40, (length,), generator=g).tolist()
        out.append(TrainSample(prompt, completion, [-3.0] * length, [0] * length, 1.0 if k % 2 else -1.0))
    return out


def _changed_fraction(before, model):
    after = {k: v.detach().float() for k, v in model.named_parameters() if v.requires_grad}
    moved = sum(int((after[k] != before[k]).sum()) for k in after)
    return moved / sum(v.numel() for v in after.values())


def test_bfloat16_mixed_keeps_fp32_master_weights_that_a_tiny_update_moves():
    base = tiny_random_llama()
    mixed = build_local_learner(TrainConfig(learner_dtype="bfloat16_mixed", learning_rate=1e-6), copy.deepcopy(base))
    pure = build_local_learner(TrainConfig(learning_rate=1e-6), copy.deepcopy(base).to(torch.bfloat16))
    results = {}
    for name, learner in (("mixed", mixed), ("pure_bf16", pure)):
        before = {k: v.detach().float().clone() for k, v in learner.model.named_parameters()}
        stats = learner.train_step(_samples())
        assert torch.isfinite(torch.tensor(stats["loss"]))
        results[name] = _changed_fraction(before, learner.model)
    assert all(p.dtype == torch.float32 for p in mixed.model.parameters())
    assert all(s["exp_avg"].dtype == torch.float32 for s in mixed.optimizer.state.values())
    # Adam's first step moves every weight with a gradient by ~lr: fp32 holds it, bf16 (8 mantissa bits) does not
    assert results["mixed"] > 0.9, results
    assert results["pure_bf16"] < 0.05, results


def test_bfloat16_mixed_refuses_a_bf16_model():
    with pytest.raises(ValueError, match="fp32 master weights"):
        build_local_learner(TrainConfig(learner_dtype="bfloat16_mixed"), tiny_random_llama().to(torch.bfloat16))


def test_lora_trains_under_bfloat16_mixed():
    learner = build_local_learner(TrainConfig(lora_rank=4, lora_alpha=8, learner_dtype="bfloat16_mixed",
                                              learning_rate=1e-3), tiny_random_llama())
    before = {k: v.detach().float().clone() for k, v in learner.model.named_parameters()}
    for _ in range(2):  # lora_B starts at zero: the second step's gradient reaches lora_A too
        stats = learner.train_step(_samples())
        assert torch.isfinite(torch.tensor(stats["loss"]))
    after = dict(learner.model.named_parameters())
    moved = [k for k, v in after.items() if v.requires_grad and not torch.equal(v.detach(), before[k])]
    assert any("lora_A" in k for k in moved) and any("lora_B" in k for k in moved)
    assert all(after[k].dtype == torch.float32 for k in moved)
    assert all(torch.equal(after[k].detach(), before[k]) for k in after if not after[k].requires_grad)


def _logprob_and_grads(hidden, weight, targets):
    hidden = hidden.clone().requires_grad_(True)
    head = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
    head.weight = torch.nn.Parameter(weight.clone())
    logp, _ = token_logprobs(hidden, head, targets, temperature=0.7, impl="chunked", chunk=5)
    (logp * torch.linspace(-1, 1, len(logp))).sum().backward()
    return logp.detach(), hidden.grad.float(), head.weight.grad.float()


@pytest.mark.parametrize("weight_dtype", [torch.bfloat16, torch.float32])
def test_the_chunked_head_in_bf16_agrees_with_fp32(weight_dtype):
    """bf16 hidden states with a bf16 head (pure bf16) or an fp32 one (mixed precision's master head)."""
    g = torch.Generator().manual_seed(0)
    hidden, weight = torch.randn(23, 16, generator=g), 0.3 * torch.randn(300, 16, generator=g)
    targets = torch.randint(0, 300, (23,), generator=g)
    want = _logprob_and_grads(hidden, weight, targets)
    got = _logprob_and_grads(hidden.to(torch.bfloat16), weight.to(weight_dtype), targets)
    assert got[0].dtype == torch.float32 and got[2].shape == weight.shape
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0.05, atol=0.05)


@pytest.mark.parametrize("fields", [dict(logprob_impl="naive"), dict(logprob_impl="torch_lce"),
                                    dict(sequence_packing=True), dict(kl_beta=0.1), dict(minibatches=2)])
def test_bfloat16_mixed_steps_with_each_logprob_path_packing_reference_and_minibatches(fields):
    base = tiny_random_llama()
    mixed = build_local_learner(TrainConfig(learner_dtype="bfloat16_mixed", **fields), copy.deepcopy(base))
    plain = build_local_learner(TrainConfig(**fields), copy.deepcopy(base))
    got, want = mixed.train_step(_samples()), plain.train_step(_samples())
    assert abs(got["loss"] - want["loss"]) < 0.005, (got["loss"], want["loss"])  # bf16 forward, same objective
    if "entropy" in want:  # torch_lce reports none
        assert abs(got["entropy"] - want["entropy"]) < 0.05
