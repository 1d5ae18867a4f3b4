"""Building this process's learner from the one config: the plain torch learner, or a DeepSpeed rank.
(Placement across Ray actors is `olmorl.trainer._scaleout.build_learner`, which calls this for local ranks.)"""

from __future__ import annotations

from typing import TypedDict

import torch

from olmorl.trainer._config import TrainConfig
from olmorl.trainer._lora import wrap_policy
from olmorl.trainer._objective import LossSettings
from olmorl.trainer.learners._plain import Learner


class _LearnerArgs(TypedDict):
    """The keyword arguments the plain and the DeepSpeed learner share."""

    loss: LossSettings
    learning_rate: float
    adam_betas: tuple[float, float]
    adam_eps: float
    weight_decay: float
    max_grad_norm: float
    minibatches: int
    micro_batch_tokens: int
    loss_norm: str
    loss_constant: float | None
    temperature: float
    logprob_impl: str
    logprob_chunk: int
    warmup_steps: int
    packing: bool
    activation_checkpointing: bool


def build_local_learner(cfg: TrainConfig, model: torch.nn.Module) -> Learner:
    kwargs = _LearnerArgs(
        loss=LossSettings(cfg.objective, cfg.eps_low, cfg.eps_high, cfg.tis_cap, cfg.kl_beta, cfg.sapo_tau_pos,
                          cfg.sapo_tau_neg),
        learning_rate=cfg.learning_rate, adam_betas=cfg.adam_betas, adam_eps=cfg.adam_eps, weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm, minibatches=cfg.minibatches, micro_batch_tokens=cfg.micro_batch_tokens,
        loss_norm=cfg.loss_norm, loss_constant=cfg.loss_constant or cfg.max_new_tokens,
        temperature=cfg.temperature, logprob_impl=cfg.logprob_impl, logprob_chunk=cfg.logprob_chunk,
        warmup_steps=cfg.warmup_steps, packing=cfg.sequence_packing,
        activation_checkpointing=cfg.activation_checkpointing)
    if cfg.device != "auto":  # resolved at start (_device.resolve_device); adapters are made on the base's device
        model.to(cfg.device)
    if cfg.lora_rank:  # the config allows it with the plain learner only
        model = wrap_policy(model, cfg.lora_rank, cfg.lora_alpha, cfg.lora_target_modules, cfg.lora_dropout)
    if cfg.learner_backend == "deepspeed":
        from olmorl.trainer.learners._deepspeed import DeepSpeedLearner

        return DeepSpeedLearner(model, zero_stage=cfg.zero_stage, offload_optimizer=cfg.offload_optimizer, **kwargs)
    mixed = cfg.learner_dtype == "bfloat16_mixed"  # the config allows it with the plain learner only
    if cfg.distill_loss != "sampled":  # a full-vocabulary KL term: likewise
        return Learner(model, mixed_precision=mixed, distill_loss=cfg.distill_loss, distill_weight=cfg.distill_weight,
                       **kwargs)
    return Learner(model, mixed_precision=mixed, **kwargs)
