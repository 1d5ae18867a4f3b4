"""LoRA training end to end on CPU against a live reward server, in each placement: the in-process engine, an
olmorl-engine server over HTTP, and two Ray engine actors. Only the adapter trains and travels; a resumed run
continues as an uninterrupted one; `olmorl-train export` writes a merged model that transformers loads."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest
import torch
from _biased_model import answer_rows, build_biased_model

from olmorl.trainer import TrainConfig, Trainer
from olmorl.trainer._checkpoint import latest_checkpoint, load_checkpoint
from olmorl.trainer._lora import AdapterWeights

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    root = tmp_path_factory.mktemp("lora")
    build_biased_model(root / "model", p_one=0.7, noise=0.05)  # groups of 4 mostly carry a learning signal
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in answer_rows(["1", "2"] * 16)))
    return root


def _config(task, out, **kw) -> TrainConfig:
    base = dict(model=str(task / "model"), train_files=(str(task / "train.jsonl"),), output_dir=str(out),
                group_size=4, prompts_per_step=4, max_new_tokens=1, learning_rate=5e-2, total_steps=3,
                torch_threads=1, tensorboard=False, async_steps=1, lora_rank=4, lora_alpha=8,
                engine_sync_timeout_s=60.0)
    base.update(kw)
    return TrainConfig(**base)


def _logits(model, ids=(5, 6, 7, 8)):
    with torch.no_grad():
        return model(torch.tensor([list(ids)])).logits[0].float()


def _check_lora_run(trainer, history, steps=3):
    assert len(history) == steps and sum(h["groups_trained"] for h in history) > 0
    payload = trainer.learner.weights()
    assert isinstance(payload, AdapterWeights) and all(".lora_" in k for k in payload)
    assert max(float(v.abs().max()) for k, v in payload.items() if ".lora_B." in k) > 1e-3, "the adapter trained"
    from safetensors.torch import load_file

    initial = load_file(os.path.join(trainer.config.model, "model.safetensors"))
    frozen = {k.removeprefix("base_model.model.").replace(".base_layer", ""): v
              for k, v in trainer.learner.model.state_dict().items() if ".lora_" not in k}
    for name, value in initial.items():  # the base never moves
        torch.testing.assert_close(frozen[name], value, rtol=0, atol=0)


def test_lora_trains_with_the_in_process_engine_and_exports_a_merged_model(task, tmp_path, reward_server):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    trainer = Trainer(_config(task, tmp_path / "run", reward_urls=(reward_server(),)))
    history = trainer.run()
    _check_lora_run(trainer, history)
    merged = copy.deepcopy(trainer.learner.model).merge_and_unload().eval()
    torch.testing.assert_close(_logits(trainer.engine.model), _logits(merged), rtol=0, atol=1e-5)  # synced

    checkpoint = latest_checkpoint(tmp_path / "run")
    assert (checkpoint / "model" / "adapter_config.json").is_file()
    assert not (checkpoint / "model" / "model.safetensors").exists()  # the checkpoint holds the adapter only
    out = tmp_path / "exported"
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(["olmorl-train", "export", str(tmp_path / "run"), str(out)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    exported = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32).eval()
    assert not any("lora" in k for k in exported.state_dict())
    base = AutoModelForCausalLM.from_pretrained(str(task / "model"), dtype=torch.float32)
    adapted = PeftModel.from_pretrained(base, str(checkpoint / "model")).eval()
    torch.testing.assert_close(_logits(exported), _logits(adapted), rtol=0, atol=1e-5)
    assert (_logits(exported) - _logits(AutoModelForCausalLM.from_pretrained(str(task / "model")))).abs().max() > 1e-4
    # a full fine-tune's checkpoint is refused with the reason
    proc = subprocess.run(["olmorl-train", "export", str(task), str(tmp_path / "x")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 2 and "neither a checkpoint nor a run directory" in proc.stderr


def test_lora_trains_with_an_http_engine(task, tmp_path, reward_server):
    trainer = Trainer(_config(task, tmp_path / "run", reward_urls=(reward_server(),), engine_servers=1))
    history = trainer.run()
    _check_lora_run(trainer, history)
    assert [e.version for e in trainer.engine.engines] == [3]  # the server acknowledged every adapter version
    log = (tmp_path / "run" / "engine-0.log").read_text()
    assert "Traceback" not in log


def test_lora_trains_with_ray_engine_actors(task, tmp_path, reward_server, ray_cluster):
    trainer = Trainer(_config(task, tmp_path / "run", reward_urls=(reward_server(),), ray_address=ray_cluster.address,
                              ray_engines=2, ray_engine_cpus=0.5))
    history = trainer.run()
    _check_lora_run(trainer, history)
    assert [e.version for e in trainer.engine.engines] == [3, 3]  # every adapter version reached both actors


def test_a_resumed_lora_run_continues_as_an_uninterrupted_one(task, tmp_path, reward_server):
    common = dict(reward_urls=(reward_server(),), async_steps=0, deterministic=True)
    straight = Trainer(_config(task, tmp_path / "straight", total_steps=4, **common)).run()
    Trainer(_config(task, tmp_path / "resumed", total_steps=2, **common)).run()
    resumed = Trainer(_config(task, tmp_path / "resumed", total_steps=4, **common)).run()
    assert [h["loss"] for h in resumed] == pytest.approx([h["loss"] for h in straight[2:]], rel=1e-5, abs=1e-7)
    a = load_checkpoint(latest_checkpoint(tmp_path / "straight"))
    b = load_checkpoint(latest_checkpoint(tmp_path / "resumed"))
    assert a["step"] == b["step"] == 4 and set(a["model"]) == set(b["model"])
    for name, value in a["model"].items():
        torch.testing.assert_close(b["model"][name], value, rtol=1e-5, atol=1e-6)
    # the optimizer state that resumed is the adapter's alone (its moments for every LoRA tensor)
    assert len(b["learner"]["optimizer"]["state"]) == len(b["model"])


def test_the_lora_grpo_example_trains_and_exports(tmp_path, reward_server):
    """examples/lora_grpo.py, as docs/trainer.md shows it, with a shorter warm start and run."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "OLMORL_URL": reward_server(), "PYTHONPATH": root}
    proc = subprocess.run([sys.executable, os.path.join(root, "examples", "lora_grpo.py"), "--out", str(tmp_path / "w"),
                           "--steps", "3", "--warm-steps", "100"], capture_output=True, text=True, env=env,
                          timeout=500, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # 2 layers x (q, k, v, o) x (A, B), each 8 x 192 floats: the adapter, not the 4.8 MB model
    assert "trained 3 steps; each sync sent 16 adapter tensors, 98304 bytes" in proc.stdout
    assert "no adapter layers: True" in proc.stdout
    assert (tmp_path / "w" / "merged" / "model.safetensors").is_file()
