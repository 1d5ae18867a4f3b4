"""Placement from the one config: which learner (plain torch or DeepSpeed ranks, here or as Ray actors) and which
engines (in-process, a child process, olmorl-engine servers started here, remote engines by address, or Ray
actors: _ray.py).

Start-up waits for every engine with a deadline (`engine_ready_timeout_s`) and names the ones that did not
come up. DeepSpeed ranks are started by the launcher (`torchrun --nproc_per_node N -m olmorl.trainer._cli
--config run.yaml --learner-backend deepspeed`): rank 0 runs the loop, the other ranks follow its calls.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import TYPE_CHECKING, cast

import torch

from olmorl.trainer._config import TrainConfig
from olmorl.trainer.engines._types import Engine
from olmorl.trainer.learners._build import build_local_learner
from olmorl.trainer.learners._plain import Learner

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def build_learner(cfg: TrainConfig, model: torch.nn.Module) -> Learner:
    """This process's learner, or with `ray_learner_ranks` the RayLearner that drives rank actors."""
    if cfg.ray_learner_ranks:
        from olmorl.trainer._ray import RayLearner

        return RayLearner(cfg, model)  # type: ignore[return-value]
    return build_local_learner(cfg, model)


def build_engine(cfg: TrainConfig, model: torch.nn.Module, tokenizer) -> Engine:
    """The engines the loop samples from, as one `Engine`: Ray actors, HTTP engines (remote or started here), a
    child process, or (default) a transformers engine in this process on its own copy of `model`."""
    eos = cast("PreTrainedModel", model).generation_config.eos_token_id or tokenizer.eos_token_id  # an HF model
    engine_kwargs = dict(eos_token_id=eos, pad_token_id=tokenizer.pad_token_id,
                         max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature,
                         top_k=cfg.top_k, top_p=cfg.top_p,
                         max_batch_size=cfg.engine_batch_size, continuous=cfg.continuous_batching,
                         update_mode=cfg.update_mode, seed=cfg.seed)
    if cfg.ray_engines:  # engine actors on a Ray cluster, weights through its object store
        from olmorl.trainer._ray import build_ray_engines

        return build_ray_engines(cfg, model, engine_kwargs)  # type: ignore[return-value]
    if cfg.engine_urls or cfg.engine_servers:  # engines in other processes / machines, over HTTP
        return build_remote_engines(cfg, eos_token_id=eos, pad_token_id=tokenizer.pad_token_id)
    if cfg.engine_process:
        from olmorl.trainer.engines._process import ProcessEngine

        return ProcessEngine(cfg.model, dtype=cfg.engine_dtype, threads=cfg.torch_threads,  # type: ignore[return-value]
                             **engine_kwargs)
    from olmorl.trainer.engines._torch import TorchEngine

    if cfg.learner_backend == "deepspeed":  # ZeRO hooks and partitions must not follow the engine's copy
        from transformers import AutoModelForCausalLM

        engine_model: torch.nn.Module = AutoModelForCausalLM.from_pretrained(
            cfg.model, dtype=getattr(torch, cfg.engine_dtype))
    else:
        engine_model = copy.deepcopy(model).to(getattr(torch, cfg.engine_dtype))
    if cfg.device != "auto":  # resolved at start (_device.resolve_device)
        engine_model.to(cfg.device)
    return TorchEngine(engine_model, **engine_kwargs)  # type: ignore[return-value]


def is_follower_rank() -> bool:
    """A DeepSpeed rank other than 0: it trains its shares when rank 0 says so, and runs no loop."""
    return int(os.environ.get("RANK", "0")) > 0


def run_follower(cfg: TrainConfig) -> None:
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(cfg.seed)
    from olmorl.trainer.learners._deepspeed import follow_leader

    model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=torch.float32)
    follow_leader(build_local_learner(cfg, model))


def build_remote_engines(cfg: TrainConfig, *, eos_token_id, pad_token_id):
    """An `EnginePool` over `engine_urls` plus `engine_servers` olmorl-engine processes started on loopback."""
    from olmorl.trainer.engines._engine_pool import EnginePool
    from olmorl.trainer.engines._http import RemoteEngine
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
