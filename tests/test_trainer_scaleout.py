"""The training loop scaled out on CPU: generation on two olmorl-engine processes over HTTP (one started by the
test and passed by address, one started from the config), and the DeepSpeed learner as two torchrun ranks."""

import json
import os
import subprocess
import sys

import httpx
import pytest
from _biased_model import answer_rows, build_biased_model

from olmorl.trainer import TrainConfig, Trainer
from olmorl.trainer.engines._http import wait_ready
from olmorl.trainer.engines._server import EngineServerProcess

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    root = tmp_path_factory.mktemp("scaleout")
    build_biased_model(root / "model", p_one=0.7)  # "1" 70 %: groups of 4 mostly carry a learning signal
    rows = answer_rows(["1", "2"] * 16)
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _config(task, out, **kw):
    base = dict(model=str(task / "model"), train_files=(str(task / "train.jsonl"),), output_dir=str(out),
                group_size=4, prompts_per_step=4, max_new_tokens=1, learning_rate=1e-2, total_steps=3,
                torch_threads=1, tensorboard=False, async_steps=1)
    base.update(kw)
    return TrainConfig(**base)


def test_loop_generates_on_two_engine_processes_and_pushes_every_version(task, tmp_path, reward_server):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(task / "model"))
    outside = EngineServerProcess(str(task / "model"), log_path=str(tmp_path / "outside.log"),
                                  extra_args=["--max-new-tokens", "1", "--eos-token-id", str(tok.eos_token_id),
                                              "--pad-token-id", str(tok.pad_token_id)]).start()
    try:
        wait_ready([outside.url], 120)
        cfg = _config(task, tmp_path / "run", reward_urls=(reward_server(),), engine_urls=(outside.url,),
                      engine_servers=1, engine_sync_timeout_s=30.0)
        trainer = Trainer(cfg)
        history = trainer.run()
        assert len(history) == 3 and all(h.get("skipped") is None for h in history)
        assert sum(h["groups_trained"] for h in history) > 0
        health = httpx.get(outside.url + "/health").json()
        assert health["version"] == 3 and health["syncs"] == 3  # every step's weights reached it, in order
        assert health["stats"]["tokens"] > 0  # and it generated part of the groups
        assert (tmp_path / "run" / "engine-0.log").exists()  # the config-started engine ran (stopped by now)
        assert trainer.engine.owned[0].process.poll() is not None
    finally:
        outside.stop()


def test_cli_trains_with_a_two_rank_deepspeed_learner(task, tmp_path, reward_server):
    pytest.importorskip("deepspeed", reason="the [deepspeed] extra is not installed (scripts/test installs it)")

    url = reward_server()
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone",
           "-m", "olmorl.trainer._cli", "--model", str(task / "model"),
           "--train-files", f"[{task / 'train.jsonl'}]", "--output-dir", str(tmp_path / "ds"), "--group-size", "4",
           "--prompts-per-step", "4", "--max-new-tokens", "1", "--learning-rate", "0.01", "--total-steps", "2",
           "--tensorboard", "false", "--reward-urls", f"[{url}]", "--learner-backend", "deepspeed",
           "--zero-stage", "3", "--sequence-packing", "true"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    records = [json.loads(line) for line in (tmp_path / "ds" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2] and all("loss" in r for r in records)
