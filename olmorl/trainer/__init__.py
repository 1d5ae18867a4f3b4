"""olmorl.trainer: an async GRPO trainer (OlmoRL objective, continuous batching, inflight weight updates)
that scores completions through an olmorl reward server over HTTP. Needs the `[train]` extra."""

from olmorl.trainer._config import TrainConfig, load_config
from olmorl.trainer._deepspeed import DeepSpeedLearner
from olmorl.trainer._engine import Completion, Engine, GenerationRequest, Group, TorchEngine
from olmorl.trainer._engine_http import EngineError, EnginePool, RemoteEngine, WeightSyncError
from olmorl.trainer._engine_process import ProcessEngine
from olmorl.trainer._engine_server import EngineServerProcess
from olmorl.trainer._learner import Learner, TrainSample, token_logprobs
from olmorl.trainer._loop import Trainer
from olmorl.trainer._objective import LossSettings, group_advantages, k3_kl, per_sequence_token_weight, token_loss_terms
from olmorl.trainer._packing import pack_rows
from olmorl.trainer._vllm import VLLMEngine, VLLMServerEngine

__all__ = [
    "Completion",
    "DeepSpeedLearner",
    "Engine",
    "EngineError",
    "EnginePool",
    "EngineServerProcess",
    "GenerationRequest",
    "Group",
    "Learner",
    "LossSettings",
    "ProcessEngine",
    "RemoteEngine",
    "TorchEngine",
    "TrainConfig",
    "TrainSample",
    "Trainer",
    "VLLMEngine",
    "VLLMServerEngine",
    "WeightSyncError",
    "group_advantages",
    "k3_kl",
    "load_config",
    "pack_rows",
    "per_sequence_token_weight",
    "token_logprobs",
    "token_loss_terms",
]
