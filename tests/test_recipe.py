"""The GPU recipe (examples/olmo3_7b_vllm), which cannot run here: its config loads into TrainConfig with
OlmoRL's published values, and its launch script calls the real APIs with arguments they accept."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from olmorl.trainer._config import load_config
from olmorl.trainer.engines import VLLMServerEngine

RECIPE = Path(__file__).resolve().parent.parent / "examples" / "olmo3_7b_vllm"


def test_config_loads_with_olmorl_values():
    cfg = load_config(RECIPE / "run.yaml")  # unknown keys or invalid values raise
    assert (cfg.group_size, cfg.prompts_per_step, cfg.learning_rate) == (8, 64, 1e-6)
    assert (cfg.eps_low, cfg.eps_high, cfg.tis_cap, cfg.kl_beta) == (0.2, 0.272, 2.0, 0.0)
    assert (cfg.objective, cfg.advantage_norm, cfg.max_new_tokens, cfg.async_steps) == ("olmorl", "centered", 32768, 8)
    assert cfg.active_sampling and cfg.inflight_updates and cfg.learner_backend == "deepspeed"


def test_launch_script_uses_the_engine_signature():
    tree = ast.parse((RECIPE / "train.py").read_text())
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "VLLMServerEngine")
    accepted = inspect.signature(VLLMServerEngine.__init__).parameters
    assert {kw.arg for kw in call.keywords} <= set(accepted)
    readme = (RECIPE / "README.md").read_text()
    # the engine flags VLLMServerEngine documents: dev-mode routes, NCCL weight transfer, the behaviour logprobs
    for flag in ("VLLM_SERVER_DEV_MODE=1", "--weight-transfer-config '{\"backend\": \"nccl\"}'",
                 "--logprobs-mode processed_logprobs"):
        assert flag in readme and flag in inspect.getdoc(inspect.getmodule(VLLMServerEngine)), flag
