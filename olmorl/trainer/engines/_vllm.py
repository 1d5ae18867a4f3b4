"""vLLM engines behind the loop's `Engine` interface (`pip install olmorl[vllm]`; CUDA only).

UNVERIFIED: vLLM ships CUDA-only wheels and cannot run on the machines this was written on; the code
follows vLLM's documented RL surface (0.16+) and is exercised by the shared engine contract tests
(`tests/test_trainer_engine_contract.py`) wherever vLLM and a GPU are present.

* `VLLMEngine` (here): `vllm.v1.engine.async_llm.AsyncLLM` in this process (its engine core runs in its own
  process). Continuous batching = one `AsyncLLM.generate` task per prompt.
* `VLLMServerEngine` (`_vllm_server`): a remote `vllm serve`, the same steps over its HTTP routes.

What both share is here: the trainer's end of the NCCL weight transfer (`NcclSender`), the update's
description (`weight_update_info`) and the bookkeeping of streamed groups (`Streams`).

Weight sync (both): `pause_generation(mode="keep", clear_cache=False)` (running requests freeze and keep
their KV cache: OlmoRL/PipelineRL inflight updates) -> `start_weight_update` -> `update_weights` while the
trainer broadcasts over NCCL (`NCCLWeightTransferEngine.trainer_send_weights`) -> `finish_weight_update`
-> `reset_prefix_cache` -> `resume_generation`. Each step has a deadline; a missed one raises
`WeightSyncError`. Logprobs are vLLM's processed logprobs (after temperature and top-k/top-p, renormalized:
the distribution actually sampled from), the behaviour policy for truncated importance sampling, as with
`TorchEngine`. `top_k=0` means off: vLLM >= 0.9 (PR #17773) documents 0 as "disabled" and still accepts -1,
older versions only -1. Versions per token are stamped as tokens stream back.

A LoRA policy's updates (`AdapterWeights`) take vLLM's LoRA request path instead: only the adapter travels,
as a PEFT adapter directory (`_vllm_lora.py`, also unverified).
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
from typing import TYPE_CHECKING, Any, Mapping

import torch

from olmorl.trainer.engines._types import Completion, GenerationRequest, Group, take_groups
from olmorl.trainer._lora import AdapterWeights
from olmorl.trainer.engines._http import EngineError, WeightSyncError, weights_dir
from olmorl.trainer.engines._sampling import check_sampling
from olmorl.trainer.engines._vllm_lora import AdapterVersions

if TYPE_CHECKING:
    from vllm.v1.engine.async_llm import AsyncLLM

VLLM_MISSING = ("vLLM is not installed: `pip install olmorl[vllm]` on a CUDA machine (vLLM ships CUDA-only "
                "wheels; it cannot run on CPU-only hosts)")


def require_vllm():
    try:
        import vllm  # noqa: F401
    except ImportError as exc:
        raise ImportError(VLLM_MISSING) from exc
    return vllm


class NcclSender:
    """The trainer's end of vLLM's NCCL weight-transfer group (rank 0; the engines' workers follow)."""

    def __init__(self) -> None:
        self.group = None

    def init(self, master_address: str, master_port: int, world_size: int) -> None:
        from vllm.distributed.weight_transfer.nccl_engine import NCCLWeightTransferEngine

        self.group = NCCLWeightTransferEngine.trainer_init(
            {"master_address": master_address, "master_port": master_port, "world_size": world_size})

    def send(self, weights: Mapping[str, torch.Tensor]) -> None:
        from vllm.distributed.weight_transfer.nccl_engine import NCCLTrainerSendWeightsArgs, NCCLWeightTransferEngine

        device = torch.device("cuda", torch.cuda.current_device())
        NCCLWeightTransferEngine.trainer_send_weights(
            ((name, t.to(device, non_blocking=True)) for name, t in weights.items()),
            NCCLTrainerSendWeightsArgs(group=self.group, packed=True))


def weight_update_info(weights: Mapping[str, torch.Tensor]) -> dict[str, Any]:
    return {"names": list(weights), "dtype_names": [str(t.dtype).removeprefix("torch.") for t in weights.values()],
            "shapes": [list(t.shape) for t in weights.values()], "packed": True}


class Streams:
    """Bookkeeping shared by both vLLM engines: per-token versions as tokens arrive, finished groups out."""

    def __init__(self) -> None:
        self.version = 0
        self.out: queue.Queue[Group] = queue.Queue()
        self.in_flight = 0
        self.error: BaseException | None = None
        self.tokens = 0

    def check(self) -> None:
        if self.error is not None:
            raise EngineError(f"vLLM engine failed: {self.error}") from self.error

    def get_groups(self, timeout: float | None) -> list[Group]:
        self.check()
        return take_groups(self.out, timeout)


class StreamedEngine:
    """What both vLLM engines answer alike from their `Streams`."""

    streams: Streams

    def submit(self, requests: list[GenerationRequest]) -> None:
        self.streams.check()
        self.streams.in_flight += len(requests)
        for req in requests:
            self._launch(req)

    def _launch(self, req: GenerationRequest) -> None:
        """Start generating `req` in the background; its group goes to `streams`."""
        raise NotImplementedError

    @property
    def version(self) -> int:
        return self.streams.version

    @version.setter
    def version(self, value: int) -> None:
        self.streams.version = value

    def get_groups(self, timeout: float | None = None) -> list[Group]:
        return self.streams.get_groups(timeout)

    @property
    def in_flight_groups(self) -> int:
        return self.streams.in_flight

    def stats(self) -> dict[str, float]:
        return {"tokens": float(self.streams.tokens), "idle_s": 0.0, "kv_stale_tokens": 0.0}

    def get_rng_state(self) -> None:
        return None  # vLLM samples with per-request seeds (seed + request counter); nothing else to save

    def set_rng_state(self, state: Any) -> None:
        pass


class VLLMEngine(StreamedEngine):
    """AsyncLLM in-process; its event loop runs on a background thread."""

    def __init__(self, model: str, *, max_new_tokens: int, temperature: float = 1.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int = 0, sync_timeout_s: float = 300.0, nccl_port: int = 29555,
                 **engine_args: Any) -> None:
        require_vllm()
        check_sampling(temperature, top_k, top_p)
        self.model, self.max_new_tokens, self.temperature, self.seed = model, max_new_tokens, temperature, seed
        self.top_k, self.top_p = top_k, top_p
        self.sync_timeout_s, self.nccl_port = sync_timeout_s, nccl_port
        self.engine_args = {"weight_transfer_config": {"backend": "nccl"}, "logprobs_mode": "processed_logprobs",
                            "enable_prefix_caching": False, **engine_args}
        self.streams = Streams()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="olmorl-vllm")
        self.llm: AsyncLLM | None = None  # set by start()
        self.sender = NcclSender()
        self.ids = itertools.count()
        self.adapters: AdapterVersions | None = None  # a LoRA policy's adapter versions (from its first update)

    def _run(self, coro, timeout: float | None = None):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    @property
    def _started(self) -> AsyncLLM:
        if self.llm is None:
            raise EngineError("the vLLM engine is not started: call start() first")
        return self.llm

    def start(self) -> None:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        self.thread.start()

        async def build():
            return AsyncLLM.from_engine_args(AsyncEngineArgs(model=self.model, **self.engine_args))

        self.llm = self._run(build(), timeout=self.sync_timeout_s)

    def stop(self) -> None:
        if self.llm is not None:
            self.llm.shutdown()
        self.loop.call_soon_threadsafe(self.loop.stop)
        if self.adapters is not None:
            self.adapters.close()

    def _launch(self, req: GenerationRequest) -> None:
        asyncio.run_coroutine_threadsafe(self._generate(req), self.loop)

    async def _generate(self, req: GenerationRequest) -> None:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        adapter = self.adapters.acquire() if self.adapters is not None else None
        try:
            params = SamplingParams(n=req.n, temperature=self.temperature, top_p=self.top_p, top_k=self.top_k,
                                    logprobs=0,
                                    max_tokens=req.max_new_tokens or self.max_new_tokens, ignore_eos=req.ignore_eos,
                                    seed=self.seed + next(self.ids))
            submitted = self.version
            versions: dict[int, list[int]] = {}
            final = None
            lora = self.adapters.lora_request(adapter) if self.adapters is not None and adapter is not None else None
            async for output in self._started.generate(TokensPrompt(prompt_token_ids=list(req.prompt_ids)), params,
                                                  request_id=f"olmorl-{next(self.ids)}", lora_request=lora):
                for c in output.outputs:  # cumulative outputs: stamp the tokens that are new since last time
                    seen = versions.setdefault(c.index, [])
                    # a LoRA request generates with the adapter it was submitted with, to its end
                    seen.extend([self.version if adapter is None else adapter] * (len(c.token_ids) - len(seen)))
                final = output
            if final is None:
                raise EngineError(f"vLLM returned no output for request {req.request_id}")
            completions = []
            for c in sorted(final.outputs, key=lambda c: c.index):
                logprobs = [step[tok].logprob for step, tok in zip(c.logprobs, c.token_ids)]
                completions.append(Completion(list(c.token_ids), logprobs, versions[c.index],
                                              "length" if c.finish_reason == "length" else "stop"))
                self.streams.tokens += len(c.token_ids)
            self.streams.out.put(Group(req.request_id, list(req.prompt_ids), completions, req.meta, submitted))
        except BaseException as exc:
            self.streams.error = exc
        finally:
            self.streams.in_flight -= 1
            if self.adapters is not None:
                self.adapters.release(adapter)
                await self._retire_adapters()

    async def _load_adapter(self, weights: AdapterWeights, version: int) -> None:
        if self.adapters is None:
            self.adapters = AdapterVersions(weights_dir())
        self.adapters.write(weights, version)
        await self._started.add_lora(self.adapters.lora_request(version))  # requests submitted from now on use it
        self.version = version
        await self._retire_adapters()

    async def _retire_adapters(self) -> None:
        for version in self.adapters.retired() if self.adapters is not None else []:
            await self._started.remove_lora(version + 1)

    async def _sync(self, weights: Mapping[str, torch.Tensor], version: int) -> None:
        from vllm.distributed.weight_transfer.base import WeightTransferInitRequest, WeightTransferUpdateRequest

        llm = self._started
        if self.sender.group is None:  # once: the trainer is rank 0, the engine's workers follow
            world = 1 + llm.vllm_config.parallel_config.world_size
            init = llm.init_weight_transfer_engine(WeightTransferInitRequest(init_info={
                "master_address": "127.0.0.1", "master_port": self.nccl_port, "rank_offset": 1, "world_size": world}))
            await asyncio.gather(init, asyncio.to_thread(self.sender.init, "127.0.0.1", self.nccl_port, world))
        await llm.pause_generation(mode="keep", clear_cache=False)
        try:
            await llm.start_weight_update()
            await asyncio.gather(llm.update_weights(WeightTransferUpdateRequest(update_info=weight_update_info(weights))),
                                 asyncio.to_thread(self.sender.send, weights))
            await llm.finish_weight_update()
            await llm.reset_prefix_cache()
            self.version = version
        finally:
            await llm.resume_generation()

    def update_weights(self, weights: Mapping[str, torch.Tensor], version: int, wait: bool = True) -> None:
        sync = self._load_adapter(weights, version) if isinstance(weights, AdapterWeights) else self._sync(weights, version)
        try:
            self._run(asyncio.wait_for(sync, self.sync_timeout_s), self.sync_timeout_s + 5)
        except (asyncio.TimeoutError, TimeoutError) as exc:
            raise WeightSyncError(f"vLLM weight sync to version {version} missed its {self.sync_timeout_s:g} s "
                                  "deadline (NCCL has no timeout of its own: restart the engine)") from exc

    def pause(self, mode: str = "keep") -> None:
        self._run(self._started.pause_generation(mode=mode, clear_cache=False), self.sync_timeout_s)

    def resume(self) -> None:
        self._run(self._started.resume_generation(), self.sync_timeout_s)
