"""Building this process's learner from the one config: the plain torch learner, or a DeepSpeed rank.
(Placement across Ray actors is `olmorl.trainer._scaleout.build_learner`, which calls this for local ranks.)"""

from __future__ import annotations

import torch

from olmorl.trainer._config import TrainConfig
from olmorl.trainer._lora import wrap_policy
from olmorl.trainer._objective import LossSettings
from olmorl.trainer.learners._plain import Learner


def build_local_learner(cfg: TrainConfig, model: torch.nn.Module) -> Learner:
    kwargs = dict(
        loss=LossSettings(cfg.objective, cfg.eps_low, cfg.eps_high, cfg.tis_cap, cfg.kl_beta, cfg.sapo_tau_pos,
                          cfg.sapo_tau_neg),
        learning_rate=cfg.learning_rate, adam_betas=cfg.adam_betas, adam_eps=cfg.adam_eps, weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm, minibatches=cfg.minibatches, micro_batch_tokens=cfg.micro_batch_tokens,
        loss_norm=cfg.loss_norm, loss_constant=cfg.loss_constant or cfg.max_new_tokens,
        temperature=cfg.temperature, logprob_impl=cfg.logprob_impl, logprob_chunk=cfg.logprob_chunk,
        warmup_steps=cfg.warmup_steps, packing=cfg.sequence_packing,
        activation_checkpointing=cfg.activation_checkpointing)
    if cfg.distill_loss != "sampled":  # a full-vocabulary KL term: the config allows it with the plain learner only
        kwargs.update(distill_loss=cfg.distill_loss, distill_weight=cfg.distill_weight)
    if cfg.learner_dtype == "bfloat16_mixed":  # the config allows it with the plain learner only
        kwargs.update(mixed_precision=True)
    if cfg.device != "auto":  # resolved at start (_device.resolve_device); adapters are made on the base's device
        model.to(cfg.device)
    if cfg.lora_rank:  # the config allows it with the plain learner only
        model = wrap_policy(model, cfg.lora_rank, cfg.lora_alpha, cfg.lora_target_modules, cfg.lora_dropout)
    if cfg.learner_backend == "deepspeed":
        from olmorl.trainer.learners._deepspeed import DeepSpeedLearner

        return DeepSpeedLearner(model, zero_stage=cfg.zero_stage, offload_optimizer=cfg.offload_optimizer, **kwargs)
    return Learner(model, **kwargs)
