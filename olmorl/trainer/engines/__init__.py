"""Generation engines: what samples completions for the trainer, with per-token logprobs and policy versions.

Every engine implements `Engine` (`_types`, with the request and result types): it takes `GenerationRequest`s, returns finished `Group`s and accepts new weights between (or during) steps.
`TorchEngine` (`_torch`) is the in-process transformers engine with continuous batching and inflight updates;
`ProcessEngine` (`_process`) runs it in a child process; `engines._server` serves it over HTTP (`olmorl-engine`),
`RemoteEngine` (`_http`) drives one such server and `EnginePool` (`_engine_pool`) several; `VLLMEngine`
(`_vllm`) / `VLLMServerEngine` (`_vllm_server`) use vLLM's RL APIs on GPUs. `_sampling` holds the top-k / top-p rule all of them share. `WeightDtypes` (`_weight_dtypes`) is
what an engine reports of its weights' dtypes, to which every weight sync is cast before it is sent.
"""

from olmorl.trainer.engines._engine_pool import EnginePool
from olmorl.trainer.engines._http import EngineError, RemoteEngine, WeightSyncError
from olmorl.trainer.engines._process import ProcessEngine
from olmorl.trainer.engines._server import EngineServerProcess
from olmorl.trainer.engines._torch import TorchEngine
from olmorl.trainer.engines._types import Completion, Engine, GenerationRequest, Group
from olmorl.trainer.engines._vllm import VLLMEngine
from olmorl.trainer.engines._vllm_server import VLLMServerEngine
from olmorl.trainer.engines._weight_dtypes import WeightDtypes

__all__ = [
    "Completion",
    "Engine",
    "EngineError",
    "EnginePool",
    "EngineServerProcess",
    "GenerationRequest",
    "Group",
    "ProcessEngine",
    "RemoteEngine",
    "TorchEngine",
    "VLLMEngine",
    "VLLMServerEngine",
    "WeightDtypes",
    "WeightSyncError",
]
