"""Learners: what turns scored groups into a policy update with OlmoRL's objective (`olmorl.trainer._objective`).

`Learner` (`_plain`) is the single-process learner (chunked logprob head, optional activation checkpointing);
`DeepSpeedLearner` (`_deepspeed`) runs the same loss under ZeRO 0-3 across ranks with global token normalization;
`_packing` packs rows into block-causal sequences for either of them.
"""

from olmorl.trainer.learners._deepspeed import DeepSpeedLearner
from olmorl.trainer.learners._packing import pack_rows
from olmorl.trainer.learners._plain import Learner, TrainSample, token_logprobs

__all__ = ["DeepSpeedLearner", "Learner", "TrainSample", "pack_rows", "token_logprobs"]
