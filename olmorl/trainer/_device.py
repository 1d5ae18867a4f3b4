"""Where this process's torch models run: `device` resolved once at start (auto -> cuda when there is one)."""

from __future__ import annotations

import contextlib
import dataclasses

import torch

from olmorl.trainer._config import TrainConfig


def resolve_device(config: TrainConfig) -> TrainConfig:
    """The config with `device` auto replaced by cpu or cuda; ValueError when cuda is asked for and absent.

    auto picks cuda only for the in-process engine and plain learner: the other placements (Ray actors, engine
    servers, a child-process engine, DeepSpeed ranks) place their own models."""
    cuda = torch.cuda.is_available()
    if config.device == "cuda" and not cuda:
        raise ValueError("device cuda: torch.cuda.is_available() is False here (no GPU, or a CPU-only torch); "
                         "use device cpu or auto")
    if config.device != "auto":
        return config
    local = not (config.ray_engines or config.ray_learner_ranks or config.engine_servers or config.engine_process
                 or config.learner_backend == "deepspeed")
    return dataclasses.replace(config, device="cuda" if cuda and local else "cpu")


def autocast_bf16(device: torch.device, enabled: bool) -> contextlib.AbstractContextManager:
    """bf16 autocast on `device` when `enabled` (mixed precision: the weights stay fp32), else nothing."""
    if not enabled:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
