"""olmorl-train on a real two-node local Ray cluster: two engine actors (one per node, weights through
the object store), a two-rank DeepSpeed ZeRO-2 or ZeRO-3 learner (gloo) as actors in placement groups, and the
reward server as a Ray Serve deployment on the same cluster. The run stops after step 2 and a second
run resumes from its checkpoint (every rank's DeepSpeed files, which the driver wrote: no shared
filesystem). After step 3, the learner's parameters equal those of the single-process learner trained
on the same batches (the batches both runs trained on, recorded on the way)."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest
import torch
from _biased_model import answer_rows, build_biased_model

from olmorl.trainer import TrainConfig, Trainer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.mark.parametrize("zero_stage", [2, 3])
def test_two_engine_actors_and_two_deepspeed_ranks_match_the_single_process_learner(ray_cluster, tmp_path, zero_stage):
    pytest.importorskip("deepspeed", reason="the [deepspeed] extra is not installed (scripts/test installs it)")
    from transformers import AutoModelForCausalLM

    from olmorl.trainer._scaleout import build_local_learner

    # "1" 70 %: groups of 4 mostly carry a learning signal; noise: no gradient is pure rounding (see there)
    build_biased_model(tmp_path / "model", p_one=0.7, noise=0.05)
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in answer_rows(["1", "2"] * 16)))
    cfg = TrainConfig(model=str(tmp_path / "model"), train_files=(str(tmp_path / "train.jsonl"),),
                      output_dir=str(tmp_path / "run"), group_size=4, prompts_per_step=4, max_new_tokens=1,
                      learning_rate=1e-2, total_steps=2, torch_threads=1, tensorboard=False, async_steps=1,
                      adam_eps=1e-4,  # see the weight comparison below
                      ray_address=ray_cluster.address, ray_engines=2, ray_engine_cpus=0.5, ray_learner_ranks=2,
                      ray_learner_cpus=0.5,  # per node: 0.5 engine + 0.5 rank, a CPU left for a reward replica
                      learner_backend="deepspeed", zero_stage=zero_stage, engine_sync_timeout_s=60,
                      ray_reward_replicas=1, local_reward_workers=1)  # the reward server on the cluster too
    trained: list = []
    history: list = []
    for total_steps in (2, 3):  # the second run resumes from the first one's step-2 checkpoint
        trainer = Trainer(dataclasses.replace(cfg, total_steps=total_steps))
        train_step = trainer.learner.train_step
        trainer.learner.train_step = lambda samples, f=train_step: (trained.append(copy.deepcopy(samples)), f(samples))[1]
        try:
            history += trainer.run()
            final = trainer.learner.weights()
        finally:
            trainer.learner.close()
        if total_steps == 2:
            files = sorted(p.name for p in (tmp_path / "run" / "checkpoints" / "step_0000002" / "learner").iterdir())
            # both ranks' optimizer partitions (and under ZeRO-3 their weight partitions)
            model_states = (["mp_rank_00_model_states.pt"] if zero_stage < 3 else
                            [f"zero_pp_rank_{r}_mp_rank_00_model_states.pt" for r in range(2)])
            assert files == sorted(model_states + [f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt" for r in range(2)])
    assert len(history) == 3 and sum(h["groups_trained"] for h in history) > 0
    engines = trainer.engine.engines
    assert len({e.node for e in engines}) == 2  # one engine actor per node
    assert [e.version for e in engines] == [3, 3]  # every version reached both engines
    assert trainer.engine.last_sync_s > 0

    local = dataclasses.replace(cfg, ray_address=None, ray_engines=0, ray_learner_ranks=0, ray_reward_replicas=0,
                                learner_backend="torch")
    torch.manual_seed(0)
    initial = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=torch.float32)
    reference = build_local_learner(local, copy.deepcopy(initial))
    reference_stats = [reference.train_step(samples) for samples in trained if samples]
    expected = reference.weights()
    # The gradient itself: loss and pre-clip norm per step (Adam would hide a scale error in the weights).
    assert len(reference_stats) == len(history)
    for step, (got, want, batch) in enumerate(zip(history, reference_stats, [t for t in trained if t]), 1):
        # on a mismatch, the batch (what reproduces it offline against the torchrun learner)
        shown = [(s.in_loss, round(s.advantage, 4), [round(x, 4) for x in s.behav_logprobs]) for s in batch]
        assert got["loss"] == pytest.approx(want["loss"], rel=1e-4, abs=1e-6), f"step {step}: {shown}"
        assert got["grad_norm"] == pytest.approx(want["grad_norm"], rel=1e-3, abs=1e-6), f"step {step}: {shown}"
    moved = max(float((expected[k] - initial.state_dict()[k]).abs().max()) for k in expected)
    assert moved > 1e-3, "the learners must actually move the weights"
    assert set(final) == set(expected)
    # Only the two ranks' summation order differs (gradients agree to about 1e-8). The biased model's parameters
    # behind its scale-invariant RMSNorm, fed (nearly) all-ones vectors, get gradients of about that size, where
    # Adam's g / (|g| + eps) turns the difference into lr * 1e-8 / eps per step: with the default eps (1e-8) a
    # coin flip of +-lr, with adam_eps=1e-4 about 1e-6. A lost or wrong optimizer state at the resume still
    # moves the head by most of a step (lr 1e-2).
    for k in expected:
        torch.testing.assert_close(final[k], expected[k], rtol=1e-4, atol=5e-5, msg=lambda m, k=k: f"{k}: {m}")


def test_weights_travel_the_object_store_as_numpy_with_their_dtype():
    pytest.importorskip("ray", reason="the [ray] extra is not installed")
    from olmorl.trainer._ray import from_object_store, to_object_store

    weights = {"a": torch.randn(3, 4), "b": torch.randn(5).to(torch.bfloat16), "c": torch.arange(6).view(2, 3)[:, 1]}
    back = from_object_store(to_object_store(weights))
    for name, tensor in weights.items():
        assert back[name].dtype == tensor.dtype and torch.equal(back[name], tensor), name
