"""The one trainer config: a frozen dataclass, loaded from YAML, overridden by flags, printed and checkpointed."""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from olmorl.trainer.engines._sampling import check_sampling
from olmorl.trainer._objective import OBJECTIVES
from olmorl.trainer._trackers import TRACKERS


@dataclass(frozen=True)
class TrainConfig:
    # -- model and data
    model: str = ""  # HF model directory or hub id of the policy (and its tokenizer)
    train_files: tuple[str, ...] = ()  # RLVR rows (messages, ground_truth, dataset) as .jsonl/.json/.parquet
    train_weights: tuple[float, ...] = ()  # sampling weight per train file (empty = equal)
    eval_files: tuple[str, ...] = ()  # held-out RLVR rows scored every `eval_every` steps
    eval_every: int = 0  # steps between held-out evaluations (0 = never)
    eval_max_prompts: int = 200  # held-out prompts per evaluation
    eval_samples: int = 1  # sampled completions per held-out prompt (eval/accuracy; greedy is one)
    verifier_override: str | None = None  # score every row with this verifier instead of its `dataset`
    max_prompt_tokens: int = 2048  # longer prompts are dropped at load time
    output_dir: str = "runs/olmorl"  # metrics.jsonl, tensorboard/, checkpoints/ go here
    # -- sampling
    group_size: int = 8  # completions per prompt (G); 1 only for distillation alone (reward_weight 0)
    prompts_per_step: int = 32  # groups with non-zero reward variance per optimizer step
    max_new_tokens: int = 256  # completion length cap; longer completions are "truncated"
    temperature: float = 1.0  # sampling temperature (the learner applies the same one)
    top_k: int = 0  # sample among the k likeliest tokens (0 = off); engines report logprobs of the renormalized cut
    top_p: float = 1.0  # then the smallest set holding top_p of the mass (1.0 = off); IS weight = the kept mass
    # -- multi-turn rows (`env`, `task`): sessions on the reward server, turns until an answer (_multiturn.py)
    max_turns: int = 8  # assistant turns per multi-turn rollout (max_new_tokens caps each turn)
    max_total_tokens: int = 1024  # sampled + tool reply tokens of one multi-turn rollout
    tool_call_parser: str = "hermes"  # tool-call format: hermes (<tool_call>{json}</tool_call>) | package.module:Class
    session_batch_window_s: float = 0.002  # session calls ready this close together go out as one batched request
    engine_batch_size: int = 64  # sequences decoded together by the engine
    continuous_batching: bool = True  # refill a finished row at once (False = static batches)
    engine_dtype: str = "float32"  # dtype of the engine's copy of the weights (float32 | bfloat16)
    device: str = "auto"  # local torch engine, learner, reference and teacher: auto (cuda when available) | cpu | cuda
    engine_process: bool = False  # run the engine in a child process (no shared interpreter lock with the learner)
    # -- scale-out (docs/scaling.md)
    engine_urls: tuple[str, ...] = ()  # olmorl-engine servers to generate with (replaces the local engine)
    engine_servers: int = 0  # olmorl-engine processes to start on loopback (added to engine_urls)
    engine_sync_timeout_s: float = 60.0  # deadline of one weight sync per engine (WeightSyncError when missed)
    engine_ready_timeout_s: float = 300.0  # start-up waits this long for every engine
    ray_address: str | None = None  # Ray cluster (auto, HEAD_IP:6379) for ray_engines / ray_learner_ranks; None = here
    ray_engines: int = 0  # transformers engine actors on the Ray cluster (replace the local engine)
    ray_engine_cpus: float = 1.0  # CPUs each engine actor's placement bundle reserves
    ray_engine_gpus: float = 0.0  # GPUs each engine actor's placement bundle reserves
    ray_learner_ranks: int = 0  # learner ranks as Ray actors (1 = plain learner; >1 needs learner_backend deepspeed)
    ray_learner_cpus: float = 1.0  # CPUs each learner rank's placement bundle reserves
    ray_learner_gpus: float = 0.0  # GPUs each learner rank's placement bundle reserves
    ray_reward_replicas: int = 0  # reward server replicas deployed on the Ray cluster (when reward_urls is empty)
    learner_backend: str = "torch"  # torch | deepspeed (ranks launched by torchrun / deepspeed, or Ray actors)
    zero_stage: int = 2  # DeepSpeed ZeRO stage 0-3
    offload_optimizer: bool = False  # DeepSpeed: optimizer states in CPU memory
    sequence_packing: bool = False  # learner: several samples per row (micro_batch_tokens per row)
    activation_checkpointing: bool = False  # learner: recompute decoder-layer activations in backward
    learner_dtype: str = "float32"  # float32 | bfloat16_mixed (fp32 master weights and AdamW state, bf16 autocast forward)
    # -- asynchrony
    async_steps: int = 1  # how many optimizer steps a sample may lag behind (0 = synchronous)
    inflight_updates: bool = True  # push weights while generating (False = wait for the engine to drain)
    update_mode: str = "inflight"  # inflight: keep the stale KV cache | abort: re-prefill running rows (AReaL)
    max_staleness: int | None = None  # AReaL eta: no trained token lags more policy versions than this
    staleness_policy: str = "drop"  # drop: too-stale groups are discarded | throttle: rollouts start late enough
    # -- algorithm
    advantage_norm: str = "centered"  # centered (OlmoRL, Dr GRPO) | std (vanilla GRPO)
    filter_zero_std: bool = True  # drop groups whose rewards are all equal
    advantage_per_component: bool = False  # GDPO: composite rows' components normalized apart, then summed
    active_sampling: bool = True  # keep sampling until the batch holds prompts_per_step useful groups
    max_sampling_rounds: int = 4  # active sampling gives up after this many batches' worth of prompts
    objective: str = "olmorl"  # olmorl (truncated IS) | decoupled (AReaL) | ppo (uncorrected) | gspo | cispo | sapo
    eps_low: float = 0.2  # lower clip range
    eps_high: float = 0.272  # upper clip range (clip-higher; DAPO uses 0.28); cispo: IS weight cap 1 + eps_high
    sapo_tau_pos: float = 1.0  # sapo: soft-gate temperature for positive advantages
    sapo_tau_neg: float = 1.05  # sapo: soft-gate temperature for other advantages
    tis_cap: float | None = 2.0  # truncated-IS cap rho (olmorl) / behaviour-weight mask bound (decoupled)
    loss_norm: str = "token"  # token (whole batch) | sequence (GRPO) | constant (Dr GRPO)
    loss_constant: float | None = None  # divisor per sequence for loss_norm=constant (default max_new_tokens)
    kl_beta: float = 0.0  # k3 KL weight against the frozen initial policy (0 = no reference model)
    truncation: str = "keep"  # keep | mask (drop from the loss) | penalize (reward := truncation_reward)
    truncation_reward: float = 0.0  # reward of a truncated completion when truncation=penalize
    # -- LoRA (peft; only the adapter trains and travels to the engines)
    lora_rank: int = 0  # rank of the LoRA adapters (0 = full fine-tune, no adapters)
    lora_alpha: int = 16  # LoRA scaling numerator: the update is (lora_alpha / lora_rank) * B @ A
    lora_target_modules: tuple[str, ...] = ()  # module names (or name suffixes) to adapt; empty = every linear but the head
    lora_dropout: float = 0.0  # dropout on the adapters' input while training (engines sample without it)
    # -- on-policy distillation (_distill.py, docs/trainer.md): a teacher's per-token reverse KL as the advantage
    teacher_model: str | None = None  # teacher HF model directory, scored in-process (same tokenizer as the policy)
    teacher_url: str | None = None  # or an olmorl-engine server of the teacher (POST /v1/logprobs)
    distill_weight: float = 0.0  # weight of the per-token reverse-KL advantage log p_teacher - log p_student (0 = off)
    reward_weight: float = 1.0  # weight of the verifiable-reward (GRPO) advantage; 0 = distillation alone
    distill_loss: str = "sampled"  # sampled (token's reverse KL = its advantage) | full_reverse_kl | full_forward_kl (loss)
    teacher_batch_size: int = 64  # sequences per teacher call (calls to a teacher_url go out 4 at a time)
    teacher_timeout_s: float = 120.0  # per teacher HTTP request; a teacher that fails stops the run (TeacherError)
    # -- optimisation
    learning_rate: float = 1e-6  # AdamW learning rate (constant after warm-up)
    warmup_steps: int = 0  # optimizer steps of linear learning-rate warm-up
    adam_betas: tuple[float, float] = (0.9, 0.999)  # AdamW betas
    adam_eps: float = 1e-8  # AdamW epsilon: gradients far below it barely move their weights
    weight_decay: float = 0.0  # AdamW weight decay
    max_grad_norm: float = 1.0  # gradient clipping (0 = off)
    minibatches: int = 1  # optimizer steps per batch (>1 makes the clip ratio active)
    micro_batch_tokens: int = 16384  # token budget of one forward/backward (gradient accumulation)
    logprob_impl: str = "chunked"  # chunked | naive | torch_lce (how the learner gets token logprobs)
    logprob_chunk: int = 512  # tokens per chunk of the chunked logprob head (memory ~ 2 x chunk x vocab)
    total_steps: int = 100  # optimizer steps (one per batch)
    # -- rewards
    reward_urls: tuple[str, ...] = ()  # remote reward servers; empty = start a local olmorl-rewards
    reward_api_key: str | None = None  # bearer token for the reward servers
    reward_timeout_s: float = 60.0  # per HTTP request
    reward_batch_size: int = 256  # items per /v1/verify request
    reward_max_wait_s: float = 1800.0  # give up if the reward servers stay unreachable this long
    local_reward_workers: int = 1  # worker processes of the embedded reward server
    # -- runtime
    seed: int = 0  # seeds data order, sampling and init
    torch_threads: int = 1  # torch threads (shared by the engine and learner threads)
    deterministic: bool = False  # torch deterministic algorithms (resume == uninterrupted, with async_steps=0)
    save_every: int = 0  # steps between checkpoints (0 = only at the end)
    keep_checkpoints: int = 2  # most recent checkpoints kept
    resume: bool = True  # continue from the latest checkpoint in output_dir if there is one
    log_every: int = 1  # steps between console lines
    tensorboard: bool = True  # also write TensorBoard events
    report_to: tuple[str, ...] = ()  # trackers: wandb, trackio (needs the package: pip install olmorl[tracking])
    run_name: str | None = None  # run name shown by the trackers (default: the output_dir's name)
    tracker_project: str = "olmorl"  # tracker project the run is logged under

    def __post_init__(self) -> None:
        choices = {"advantage_norm": ("centered", "std"),
                   "objective": OBJECTIVES,
                   "staleness_policy": ("drop", "throttle"),
                   "loss_norm": ("token", "sequence", "constant"), "truncation": ("keep", "mask", "penalize"),
                   "update_mode": ("inflight", "abort"), "logprob_impl": ("chunked", "naive", "torch_lce"),
                   "engine_dtype": ("float32", "bfloat16"), "device": ("auto", "cpu", "cuda"),
                   "learner_dtype": ("float32", "bfloat16_mixed"), "learner_backend": ("torch", "deepspeed"),
                   "distill_loss": ("sampled", "full_reverse_kl", "full_forward_kl")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, not {getattr(self, name)!r}")
        if self.train_weights and len(self.train_weights) != len(self.train_files):
            raise ValueError("train_weights needs one weight per train file")
        # distillation alone (reward_weight 0) needs no group: its signal is the teacher's at every token
        if self.group_size < 2 and not (self.group_size == 1 and self.distill_weight > 0 and self.reward_weight == 0):
            raise ValueError("group_size must be at least 2 (advantages are relative to the group); 1 only for "
                             "distillation alone (distill_weight > 0, reward_weight 0)")
        _check_ranges(self)
        if self.staleness_policy == "throttle" and self.max_staleness is None:
            raise ValueError("staleness_policy throttle needs max_staleness (the bound it keeps every group within)")
        if (self.ray_engines or self.ray_learner_ranks or self.ray_reward_replicas) and not self.ray_address:
            raise ValueError("ray_engines / ray_learner_ranks / ray_reward_replicas need ray_address (auto, or the head's HEAD_IP:6379)")
        if self.ray_engines and (self.engine_urls or self.engine_servers or self.engine_process):
            raise ValueError("choose one engine placement: ray_engines, engine_urls/engine_servers or engine_process")
        check_sampling(self.temperature, self.top_k, self.top_p)
        _check_lora(self)
        _check_placement(self)
        _check_distillation(self)
        unknown = sorted(set(self.report_to) - set(TRACKERS))
        if unknown:
            raise ValueError(f"report_to: unknown tracker(s) {unknown}; choose from {list(TRACKERS)}")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


# Numeric fields and the least value each accepts (None, where a field may be None, is always accepted).
_AT_LEAST = {
    **dict.fromkeys(("eval_max_prompts", "eval_samples", "max_prompt_tokens", "prompts_per_step", "max_new_tokens",
                     "max_turns", "max_total_tokens", "engine_batch_size", "max_sampling_rounds", "minibatches",
                     "micro_batch_tokens", "logprob_chunk", "total_steps", "reward_batch_size", "local_reward_workers",
                     "torch_threads", "keep_checkpoints", "log_every"), 1),
    **dict.fromkeys(("eval_every", "engine_servers", "ray_engines", "ray_learner_ranks", "ray_reward_replicas",
                     "warmup_steps", "async_steps", "save_every", "seed", "max_staleness", "learning_rate", "kl_beta",
                     "weight_decay", "max_grad_norm", "eps_low", "eps_high", "ray_engine_cpus", "ray_engine_gpus",
                     "ray_learner_cpus", "ray_learner_gpus", "session_batch_window_s"), 0),
}
_POSITIVE = ("engine_sync_timeout_s", "engine_ready_timeout_s", "tis_cap", "loss_constant", "adam_eps",
             "sapo_tau_pos", "sapo_tau_neg",
             "reward_timeout_s", "reward_max_wait_s")


def _check_ranges(config: TrainConfig) -> None:
    """ValueError naming the first numeric field out of its range (temperature, top_k, top_p: check_sampling)."""
    for name, least in _AT_LEAST.items():
        value = getattr(config, name)
        if value is not None and not value >= least:
            raise ValueError(f"{name} must be >= {least}, not {value!r}")
    for name in _POSITIVE:
        value = getattr(config, name)
        if value is not None and not value > 0:
            raise ValueError(f"{name} must be > 0, not {value!r}")
    if config.zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, not {config.zero_stage!r}")
    if not all(0 <= beta < 1 for beta in config.adam_betas):
        raise ValueError(f"adam_betas must each be in [0, 1), not {list(config.adam_betas)}")
    if any(not w >= 0 for w in config.train_weights) or (config.train_weights and not sum(config.train_weights) > 0):
        raise ValueError(f"train_weights must be >= 0 with a positive sum, not {list(config.train_weights)}")


def _check_lora(config: TrainConfig) -> None:
    """ValueError for LoRA settings out of range or with a placement that cannot train an adapter."""
    if config.lora_rank < 0:
        raise ValueError(f"lora_rank must be >= 0 (0 = full fine-tune), not {config.lora_rank!r}")
    if not config.lora_rank:
        return
    if not config.lora_alpha > 0:
        raise ValueError(f"lora_alpha must be > 0, not {config.lora_alpha!r}")
    if not 0 <= config.lora_dropout < 1:
        raise ValueError(f"lora_dropout must be in [0, 1), not {config.lora_dropout!r}")
    if any(not name.strip() for name in config.lora_target_modules):
        raise ValueError(f"lora_target_modules must be module names, not {list(config.lora_target_modules)}")
    if config.learner_backend != "torch" or config.ray_learner_ranks:
        raise ValueError("lora_rank > 0 trains with the plain torch learner in this process "
                         "(not with learner_backend deepspeed nor ray_learner_ranks)")


def _check_placement(config: TrainConfig) -> None:
    """ValueError for a device or learner precision the chosen engine / learner placement does not take."""
    elsewhere = [name for name in ("ray_engines", "ray_learner_ranks", "engine_servers", "engine_process")
                 if getattr(config, name)] + (["learner_backend deepspeed"] if config.learner_backend == "deepspeed" else [])
    if config.device == "cuda" and elsewhere:
        raise ValueError(f"device cuda places the in-process torch engine and plain learner; {', '.join(elsewhere)} "
                         "place their own models (use ray_*_gpus / the launcher's devices, and device auto or cpu)")
    if config.learner_dtype != "float32" and (config.learner_backend != "torch" or config.ray_learner_ranks):
        raise ValueError(f"learner_dtype {config.learner_dtype} is the plain torch learner's (not learner_backend "
                         "deepspeed nor ray_learner_ranks)")


def _check_distillation(config: TrainConfig) -> None:
    """ValueError unless the distillation fields make one consistent choice."""
    if config.teacher_model and config.teacher_url:
        raise ValueError("choose one teacher: teacher_model or teacher_url")
    if not config.distill_weight >= 0 or not config.reward_weight >= 0:
        raise ValueError(f"distill_weight and reward_weight must be >= 0, not {config.distill_weight!r}, "
                         f"{config.reward_weight!r}")
    has_teacher = bool(config.teacher_model or config.teacher_url)
    if has_teacher != (config.distill_weight > 0):
        raise ValueError("distillation needs both a teacher (teacher_model or teacher_url) and distill_weight > 0")
    if config.distill_weight == 0 and config.reward_weight != 1.0:
        raise ValueError("reward_weight only weighs the reward against distillation: set distill_weight and a teacher")
    if config.distill_loss != "sampled" and not config.teacher_model:
        raise ValueError(f"distill_loss {config.distill_loss} needs teacher_model (an engine URL returns "
                         "sampled-token logprobs only)")
    if config.distill_loss != "sampled" and (config.learner_backend != "torch" or config.ray_learner_ranks):
        raise ValueError(f"distill_loss {config.distill_loss} is computed by the plain torch learner (not deepspeed, "
                         "not Ray ranks)")
    if not config.teacher_batch_size >= 1 or not config.teacher_timeout_s > 0:
        raise ValueError(f"teacher_batch_size must be >= 1 and teacher_timeout_s > 0, not "
                         f"{config.teacher_batch_size!r}, {config.teacher_timeout_s!r}")


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


_KINDS = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}


def _coerce(tp: Any, value: Any) -> Any:
    """Turn a YAML/flag value into the field's type (lists to tuples, integers to float, "1e-6" to 1e-6); ValueError
    saying what was expected. YAML reads `1e-6` as a string, so numbers may come as text."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return None if value is None else _coerce(next(a for a in args if a is not type(None)), value)
    if origin is tuple:
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if args and args[-1] is not Ellipsis and len(items) != len(args):
            raise ValueError(f"expected a list of {len(args)}")
        return tuple(_coerce(args[0] if args else str, item) for item in items)
    if tp is bool:
        if isinstance(value, bool) or value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.lower() in ("true", "1", "yes", "false", "0", "no"):
            return value.lower() in ("true", "1", "yes")
    elif tp is int and not isinstance(value, bool):
        if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
            return int(value)
    elif tp is float and not isinstance(value, bool):
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
    elif tp is str and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"expected {_KINDS.get(tp, tp)}")


_HINTS = None


def _field_types() -> dict[str, Any]:
    global _HINTS
    if _HINTS is None:
        _HINTS = typing.get_type_hints(TrainConfig)
    return _HINTS


def config_from_dict(values: dict[str, Any], base: TrainConfig | None = None) -> TrainConfig:
    hints = _field_types()
    unknown = sorted(set(values) - set(hints))
    if unknown:
        raise ValueError(f"unknown config keys: {', '.join(unknown)}")
    coerced = {}
    for name, value in values.items():
        try:
            coerced[name] = _coerce(hints[name], value)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}, not {value!r}") from None
    return dataclasses.replace(base or TrainConfig(), **coerced)


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> TrainConfig:
    values: dict[str, Any] = {}
    if path is not None:
        loaded = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: the config file must be a mapping of field: value")
        values.update(loaded)
    values.update(overrides or {})
    return config_from_dict(values)


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One `--field-name VALUE` flag per config field (values parsed as YAML: `--train-files [a,b]`)."""
    for f in dataclasses.fields(TrainConfig):
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, default=argparse.SUPPRESS, metavar="VALUE",
                            type=yaml.safe_load, help=argparse.SUPPRESS)


def overrides_from_args(args: argparse.Namespace) -> dict[str, Any]:
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig) if hasattr(args, f.name)}


def dump_config(config: TrainConfig) -> str:
    return json.dumps(config.to_dict(), indent=2, sort_keys=False)


def field_comments() -> dict[str, str]:
    """The one-line comment of each field, read from this source file (for `olmorl-train --help-config`)."""
    return {name: comment for _, name, comment in _commented_fields()}


def field_sections() -> dict[str, list[str]]:
    """Section (the `# -- name` lines of TrainConfig) -> its fields, in source order."""
    sections: dict[str, list[str]] = {}
    for section, name, _ in _commented_fields():
        sections.setdefault(section, []).append(name)
    return sections


def _commented_fields() -> list[tuple[str, str, str]]:
    """(section, field, comment) for each commented field line of TrainConfig."""
    found, section = [], "other"
    for line in Path(__file__).read_text().splitlines():
        line = line.strip()
        if line.startswith("# -- "):
            section = line[len("# -- "):]
        elif ":" in line and "  # " in line and not line.startswith("#"):
            name = line.split(":", 1)[0]
            if name.isidentifier():
                found.append((section, name, line.split("  # ", 1)[1]))
    return found

