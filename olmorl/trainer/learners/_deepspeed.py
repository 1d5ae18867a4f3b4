"""A DeepSpeed learner (ZeRO 0-3, optional optimizer offload) behind the plain learner's interface.

Launch every rank with `torchrun` or `deepspeed` (they set MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE,
LOCAL_RANK). Rank 0 runs the training loop and calls `train_step` / `weights` as usual; the call is
broadcast to the other ranks, which sit in `serve()`. Each rank trains on its share of every minibatch,
and the loss weights use token / sequence counts summed over all ranks, so the gradient equals the
single-process one (DeepSpeed's averaging over ranks is undone by scaling with the world size).
For an engine update the full weights are gathered (ZeRO-3: `deepspeed.zero.GatheredParameters`).
A checkpoint holds DeepSpeed's own per-rank files, gathered to rank 0; resuming sends each rank its own.
On CPU DeepSpeed picks the gloo backend; install with `DS_BUILD_OPS=0 pip install --no-build-isolation deepspeed`.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import torch
import torch.distributed as dist

from olmorl.trainer.learners._plain import Learner, completion_states, token_logprobs
from olmorl.trainer.learners._samples import TrainSample, token_sequence_ids
from olmorl.trainer._objective import LossSettings, loss_counts, per_sequence_token_weight, token_loss_terms

log = logging.getLogger("olmorl.trainer")

LAUNCHER_ENV = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK")
_CHECKPOINT_TAG = "learner"  # the sub-directory DeepSpeed writes its checkpoint files to


def ensure_launcher_env() -> None:
    """A lone process without a launcher becomes a world of one; a partial launcher environment is an error."""
    present = [k for k in LAUNCHER_ENV if k in os.environ]
    if not present:
        # port 0: rank 0 binds whatever port is free itself (a port picked first and bound later can be taken between)
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="0", RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    elif len(present) < len(LAUNCHER_ENV):
        missing = [k for k in LAUNCHER_ENV if k not in os.environ]
        raise RuntimeError(f"the DeepSpeed learner needs {', '.join(LAUNCHER_ENV)} (set by torchrun / deepspeed); "
                           f"missing: {', '.join(missing)}")


def deepspeed_config(*, zero_stage: int, learning_rate: float, adam_betas: tuple[float, float], weight_decay: float,
                     max_grad_norm: float, offload_optimizer: bool, bf16: bool, adam_eps: float) -> dict[str, Any]:
    zero: dict[str, Any] = {"stage": zero_stage}
    if offload_optimizer:
        if zero_stage == 0:
            raise ValueError("optimizer offload needs ZeRO stage 1-3")
        zero["offload_optimizer"] = {"device": "cpu"}
    return {
        "train_micro_batch_size_per_gpu": 1,  # micro-batches are token-budgeted by the learner, not counted here
        "gradient_accumulation_steps": 1,  # accumulation boundaries are set explicitly per optimizer batch
        "gradient_clipping": max_grad_norm or 0.0,
        "zero_optimization": zero,
        "bf16": {"enabled": bf16},
        # torch's AdamW: the same update as the plain learner, and no JIT-compiled op on CPU
        "optimizer": {"type": "AdamW", "params": {"lr": learning_rate, "betas": list(adam_betas), "eps": adam_eps,
                                                  "weight_decay": weight_decay, "torch_adam": True}},
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }


def global_token_weights(lengths: list[int], in_loss: list[bool], normalization: str, constant: float | None,
                         group=None) -> list[float]:
    """`per_sequence_token_weight` for a rank's share, with token and sequence counts summed over all ranks."""
    counts = torch.tensor(loss_counts(lengths, in_loss), dtype=torch.float64)
    if dist.is_initialized():
        dist.all_reduce(counts, group=group)
    n_tokens, n_seqs = counts.tolist()
    return per_sequence_token_weight(lengths, in_loss, normalization, constant, totals=(n_tokens, n_seqs))


def leave_process_group() -> None:
    """At the end of a launched run, every rank together: a rank that exits with gloo's threads still running
    can abort in C++ ("terminate called without an active exception") and fail the launch after a good run.
    Only at exit: this process cannot rejoin a group on the same rendezvous afterwards."""
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


class DeepSpeedLearner(Learner):
    def __init__(self, model: torch.nn.Module, *, loss: LossSettings, learning_rate: float, zero_stage: int = 2,
                 offload_optimizer: bool = False, bf16: bool = False, adam_betas: tuple[float, float] = (0.9, 0.999),
                 adam_eps: float = 1e-8, weight_decay: float = 0.0, max_grad_norm: float = 1.0, warmup_steps: int = 0,
                 **kwargs: Any) -> None:
        import deepspeed

        if zero_stage not in (0, 1, 2, 3):
            raise ValueError(f"zero_stage must be 0-3, not {zero_stage}")
        if loss.kl_beta and zero_stage == 3:
            raise ValueError("a KL reference model is not supported with ZeRO-3 (set kl_beta=0 or zero_stage<=2)")
        ensure_launcher_env()
        deepspeed.init_distributed(verbose=False)
        super().__init__(model, loss=loss, learning_rate=learning_rate, adam_betas=adam_betas, adam_eps=adam_eps,
                         weight_decay=weight_decay, max_grad_norm=max_grad_norm, warmup_steps=warmup_steps, **kwargs)
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.zero_stage = zero_stage
        config = deepspeed_config(zero_stage=zero_stage, learning_rate=learning_rate, adam_betas=adam_betas,
                                  adam_eps=adam_eps, weight_decay=weight_decay, max_grad_norm=max_grad_norm,
                                  offload_optimizer=offload_optimizer, bf16=bf16)

        def schedule(optimizer):
            return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / (warmup_steps + 1)))

        self.engine, self.optimizer, _, self.scheduler = deepspeed.initialize(
            model=model, model_parameters=[p for p in model.parameters() if p.requires_grad], config=config,
            lr_scheduler=schedule)

    # -- the call protocol between rank 0 (the loop) and the other ranks ----------------------------------------
    def _command(self, command: tuple | None) -> tuple:
        box: list[Any] = [command]  # ranks > 0 send None and get rank 0's command back
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def train_step(self, samples: list[TrainSample]) -> dict[str, float]:
        if self.rank == 0 and self.world > 1:
            self._command(("train", samples))
        return self._train_local(samples)

    def weights(self) -> dict[str, torch.Tensor]:
        if self.rank == 0 and self.world > 1:
            self._command(("weights",))
        return self._gather_weights()

    def serve(self) -> None:
        """Ranks > 0: follow rank 0's calls until it closes the learner."""
        while True:
            command = self._command(None)
            if command[0] == "train":
                self._train_local(command[1])
            elif command[0] == "weights":
                self._gather_weights()
            elif command[0] == "save":
                self._save_local()
            elif command[0] == "load":
                self._load_local(None)
            elif command[0] == "stop":
                return

    def close(self) -> None:
        if self.rank == 0 and self.world > 1:
            self._command(("stop",))

    # -- checkpoints -----------------------------------------------------------------------------------------------
    def training_state(self) -> dict[str, Any]:
        """DeepSpeed's own checkpoint of every rank (its ZeRO partition of the optimizer state, and under ZeRO-3
        of the weights), gathered to rank 0 as files: the ranks need not share a filesystem (Ray actors on
        other nodes). The layout is DeepSpeed's, so its `zero_to_fp32.py` reads it too. It passes through
        rank 0's memory: about 16 bytes per parameter with fp32 AdamW."""
        if self.rank == 0 and self.world > 1:
            self._command(("save",))
        return {"format": "deepspeed", "zero_stage": self.zero_stage, "world": self.world, "files": self._save_local()}

    def load_training_state(self, state: dict[str, Any], weights: dict[str, torch.Tensor]) -> None:
        """Every rank loads its own partition (rank 0 sends each rank its files); `weights` are in them."""
        written_by = (state.get("format", "torch"), state.get("world"), state.get("zero_stage"))
        if written_by != ("deepspeed", self.world, self.zero_stage):
            raise ValueError(f"this checkpoint's learner state was written by the {written_by[0]} learner"
                             + (f" with {written_by[1]} ranks at ZeRO stage {written_by[2]}" if written_by[1] else "")
                             + f"; this run has the deepspeed learner with {self.world} ranks at ZeRO stage "
                             f"{self.zero_stage}: resume with the same learner_backend, ranks and zero_stage")
        if self.rank == 0 and self.world > 1:
            self._command(("load",))
        self._load_local(state["files"])

    def _save_local(self) -> dict[str, bytes]:
        with tempfile.TemporaryDirectory(prefix="olmorl-ds-save-") as tmp:
            self.engine.save_checkpoint(tmp, tag=_CHECKPOINT_TAG, save_latest=False)
            root = Path(tmp) / _CHECKPOINT_TAG
            mine = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
        gathered: list[Any] | None = [None] * self.world if self.rank == 0 else None
        dist.gather_object(mine, gathered, dst=0)
        return {name: data for files in gathered for name, data in files.items()} if gathered else {}

    def _load_local(self, files: dict[str, bytes] | None) -> None:
        shares = None
        if self.rank == 0:  # ZeRO files name their rank; the others (ZeRO-1/2's model states) go to every rank
            if files is None:
                raise ValueError("rank 0 loads the checkpoint files it is given (only ranks > 0 get them sent)")
            shares = [{n: b for n, b in files.items() if "zero_pp_rank_" not in n or f"zero_pp_rank_{r}_" in n}
                      for r in range(self.world)]
        box: list[Any] = [None]
        dist.scatter_object_list(box, shares, src=0)
        with tempfile.TemporaryDirectory(prefix="olmorl-ds-load-") as tmp:
            for name, data in box[0].items():
                path = Path(tmp) / _CHECKPOINT_TAG / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            loaded, _ = self.engine.load_checkpoint(tmp, tag=_CHECKPOINT_TAG, load_optimizer_states=True,
                                                    load_lr_scheduler_states=True)
        if loaded is None:
            raise RuntimeError(f"rank {self.rank}: DeepSpeed found no checkpoint in the files it was sent "
                               f"({sorted(box[0])})")

    # -- work every rank does ------------------------------------------------------------------------------------
    def _gather_weights(self) -> dict[str, torch.Tensor]:
        import deepspeed

        params = list(self.model.parameters())
        with deepspeed.zero.GatheredParameters(params, modifier_rank=None, enabled=self.zero_stage == 3):
            if self.rank != 0:
                return {}
            return {k: v.detach().to("cpu", copy=True) for k, v in self.model.state_dict().items()}

    def _logprobs(self, model_base, head, samples: list[TrainSample]):
        """As the plain learner's, but under ZeRO-3 the chunked head runs as the lm_head module's forward:
        ZeRO-3 gathers a module's partitioned weight around its forward (and again for its backward)."""
        flat, target = completion_states(model_base, samples, packing=self.packing, device=head.weight.device)
        def logprobs(hidden: torch.Tensor, lm_head: torch.nn.Linear) -> tuple[torch.Tensor, torch.Tensor | None]:
            return token_logprobs(hidden, lm_head, target, temperature=self.temperature, impl=self.logprob_impl,
                                  chunk=self.logprob_chunk)

        if self.zero_stage < 3:
            return logprobs(flat, head)
        # token_logprobs reads only the head's weight and bias, which _Plain holds
        head.forward = lambda h: logprobs(h, cast(torch.nn.Linear, _Plain(head.weight)))
        try:
            return head(flat)
        finally:
            del head.forward

    def _train_local(self, samples: list[TrainSample]) -> dict[str, float]:
        start = time.perf_counter()
        engine = self.engine
        per_minibatch = -(-len(samples) // self.minibatches)
        minibatches = [samples[i:i + per_minibatch] for i in range(0, len(samples), per_minibatch)]
        old: list[list[torch.Tensor | None]] | None = None  # None: a padding micro-batch (no samples)
        shares = [mb[self.rank::self.world] for mb in minibatches]
        plans = [self._equal_micro_batches(share) for share in shares]
        if self.minibatches > 1:  # pi_old: the policy before this step's first update
            with torch.no_grad():
                old = [[self._logprobs(self.base, self.head, [share[i] for i in idx])[0] if idx else None
                        for idx in plan] for share, plan in zip(shares, plans)]
        losses, grad_norms, ratio_max, entropies = [], [], [], []
        for m, (share, plan) in enumerate(zip(shares, plans)):
            weights = global_token_weights([s.loss_tokens for s in share], [s.in_loss for s in share],
                                           self.loss_norm, self.loss_constant)
            total = torch.zeros((), dtype=torch.float64)
            for k, idx in enumerate(plan):
                engine.set_gradient_accumulation_boundary(k == len(plan) - 1)
                # a rank with fewer micro-batches still runs forward/backward (collectives must match): weight 0
                micro = [share[i] for i in idx] if idx else share[:1]
                w = torch.tensor([x for i in (idx or [0]) for x in share[i].token_weights(weights[i] if idx else 0.0)])
                # engine.forward starts ZeRO's next micro-step (ZeRO-3: accumulate into the gradient partitions,
                # not overwrite them); the learner runs the model and the chunked head itself, so it starts it here
                if hasattr(engine.optimizer, "clear_backward_seen_flag"):
                    engine.optimizer.clear_backward_seen_flag()
                logp, entropy = self._logprobs(self.base, self.head, micro)
                cached = old[m][k] if old is not None else None
                logp_old = cached if cached is not None else logp.detach()
                behav = torch.tensor([lp for s in micro for lp in s.behav_logprobs], dtype=logp.dtype)
                adv = torch.tensor([a for s in micro for a in s.advantages()], dtype=logp.dtype)
                ref = self._reference_logprobs(micro) if self.reference is not None else None
                seq = torch.tensor(token_sequence_ids(micro), device=logp.device)
                loss_tok, tok_stats = token_loss_terms(logp, logp_old, behav, adv, w > 0, self.loss, logp_ref=ref,
                                                       seq_ids=seq)
                loss = (loss_tok * w.to(logp.dtype)).sum()
                engine.backward(loss * self.world)  # DeepSpeed averages gradients over ranks; ours are partial sums
                engine.step()
                total += float(loss.detach())
                used = w > 0
                if used.any():
                    ratio_max.append(float(tok_stats["ratio"][used].max()))
                    if entropy is not None:
                        entropies.append(entropy[used].detach())
            dist.all_reduce(total)
            losses.append(float(total))
            norm = engine.get_global_grad_norm()
            if norm is not None:
                grad_norms.append(float(norm))
        out: dict[str, float] = {"loss": sum(losses) / len(losses), "learner_s": time.perf_counter() - start,
                                 "learning_rate": float(self.scheduler.get_last_lr()[0]),
                                 "trained_tokens": float(sum(s.loss_tokens for s in samples if s.in_loss))}
        if grad_norms:
            out["grad_norm"] = max(grad_norms)
        if ratio_max:
            out["ratio_max"] = max(ratio_max)
        if entropies:
            out["entropy"] = float(torch.cat(entropies).mean())
        return out

    def _equal_micro_batches(self, share: list[TrainSample]) -> list[list[int]]:
        """This rank's token-budget micro-batches, padded with empty ones to the largest count over ranks."""
        plan = self._micro_batches(share) if share else []
        count = torch.tensor([len(plan)])
        dist.all_reduce(count, op=dist.ReduceOp.MAX)
        if not share and int(count):
            raise ValueError(f"rank {self.rank} got no samples: the batch must hold at least world_size samples")
        return plan + [[] for _ in range(int(count) - len(plan))]


def follow_leader(learner: Learner) -> None:
    """A rank > 0: run rank 0's calls until it closes the learner. Only DeepSpeed ranks have a leader."""
    if not isinstance(learner, DeepSpeedLearner):
        raise ValueError(f"only DeepSpeed ranks follow rank 0, and this rank's learner is {type(learner).__name__}: "
                         "several learner ranks need learner_backend deepspeed")
    learner.serve()


class _Plain:
    """The lm_head seen as a bias-free linear layer holding `weight` (what `token_logprobs` reads)."""

    bias = None

    def __init__(self, weight: torch.Tensor) -> None:
        self.weight = weight
