"""olmorl.trainer: an async GRPO trainer (OlmoRL objective, continuous batching, inflight weight updates)
that scores completions through an olmorl reward server over HTTP. Needs the `[train]` extra.

Where things are: the loop reads top to bottom in `_loop.py` (settings: `_config.TrainConfig`; loss: `_objective.py`;
rewards over HTTP: `_rewards.py`); generation engines live in `engines/`, learners in `learners/`; `_scaleout.py`
places them (engine processes and servers, DeepSpeed ranks) from the config. Multi-turn, tool-using rollouts
(rows with `env`, `task`): `_multiturn.py` drives them over sessions (`_sessions.py`) in the chat template's
tool-call format (`_toolcalls.py`). LoRA policies and their adapter-only weight sync: `_lora.py`. On-policy
distillation from a teacher: `_distill.py`."""

from olmorl.trainer._config import TrainConfig, load_config
from olmorl.trainer._distill import LocalTeacher, RemoteTeacher, TeacherError
from olmorl.trainer._lora import AdapterWeights, LoraSpec
from olmorl.trainer._loop import Trainer
from olmorl.trainer._multiturn import MultiTurnEngine, RolloutLimits
from olmorl.trainer._sessions import RolloutError, SessionCalls
from olmorl.trainer._toolcalls import HermesToolCalls, ToolCall, ToolCallParser, ToolChat
from olmorl.trainer._objective import (OBJECTIVES, LossSettings, group_advantages, k3_kl, per_sequence_token_weight,
                                       token_loss_terms)
from olmorl.trainer.engines import (Completion, Engine, EngineError, EnginePool, EngineServerProcess, GenerationRequest,
                                    Group, ProcessEngine, RemoteEngine, TorchEngine, VLLMEngine, VLLMServerEngine,
                                    WeightSyncError)
from olmorl.trainer.learners import DeepSpeedLearner, Learner, TrainSample, pack_rows, token_logprobs

__all__ = [
    "AdapterWeights",
    "Completion",
    "DeepSpeedLearner",
    "Engine",
    "EngineError",
    "EnginePool",
    "EngineServerProcess",
    "GenerationRequest",
    "Group",
    "HermesToolCalls",
    "Learner",
    "LocalTeacher",
    "LoraSpec",
    "LossSettings",
    "MultiTurnEngine",
    "OBJECTIVES",
    "ProcessEngine",
    "RemoteEngine",
    "RemoteTeacher",
    "RolloutError",
    "RolloutLimits",
    "SessionCalls",
    "TeacherError",
    "ToolCall",
    "ToolCallParser",
    "ToolChat",
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
