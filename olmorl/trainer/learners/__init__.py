"""Learners: what turns scored groups into a policy update with OlmoRL's objective (`olmorl.trainer._objective`).

`Learner` (`_plain`) is the single-process learner (chunked logprob head, optional activation checkpointing);
`DeepSpeedLearner` (`_deepspeed`) runs the same loss under ZeRO 0-3 across ranks with global token normalization;
`_packing` packs rows into block-causal sequences for either of them; `build_local_learner` (`_build`) makes
the one the config names.
"""

from olmorl.trainer.learners._build import build_local_learner
from olmorl.trainer.learners._deepspeed import DeepSpeedLearner
from olmorl.trainer.learners._packing import pack_rows
from olmorl.trainer.learners._plain import Learner, token_logprobs
from olmorl.trainer.learners._samples import TrainSample

__all__ = ["DeepSpeedLearner", "Learner", "TrainSample", "build_local_learner", "pack_rows", "token_logprobs"]
