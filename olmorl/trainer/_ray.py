"""olmorl-train on a Ray cluster ([ray] extra): engines and learner ranks as Ray actors.

`ray_address` connects the trainer (the driver: the loop, the data, the reward client) to a cluster.
`ray_engines` transformers engines (`TorchEngine`, engines/_torch.py) each run in an actor of their own
and sit behind the same `EnginePool` the HTTP engines use (least-loaded submission, one version to all).
`ray_learner_ranks` learner ranks run in actors of a placement group: one rank is the plain learner, several
are DeepSpeed ranks (`learner_backend: deepspeed`), wired over torch.distributed (gloo on CPU) exactly as
under torchrun: rank 0 trains and leads, the others follow its calls (learners/_deepspeed.py).

No shared filesystem: every actor builds its model from the model's config object and loads the driver's
initial weights from Ray's object store; each weight version is put in the object store once (cast to the
dtypes the engine actors report) and every engine loads it from there. A sync is versioned and
deadline-bound (`engine_sync_timeout_s`); an engine that fails or misses the deadline is named in the
WeightSyncError.
Checkpoints are written by the driver: rank 0 gathers every rank's DeepSpeed files and resuming sends each
rank its own, so checkpoint and resume need no shared filesystem either (ZeRO 0-3).
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from typing import Any, Mapping

import ray
import torch
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from olmorl.trainer._config import TrainConfig
from olmorl.trainer._lora import same_kind
from olmorl.trainer.engines._engine_pool import EnginePool
from olmorl.trainer.engines._http import EngineError, WeightSyncError
from olmorl.trainer.engines._torch import TorchEngine
from olmorl.trainer.engines._types import GenerationRequest, Group
from olmorl.trainer.engines._weight_dtypes import WeightDtypes, payload_bytes

log = logging.getLogger("olmorl.trainer")


def connect(cfg: TrainConfig) -> None:
    if not ray.is_initialized():
        ray.init(address=cfg.ray_address, log_to_driver=False)


def to_object_store(weights: Mapping[str, torch.Tensor]) -> dict[str, tuple[Any, str]]:
    """Weights as numpy arrays (with their torch dtype): Ray stores numpy buffers out of band and a reader
    on the same node maps them from shared memory, where pickled tensors are copied on every read.
    numpy has no bfloat16: those travel as int16 bits."""
    out = {}
    for name, tensor in weights.items():
        tensor = tensor.detach().cpu().contiguous()
        carrier = tensor.view(torch.int16) if tensor.dtype == torch.bfloat16 else tensor
        out[name] = (carrier.numpy(), str(tensor.dtype).removeprefix("torch."))
    return same_kind(weights, out)  # an adapter update keeps its LoRA spec


def from_object_store(payload: Mapping[str, tuple[Any, str]]) -> dict[str, torch.Tensor]:
    """The tensors of `to_object_store`, still backed by the (read-only) shared memory: copy before writing."""
    with warnings.catch_warnings():  # torch warns that the arrays are read-only; nothing writes them
        warnings.simplefilter("ignore", UserWarning)
        return same_kind(payload, {name: torch.from_numpy(array).view(getattr(torch, dtype))
                                   for name, (array, dtype) in payload.items()})


def _build_model(model_config: Any, weights: Mapping[str, torch.Tensor], dtype: torch.dtype) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_config(model_config, dtype=torch.float32)
    model.load_state_dict(dict(weights))
    return model.to(dtype)


# -- engines ---------------------------------------------------------------------------------------------------
class EngineActor:
    """One TorchEngine in its own Ray actor process."""

    def __init__(self, model_config: Any, weights: Mapping[str, torch.Tensor], dtype: str, threads: int,
                 engine_kwargs: dict[str, Any]) -> None:
        torch.set_num_threads(threads)
        self.engine = TorchEngine(_build_model(model_config, weights, getattr(torch, dtype)), **engine_kwargs)
        self.syncs = 0

    def start(self) -> str:
        self.engine.start()
        return ray.get_runtime_context().get_node_id()

    def stop(self) -> None:
        self.engine.stop()

    def submit(self, requests: list[GenerationRequest]) -> None:
        self.engine.submit(requests)

    def get_groups(self) -> list[Group]:
        return self.engine.get_groups(0)

    def load(self, payload: Mapping[str, tuple[Any, str]], version: int) -> int:
        self.engine.update_weights(from_object_store(payload), version, wait=True)  # loaded from shared memory
        self.engine.version = version
        self.syncs += 1
        return version

    def health(self) -> dict[str, Any]:
        return {"version": self.engine.version, "syncs": self.syncs, "stats": self.engine.stats()}

    def weight_dtypes(self) -> WeightDtypes:
        return self.engine.weight_dtypes

    def pause(self) -> None:
        self.engine.pause()

    def resume(self) -> None:
        self.engine.resume()

    def stats(self) -> dict[str, float]:
        return self.engine.stats()

    def get_rng_state(self) -> torch.Tensor:
        return self.engine.get_rng_state()

    def set_rng_state(self, state: torch.Tensor) -> None:
        self.engine.set_rng_state(state)


class RayEngine:
    """The driver's handle on one engine actor, with the per-engine interface EnginePool drives."""

    def __init__(self, actor: Any, name: str, ready_timeout_s: float) -> None:
        self.actor, self.url = actor, name  # `url` is how EnginePool names an engine in its errors
        self.ready_timeout_s = ready_timeout_s
        self.version = 0
        self._in_flight = 0  # counted here: no round trip per submission
        self._weight_dtypes: WeightDtypes | None = None

    @property
    def weight_dtypes(self) -> WeightDtypes:
        """The actor's model's weight dtypes (asked once), which the driver casts each sync to before `ray.put`."""
        if self._weight_dtypes is None:
            self._weight_dtypes = self._get(self.actor.weight_dtypes.remote(), self.ready_timeout_s)
        return self._weight_dtypes

    def _get(self, ref: Any, timeout: float | None = None) -> Any:
        try:
            return ray.get(ref, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise EngineError(f"engine {self.url} did not answer within {timeout:g} s") from None
        except ray.exceptions.RayError as exc:
            raise EngineError(f"engine {self.url} failed: {exc}") from exc

    def start(self) -> None:
        self.node = self._get(self.actor.start.remote(), self.ready_timeout_s)

    def stop(self) -> None:
        try:
            ray.get(self.actor.stop.remote(), timeout=30)
        except ray.exceptions.RayError:
            pass
        ray.kill(self.actor)

    def submit(self, requests: list[GenerationRequest]) -> None:
        self._in_flight += len(requests)
        self.actor.submit.remote(requests)  # actor calls from one caller run in order

    def get_groups(self, timeout: float | None = None) -> list[Group]:
        groups = self._get(self.actor.get_groups.remote())
        self._in_flight -= len(groups)
        return groups

    @property
    def in_flight_groups(self) -> int:
        return self._in_flight

    def pause(self, mode: str = "keep") -> None:
        self._get(self.actor.pause.remote())

    def resume(self) -> None:
        self._get(self.actor.resume.remote())

    def stats(self) -> dict[str, float]:
        return self._get(self.actor.stats.remote())

    def health(self) -> dict[str, Any]:
        return self._get(self.actor.health.remote())

    def get_rng_state(self) -> torch.Tensor:
        return self._get(self.actor.get_rng_state.remote())

    def set_rng_state(self, state: torch.Tensor) -> None:
        self._get(self.actor.set_rng_state.remote(state))


class RayEnginePool(EnginePool):
    """EnginePool over engine actors; a weight version travels through Ray's object store (put once)."""

    def __init__(self, engines: list[RayEngine], sync_timeout_s: float, placement: Any) -> None:
        super().__init__(engines)  # type: ignore[arg-type]
        self.ray_engines = engines  # self.engines as what they are: RayEngines, with their actors
        self.sync_timeout_s = sync_timeout_s
        self.placement = placement

    def start(self) -> None:
        for engine in self.engines:
            engine.start()

    def stop(self) -> None:
        super().stop()
        remove_placement_group(self.placement)

    def _broadcast(self, weights: dict[str, torch.Tensor], version: int) -> None:
        start = time.perf_counter()
        ref = ray.put(to_object_store(weights))
        pending = {engine.actor.load.remote(ref, version): engine for engine in self.ray_engines}
        done, late = ray.wait(list(pending), num_returns=len(pending), timeout=self.sync_timeout_s)
        errors = [f"engine {pending[r].url} did not load version {version} within {self.sync_timeout_s:g} s"
                  for r in late]
        for r in done:
            try:
                ray.get(r)
                pending[r].version = version
            except ray.exceptions.RayError as exc:
                errors.append(f"engine {pending[r].url} failed to load version {version}: {exc}")
        if errors:
            raise WeightSyncError("; ".join(errors))
        self.last_sync_s = time.perf_counter() - start
        self.last_sync_bytes = payload_bytes(weights)


def build_ray_engines(cfg: TrainConfig, model: torch.nn.Module, engine_kwargs: dict[str, Any]) -> RayEnginePool:
    """`ray_engines` engine actors, one placement-group bundle of `ray_engine_cpus` CPUs (and
    `ray_engine_gpus` GPUs) each, spread over the nodes where possible."""
    connect(cfg)
    bundle = {"CPU": cfg.ray_engine_cpus, **({"GPU": cfg.ray_engine_gpus} if cfg.ray_engine_gpus else {})}
    group = placement_group([dict(bundle) for _ in range(cfg.ray_engines)], strategy="SPREAD")
    _wait_placement(group, cfg.engine_ready_timeout_s, f"{cfg.ray_engines} engine bundles of {bundle}")
    weights = ray.put({k: v.detach().cpu() for k, v in model.state_dict().items()})
    remote = ray.remote(EngineActor)
    engines = []
    for i in range(cfg.ray_engines):
        actor = remote.options(
            num_cpus=cfg.ray_engine_cpus, num_gpus=cfg.ray_engine_gpus, name=None,
            scheduling_strategy=PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=i),
        ).remote(model.config, weights, cfg.engine_dtype, cfg.torch_threads,
                 {**engine_kwargs, "seed": cfg.seed + i})
        engines.append(RayEngine(actor, f"ray-engine-{i}", cfg.engine_ready_timeout_s))
    return RayEnginePool(engines, cfg.engine_sync_timeout_s, group)


def _wait_placement(group: Any, timeout_s: float, what: str) -> None:
    try:
        ray.get(group.ready(), timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        remove_placement_group(group)
        raise RuntimeError(f"the Ray cluster could not place {what} within {timeout_s:g} s "
                           f"(free resources: {ray.available_resources()})") from None


# -- reward service ------------------------------------------------------------------------------------------
class RayRewardService:
    """`ray_reward_replicas` replicas of the reward server as a Ray Serve deployment (olmorl.rewards.service._ray_serve),
    each reserving `local_reward_workers` CPUs for its worker pool; removed when the run ends."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.url = ""

    def start(self) -> "RayRewardService":
        from olmorl.rewards.service._local import free_port
        from olmorl.rewards.service._ray_serve import serve_rewards
        from olmorl.rewards._settings import Settings

        connect(self.cfg)
        settings = Settings(workers=self.cfg.local_reward_workers, port=free_port(), api_key=self.cfg.reward_api_key)
        self.url = serve_rewards(settings, ray_address=self.cfg.ray_address or "auto",
                                 replicas=self.cfg.ray_reward_replicas)
        return self

    def stop(self) -> None:
        from olmorl.rewards.service._ray_serve import undeploy

        undeploy()


# -- learner ranks -------------------------------------------------------------------------------------------
class LearnerRank:
    """One learner rank in its own Ray actor: the plain learner (one rank) or a DeepSpeed rank."""

    @ray.method  # typed handle methods (ray.method with no options changes nothing at run time)
    def address(self) -> tuple[str, int]:
        from olmorl.rewards.service._local import free_port

        return ray.util.get_node_ip_address(), free_port()

    @ray.method
    def setup(self, cfg: TrainConfig, model_config: Any, weights: dict[str, torch.Tensor], rank: int, world: int,
              master: tuple[str, int]) -> None:
        from olmorl.trainer.learners._build import build_local_learner

        os.environ.update(MASTER_ADDR=master[0], MASTER_PORT=str(master[1]), RANK=str(rank), WORLD_SIZE=str(world),
                          LOCAL_RANK="0")  # Ray gives each rank actor its own GPU (or none): it is device 0
        torch.set_num_threads(cfg.torch_threads)
        torch.manual_seed(cfg.seed)
        self.learner = build_local_learner(cfg, _build_model(model_config, weights, torch.float32))

    @ray.method
    def follow(self) -> None:
        from olmorl.trainer.learners._deepspeed import follow_leader

        follow_leader(self.learner)

    @ray.method
    def train_step(self, samples: list[Any]) -> dict[str, float]:
        return self.learner.train_step(samples)

    @ray.method
    def weights(self) -> dict[str, torch.Tensor]:
        return self.learner.weights()

    @ray.method
    def close(self) -> None:
        if hasattr(self.learner, "close"):
            self.learner.close()

    @ray.method
    def training_state(self) -> dict[str, Any]:
        return self.learner.training_state()

    @ray.method
    def load_training_state(self, state: dict[str, Any], weights: Mapping[str, torch.Tensor]) -> None:
        self.learner.load_training_state(state, dict(weights))


class RayLearner:
    """The learner interface over rank actors. Rank 0 trains (leading the others); `model` is the driver's
    copy of the current weights (refreshed by every `weights()` call: each step's push), which evaluation
    and checkpoint export read."""

    def __init__(self, cfg: TrainConfig, model: torch.nn.Module) -> None:
        connect(cfg)
        world = cfg.ray_learner_ranks
        if cfg.learner_backend == "torch" and world != 1:
            raise ValueError("learner_backend torch runs one learner rank; use learner_backend deepspeed for more")
        self.model = model
        bundle = {"CPU": cfg.ray_learner_cpus, **({"GPU": cfg.ray_learner_gpus} if cfg.ray_learner_gpus else {})}
        self.placement = placement_group([dict(bundle) for _ in range(world)], strategy="SPREAD")
        _wait_placement(self.placement, cfg.engine_ready_timeout_s, f"{world} learner bundles of {bundle}")
        remote = ray.remote(LearnerRank)
        self.ranks = [remote.options(
            num_cpus=cfg.ray_learner_cpus, num_gpus=cfg.ray_learner_gpus,
            scheduling_strategy=PlacementGroupSchedulingStrategy(self.placement, placement_group_bundle_index=r),
        ).remote() for r in range(world)]
        self.leader = self.ranks[0]
        master = ray.get(self.leader.address.remote())
        state: dict[str, torch.Tensor] = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        weights = ray.put(state)
        # Every rank joins the process group at once (the rendezvous waits for all of them).
        ray.get([rank.setup.remote(cfg, model.config, weights, r, world, master) for r, rank in enumerate(self.ranks)])
        self.followers = [rank.follow.remote() for rank in self.ranks[1:]]

    def train_step(self, samples: list[Any]) -> dict[str, float]:
        return ray.get(self.leader.train_step.remote(samples))

    def weights(self) -> dict[str, torch.Tensor]:
        weights = ray.get(self.leader.weights.remote())
        self.model.load_state_dict(weights)
        return weights

    def training_state(self) -> dict[str, Any]:
        """Rank 0's learner state; with DeepSpeed, every rank's files gathered (no shared filesystem needed)."""
        return ray.get(self.leader.training_state.remote())

    def load_training_state(self, state: dict[str, Any], weights: Mapping[str, torch.Tensor]) -> None:
        ray.get(self.leader.load_training_state.remote(state, dict(weights)))
        self.model.load_state_dict(dict(weights))

    def close(self) -> None:
        try:
            ray.get(self.leader.close.remote(), timeout=60)
            ray.get(self.followers, timeout=60)
        finally:
            for rank in self.ranks:
                # ray types an actor as ActorHandle | type (the type for its methods) but kill as taking the handle
                ray.kill(rank)  # type: ignore[arg-type]
            remove_placement_group(self.placement)
