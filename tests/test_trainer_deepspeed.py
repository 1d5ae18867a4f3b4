"""DeepSpeed learner on CPU: two ranks over gloo (torchrun) end with the single-process learner's parameters,
also when the run is checkpointed and resumed by fresh learners part-way (ZeRO-2 and ZeRO-3)."""

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

pytest.importorskip("deepspeed", reason="the [deepspeed] extra is not installed (scripts/test installs it)")

from olmorl.trainer.learners._plain import Learner  # noqa: E402
from olmorl.trainer.learners._samples import TrainSample
from olmorl.trainer._objective import LossSettings  # noqa: E402

WORKER = Path(__file__).with_name("_deepspeed_worker.py")


def _batches(steps=3, per_step=8, seed=0):
    """Uneven lengths so the two ranks hold different token counts and micro-batch counts."""
    rng = random.Random(seed)
    out = []
    for _ in range(steps):
        batch = []
        for _ in range(per_step):
            prompt = [rng.randrange(4, 40) for _ in range(rng.randrange(2, 6))]
            n = rng.choice([3, 5, 17, 40])
            batch.append(TrainSample(prompt, [rng.randrange(4, 40) for _ in range(n)],
                                     [-3.5 + 0.1 * rng.random() for _ in range(n)], [0] * n,
                                     advantage=rng.uniform(-1, 1), in_loss=rng.random() > 0.15))
        out.append(batch)
    return out


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM

    root = tmp_path_factory.mktemp("ds")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=40, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, max_position_embeddings=128, tie_word_embeddings=True)
    LlamaForCausalLM(cfg).save_pretrained(str(root / "m"))
    batches = _batches()
    torch.save(batches, root / "samples.pt")
    return root, batches


SETTINGS = dict(learning_rate=1e-2, max_grad_norm=1.0, micro_batch_tokens=120, loss_norm="token", warmup_steps=1)


def _reference(root, batches, settings):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(root / "m"), dtype=torch.float32)
    plain = {k: v for k, v in settings.items() if k not in ("zero_stage", "resume_after")}
    learner = Learner(model, loss=LossSettings(), **plain)
    stats = [learner.train_step(b) for b in batches]
    return learner.weights(), stats


# micro_batch_tokens=120 gives each rank several micro-batches a minibatch in the resumed ZeRO-3 case: ZeRO-3 once
# kept only the last one's gradient (its micro-step only advanced in engine.forward, which the learner bypasses)
CASES = [{"zero_stage": 2}, {"zero_stage": 3, "minibatches": 2, "loss_norm": "sequence"},
         {"zero_stage": 2, "resume_after": 2}, {"zero_stage": 3, "resume_after": 1}]


def test_two_rank_deepspeed_matches_the_single_process_learner(setup):
    """ZeRO-2 (token-normalized) and ZeRO-3 (two minibatches, per-sequence norm), each also resumed from a
    checkpoint by fresh learners part-way, in one two-rank launch."""
    root, batches = setup
    cases = [{**SETTINGS, **case} for case in CASES]
    out = root / "ds.pt"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone",
           str(WORKER), str(root / "m"), str(root / "samples.pt"),
           json.dumps(cases), str(out)]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    results = torch.load(out, weights_only=False)
    assert len(results) == len(cases)
    for settings, result in zip(cases, results):
        assert result["world"] == 2
        expected, ref_stats = _reference(root, batches, settings)
        initial = _reference(root, [], settings)[0]
        moved = max(float((expected[k] - initial[k]).abs().max()) for k in expected)
        assert moved > 1e-2, "the learners must actually move the weights"
        assert set(result["weights"]) == set(expected)
        for k in expected:
            torch.testing.assert_close(result["weights"][k], expected[k], rtol=1e-4, atol=2e-5,
                                       msg=lambda m, k=k, s=settings: f"{s}: {k}: {m}")
        for got, want in zip(result["stats"], ref_stats):
            assert got["loss"] == pytest.approx(want["loss"], rel=1e-4, abs=1e-6)
            # Adam hides a gradient scale error in the weights; the pre-clip norm does not
            assert got["grad_norm"] == pytest.approx(want["grad_norm"], rel=1e-3)
        if "resume_after" in settings:  # DeepSpeed's own per-rank files: each rank's optimizer partition
            ranks = {f"zero_pp_rank_{r}_" for r in range(2)}
            assert all(any(r in f and f.endswith("optim_states.pt") for f in result["files"]) for r in ranks)
    print(f"2 ranks, ZeRO-2 + ZeRO-3, with and without a resume: {time.monotonic() - start:.1f} s")


def test_partial_launcher_environment_is_a_clear_error(monkeypatch):
    from olmorl.trainer.learners._deepspeed import ensure_launcher_env

    for k in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("RANK", "1")
    with pytest.raises(RuntimeError, match="missing: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, LOCAL_RANK"):
        ensure_launcher_env()


def test_a_checkpoint_resumes_only_with_the_learner_that_wrote_it(setup):
    from transformers import AutoModelForCausalLM

    root, _ = setup
    learner = Learner(AutoModelForCausalLM.from_pretrained(str(root / "m")), loss=LossSettings(), learning_rate=1e-3)
    state = {"format": "deepspeed", "world": 2, "zero_stage": 3, "files": {}}
    with pytest.raises(ValueError, match="written by the deepspeed learner; resume it with learner_backend deepspeed"):
        learner.load_training_state(state, learner.weights())
