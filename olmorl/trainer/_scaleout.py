"""Placement from the one config: which learner (plain torch or DeepSpeed ranks, here or as Ray actors) and which
engines (in-process, a child process, olmorl-engine servers started here, remote engines by address, or Ray
actors: _ray.py).

Start-up waits for every engine with a deadline (`engine_ready_timeout_s`) and names the ones that did not
come up. DeepSpeed ranks are started by the launcher (`torchrun --nproc_per_node N -m olmorl.trainer._cli
--config run.yaml --learner-backend deepspeed`): rank 0 runs the loop, the other ranks follow its calls.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from olmorl.trainer._config import TrainConfig
from olmorl.trainer.learners._plain import Learner
from olmorl.trainer._objective import LossSettings


def build_learner(cfg: TrainConfig, model: torch.nn.Module) -> Learner:
    """This process's learner, or with `ray_learner_ranks` the RayLearner that drives rank actors."""
    if cfg.ray_learner_ranks:
        from olmorl.trainer._ray import RayLearner

        return RayLearner(cfg, model)  # type: ignore[return-value]
    return build_local_learner(cfg, model)


def build_local_learner(cfg: TrainConfig, model: torch.nn.Module) -> Learner:
    kwargs = dict(
        loss=LossSettings(cfg.objective, cfg.eps_low, cfg.eps_high, cfg.tis_cap, cfg.kl_beta),
        learning_rate=cfg.learning_rate, adam_betas=cfg.adam_betas, adam_eps=cfg.adam_eps, weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm, minibatches=cfg.minibatches, micro_batch_tokens=cfg.micro_batch_tokens,
        loss_norm=cfg.loss_norm, loss_constant=cfg.loss_constant or cfg.max_new_tokens,
        temperature=cfg.temperature, logprob_impl=cfg.logprob_impl, logprob_chunk=cfg.logprob_chunk,
        warmup_steps=cfg.warmup_steps, packing=cfg.sequence_packing,
        activation_checkpointing=cfg.activation_checkpointing)
    if cfg.learner_backend == "deepspeed":
        from olmorl.trainer.learners._deepspeed import DeepSpeedLearner

        return DeepSpeedLearner(model, zero_stage=cfg.zero_stage, offload_optimizer=cfg.offload_optimizer, **kwargs)
    return Learner(model, **kwargs)


def is_follower_rank() -> bool:
    """A DeepSpeed rank other than 0: it trains its shares when rank 0 says so, and runs no loop."""
    return int(os.environ.get("RANK", "0")) > 0


def run_follower(cfg: TrainConfig) -> None:
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(cfg.seed)
    model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=torch.float32)
    learner = build_local_learner(cfg, model)
    learner.serve()


def build_remote_engines(cfg: TrainConfig, *, eos_token_id, pad_token_id):
    """An `EnginePool` over `engine_urls` plus `engine_servers` olmorl-engine processes started on loopback."""
    from olmorl.trainer.engines._http import EnginePool, RemoteEngine
    from olmorl.trainer.engines._server import EngineServerProcess

    owned = []
    eos = eos_token_id[0] if isinstance(eos_token_id, (list, tuple)) else eos_token_id
    logs = Path(cfg.output_dir)
    logs.mkdir(parents=True, exist_ok=True)
    for i in range(cfg.engine_servers):
        args = ["--max-new-tokens", str(cfg.max_new_tokens), "--temperature", str(cfg.temperature),
                "--top-k", str(cfg.top_k), "--top-p", str(cfg.top_p),
                "--batch-size", str(cfg.engine_batch_size), "--update-mode", cfg.update_mode,
                "--seed", str(cfg.seed + i), "--dtype", cfg.engine_dtype, "--eos-token-id", str(eos),
                "--pad-token-id", str(pad_token_id)]
        owned.append(EngineServerProcess(cfg.model, log_path=str(logs / f"engine-{i}.log"), extra_args=args,
                                         threads=cfg.torch_threads).start())
    urls = list(cfg.engine_urls) + [p.url for p in owned]
    engines = [RemoteEngine(u, sync_timeout_s=cfg.engine_sync_timeout_s, ready_timeout_s=cfg.engine_ready_timeout_s)
               for u in urls]
    return EnginePool(engines, owned=owned)
