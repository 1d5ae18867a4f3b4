"""The learner: plain torch. Recomputes token logprobs without [batch, length, vocab] logits, applies the
objective with whole-batch normalization under gradient accumulation, clips, steps AdamW."""

from __future__ import annotations

import copy
import time
from typing import Any

import torch
import torch.nn.functional as F

from olmorl.trainer._device import autocast_bf16
from olmorl.trainer._distill import FULL_KL
from olmorl.trainer._lora import adapter_weights, is_lora, load_adapter_into_policy, unwrapped
from olmorl.trainer._objective import LossSettings, per_sequence_token_weight, token_loss_terms
from olmorl.trainer.learners._packing import enable_activation_checkpointing, pack_rows, packed_inputs
from olmorl.trainer.learners._samples import TrainSample, token_sequence_ids


class _ChunkedTokenLogprob(torch.autograd.Function):
    """log softmax(h W^T / T)[target] over token chunks; backward recomputes each chunk's logits.

    Peak extra memory is one [chunk, vocab] block instead of [tokens, vocab] logits plus their gradient.
    Also returns the per-token entropy (no gradient) since the softmax is at hand.
    """

    @staticmethod
    def forward(ctx, hidden, weight, targets, chunk, inv_temp):
        n = hidden.shape[0]
        acc = torch.promote_types(hidden.dtype, torch.float32)  # log_softmax in fp32 at least
        w = weight.to(hidden.dtype)  # logits in the hidden states' dtype (mixed: one bf16 head copy per call, not per chunk)
        logp = torch.empty(n, dtype=acc, device=hidden.device)
        entropy = torch.empty_like(logp)
        lse_all = torch.empty_like(logp)
        for s in range(0, n, chunk):
            logits = (hidden[s:s + chunk] @ w.T).to(acc) * inv_temp
            lse = torch.logsumexp(logits, dim=-1)
            logits.sub_(lse[:, None])  # in place: now log-probabilities (at most two [chunk, V] blocks live)
            logp[s:s + chunk] = logits.gather(1, targets[s:s + chunk, None]).squeeze(1)
            entropy[s:s + chunk] = -(logits.exp().mul_(logits)).sum(dim=-1)
            lse_all[s:s + chunk] = lse
        ctx.save_for_backward(hidden, weight, targets, lse_all)
        ctx.chunk, ctx.inv_temp = chunk, inv_temp
        ctx.mark_non_differentiable(entropy)
        return logp, entropy

    @staticmethod
    def backward(ctx, grad_logp, _grad_entropy):
        hidden, weight, targets, lse_all = ctx.saved_tensors
        chunk, inv_temp = ctx.chunk, ctx.inv_temp
        grad_hidden = torch.empty_like(hidden)
        acc = lse_all.dtype
        w = weight.to(hidden.dtype)
        # a frozen head (a LoRA policy's) needs no [vocab, hidden] gradient: neither its memory nor its matmuls
        grad_weight = torch.zeros(weight.shape, dtype=acc, device=weight.device) if ctx.needs_input_grad[1] else None
        for s in range(0, hidden.shape[0], chunk):
            h = hidden[s:s + chunk]
            g = (h @ w.T).to(acc).mul_(inv_temp)
            g_out = grad_logp[s:s + chunk].to(acc)
            # d logp / d logits = onehot(target) - softmax, built in place in the one [chunk, V] block
            g.sub_(lse_all[s:s + chunk, None]).exp_().mul_(-g_out[:, None])
            g.scatter_add_(1, targets[s:s + chunk, None], g_out[:, None])
            g.mul_(inv_temp)
            grad_hidden[s:s + chunk] = g.to(w.dtype) @ w  # no fp32 copy of the [vocab, hidden] head
            if grad_weight is not None:
                grad_weight += g.T @ h.to(acc)
        return grad_hidden, None if grad_weight is None else grad_weight.to(weight.dtype), None, None, None


def token_logprobs(hidden: torch.Tensor, head: torch.nn.Linear, targets: torch.Tensor, *, temperature: float = 1.0,
                   impl: str = "chunked", chunk: int = 1024) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Logprob of each target under softmax(head(hidden) / T) for flat [N, H] hidden states. Returns (logp, entropy)."""
    if head.bias is not None and impl != "naive":
        raise ValueError("the chunked logprob heads assume an lm_head without bias; use logprob_impl=naive")
    if impl == "chunked":
        return _ChunkedTokenLogprob.apply(hidden, head.weight, targets, chunk, 1.0 / temperature)
    if impl == "naive":
        logprobs = torch.log_softmax(head(hidden).float() / temperature, dim=-1)
        entropy = -(logprobs.exp() * logprobs).sum(-1).detach()
        return logprobs.gather(1, targets[:, None]).squeeze(1), entropy
    if impl == "torch_lce":
        ce = F.linear_cross_entropy(hidden / temperature, head.weight, targets, reduction="none",
                                    options=torch.nn.LinearCrossEntropyOptions())  # opt in to the chunked path
        return -ce.float(), None
    raise ValueError(f"unknown logprob impl {impl!r}")


def causal_lm_parts(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Linear]:
    """The body (hidden states out) and the lm_head of a Hugging Face causal LM, through a peft wrapper."""
    inner = unwrapped(model)  # a LoRA policy's adapted layers are inside the HF model peft wraps
    prefix = getattr(inner, "base_model_prefix", None)
    base = getattr(inner, prefix, None) if isinstance(prefix, str) else None
    output_embeddings = getattr(inner, "get_output_embeddings", None)
    head = output_embeddings() if callable(output_embeddings) else None
    if not isinstance(base, torch.nn.Module) or not isinstance(head, torch.nn.Linear):
        raise TypeError(f"the learner needs a Hugging Face causal LM (a base_model_prefix body and a Linear "
                        f"lm_head); got {type(inner).__name__}")
    return base, head


def completion_states(model_base: torch.nn.Module, samples: list[TrainSample], *, packing: bool = False,
                      device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """The hidden states that predict every completion token of `samples` ([N, H], in order) and those tokens.

    Padded: one right-padded row per sample (real tokens never attend to the pads after them, so no mask).
    Packed: samples back to back in one row with a block-causal mask (`olmorl.trainer.learners._packing`).
    """
    if packing:
        input_ids, position_ids, mask, cols, targets = packed_inputs(samples)
        hidden = model_base(input_ids=input_ids.to(device), position_ids=position_ids.to(device),
                            attention_mask=mask.to(device)).last_hidden_state[0]
        return hidden[cols.to(device)], targets.to(device)
    width = max(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    input_ids = torch.zeros((len(samples), width), dtype=torch.long)
    rows: list[int] = []
    positions: list[int] = []
    tokens: list[int] = []
    for r, s in enumerate(samples):
        seq = s.prompt_ids + s.completion_ids
        input_ids[r, :len(seq)] = torch.tensor(seq)
        rows += [r] * len(s.completion_ids)
        positions += range(len(s.prompt_ids) - 1, len(seq) - 1)  # hidden state at t predicts token t+1
        tokens += s.completion_ids
    hidden = model_base(input_ids=input_ids.to(device)).last_hidden_state
    flat = hidden[torch.tensor(rows, device=device), torch.tensor(positions, device=device)]
    return flat, torch.tensor(tokens, device=device)


class Learner:
    def __init__(self, model: torch.nn.Module, *, loss: LossSettings, learning_rate: float,
                 adam_betas: tuple[float, float] = (0.9, 0.999), adam_eps: float = 1e-8, weight_decay: float = 0.0,
                 max_grad_norm: float = 1.0, minibatches: int = 1, micro_batch_tokens: int = 16384,
                 loss_norm: str = "token", loss_constant: float | None = None, temperature: float = 1.0,
                 logprob_impl: str = "chunked", logprob_chunk: int = 512, warmup_steps: int = 0,
                 packing: bool = False, activation_checkpointing: bool = False, distill_loss: str = "sampled",
                 distill_weight: float = 0.0, mixed_precision: bool = False) -> None:
        self.model = model.train()
        # bfloat16_mixed: fp32 weights and AdamW state (updates far below bf16's resolution still land), bf16 forward
        self.mixed_precision = mixed_precision
        if mixed_precision and any(p.dtype != torch.float32 for p in model.parameters() if p.requires_grad):
            raise ValueError("learner_dtype bfloat16_mixed keeps fp32 master weights: give the learner a float32 model")
        # a full-vocabulary distill_loss: distill_weight x its per-token KL to the samples' teacher_logprobs (_distill.py)
        self.full_kl = FULL_KL.get(distill_loss)
        self.distill_weight = distill_weight
        self.packing = packing  # micro-batch = one packed row of up to micro_batch_tokens tokens (_packing.py)
        if activation_checkpointing:
            enable_activation_checkpointing(model)
        self.loss = loss
        # only what trains: a LoRA policy's frozen base gets no optimizer state
        trainable = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(trainable, lr=learning_rate, betas=adam_betas, eps=adam_eps,
                                           weight_decay=weight_decay)
        # linear warm-up, then constant (Adam's first steps are full-size whatever the gradient scale)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: min(1.0, (step + 1) / (warmup_steps + 1)))
        self.max_grad_norm = max_grad_norm
        self.minibatches = minibatches
        self.micro_batch_tokens = micro_batch_tokens
        self.loss_norm, self.loss_constant = loss_norm, loss_constant
        self.temperature = temperature
        self.logprob_impl, self.logprob_chunk = logprob_impl, logprob_chunk
        self.reference: torch.nn.Module | None = None
        if loss.kl_beta:
            self.reference = copy.deepcopy(model).eval().requires_grad_(False)
        self.base, self.head = causal_lm_parts(model)

    # -- logprobs ----------------------------------------------------------------------------------------
    def _micro_batches(self, samples: list[TrainSample]) -> list[list[int]]:
        if self.packing:
            return pack_rows([len(s.prompt_ids) + len(s.completion_ids) for s in samples], self.micro_batch_tokens)
        batches: list[list[int]] = []
        current: list[int] = []
        width = 0
        for i, s in enumerate(samples):
            length = len(s.prompt_ids) + len(s.completion_ids)
            if current and max(width, length) * (len(current) + 1) > self.micro_batch_tokens:
                batches.append(current)
                current, width = [], 0
            current.append(i)
            width = max(width, length)
        if current:
            batches.append(current)
        return batches

    def _logprobs(self, model_base: torch.nn.Module, head: torch.nn.Linear,
                  samples: list[TrainSample]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Flat logprobs (and entropies) of all completion tokens of `samples`, in order."""
        device = self.head.weight.device
        with autocast_bf16(device, self.mixed_precision):
            flat, targets = completion_states(model_base, samples, packing=self.packing, device=device)
            if self.mixed_precision:
                flat = flat.to(torch.bfloat16)  # the head's logits in bf16; log_softmax stays fp32
            return token_logprobs(flat, head, targets, temperature=self.temperature, impl=self.logprob_impl,
                                  chunk=self.logprob_chunk)

    def _logprobs_and_full_kl(self, samples: list[TrainSample]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(logp, entropy, reverse KL to the teacher per token): the student's whole-vocabulary logprobs, one
        [tokens, vocab] block per micro-batch (full-vocabulary distillation is for vocabularies where that fits)."""
        with autocast_bf16(self.head.weight.device, self.mixed_precision):
            flat, targets = completion_states(self.base, samples, packing=self.packing, device=self.head.weight.device)
            logits = self.head(flat)
        full = torch.log_softmax(logits.float() / self.temperature, dim=-1)
        missing = sum(s.teacher_logprobs is None for s in samples)
        if missing:
            raise ValueError(f"{missing} of {len(samples)} samples have no teacher_logprobs: with a full-vocabulary "
                             "distill_loss every sample needs its teacher_logprobs")
        teacher = torch.cat([s.teacher_logprobs for s in samples if s.teacher_logprobs is not None])
        entropy = -(full.exp() * full).sum(-1).detach()
        assert self.full_kl is not None
        return full.gather(1, targets[:, None]).squeeze(1), entropy, self.full_kl(full, teacher)

    @torch.no_grad()
    def _reference_logprobs(self, samples: list[TrainSample]) -> torch.Tensor:
        if self.reference is None:
            raise RuntimeError("reference logprobs need a reference model: the learner keeps one only when kl_beta > 0")
        return self._logprobs(*causal_lm_parts(self.reference), samples)[0]

    # -- one optimizer batch --------------------------------------------------------------------------
    def train_step(self, samples: list[TrainSample]) -> dict[str, float]:
        start = time.perf_counter()
        stats: dict[str, list[torch.Tensor]] = {k: [] for k in
                                                ("ratio", "is_weight", "is_capped", "clip_low", "clip_high", "entropy", "kl",
                                                 "full_kl")}
        per_minibatch = -(-len(samples) // self.minibatches)
        minibatches = [samples[i:i + per_minibatch] for i in range(0, len(samples), per_minibatch)]
        old_logprobs: list[list[torch.Tensor]] | None = None
        if self.minibatches > 1:  # pi_old: the policy before this step's first update
            with torch.no_grad():
                old_logprobs = [[self._logprobs(self.base, self.head, [mb[i] for i in idx])[0]
                                 for idx in self._micro_batches(mb)] for mb in minibatches]
        losses, grad_norms = [], []
        for m, mb in enumerate(minibatches):
            weights = per_sequence_token_weight([s.loss_tokens for s in mb], [s.in_loss for s in mb],
                                                self.loss_norm, self.loss_constant)
            self.optimizer.zero_grad(set_to_none=True)
            total = 0.0
            for k, idx in enumerate(self._micro_batches(mb)):
                micro = [mb[i] for i in idx]
                full_kl: torch.Tensor | None = None
                entropy: torch.Tensor | None
                if self.full_kl is not None:
                    logp, entropy, full_kl = self._logprobs_and_full_kl(micro)
                else:
                    logp, entropy = self._logprobs(self.base, self.head, micro)
                logp_old = old_logprobs[m][k] if old_logprobs is not None else logp.detach()
                behav = torch.tensor([lp for s in micro for lp in s.behav_logprobs], dtype=logp.dtype)
                adv = torch.tensor([a for s in micro for a in s.advantages()], dtype=logp.dtype)
                w = torch.tensor([x for i in idx for x in mb[i].token_weights(weights[i])], dtype=logp.dtype)
                ref = self._reference_logprobs(micro) if self.reference is not None else None
                seq = torch.tensor(token_sequence_ids(micro), device=logp.device)
                w = w.to(logp.device)
                used = w > 0  # on the logprobs' device: GSPO's sequence mean adds it into CUDA tensors
                loss_tok, tok_stats = token_loss_terms(logp, logp_old, behav.to(logp.device), adv.to(logp.device),
                                                       used, self.loss, logp_ref=ref, seq_ids=seq)
                if full_kl is not None:  # the teacher's exact per-position signal, normalized like the policy loss
                    loss_tok = loss_tok + self.distill_weight * full_kl
                    stats["full_kl"].append(full_kl.detach()[used.to(full_kl.device)].cpu())
                loss = (loss_tok * w).sum()
                loss.backward()
                total += float(loss.detach())
                for key, value in tok_stats.items():
                    stats[key].append(value[used].cpu())
                if entropy is not None:
                    stats["entropy"].append(entropy[used].cpu())
                if ref is not None:
                    stats["kl"].append((torch.exp(ref - logp) - (ref - logp) - 1).detach()[used].cpu())
            if self.max_grad_norm:
                grad_norms.append(float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)))
            self.optimizer.step()
            self.scheduler.step()
            losses.append(total)
        out: dict[str, float] = {"loss": sum(losses) / len(losses), "learner_s": time.perf_counter() - start,
               "learning_rate": float(self.scheduler.get_last_lr()[0]),
               "trained_tokens": float(sum(s.loss_tokens for s in samples if s.in_loss))}
        if grad_norms:
            out["grad_norm"] = max(grad_norms)
        cat = {k: torch.cat(v) for k, v in stats.items() if v}
        if "ratio" in cat and cat["ratio"].numel():
            out.update({"ratio_mean": float(cat["ratio"].mean()), "ratio_max": float(cat["ratio"].max()),
                        "is_weight_mean": float(cat["is_weight"].mean()), "is_weight_max": float(cat["is_weight"].max()),
                        "is_capped_frac": float(cat["is_capped"].mean()), "clip_low_frac": float(cat["clip_low"].mean()),
                        "clip_high_frac": float(cat["clip_high"].mean())})
        if "entropy" in cat and cat["entropy"].numel():
            out["entropy"] = float(cat["entropy"].mean())
        if "kl" in cat and cat["kl"].numel():
            out["kl"] = float(cat["kl"].mean())
        if "full_kl" in cat and cat["full_kl"].numel():  # falls as the student learns the teacher
            out["distill/full_kl"] = float(cat["full_kl"].mean())
        return out

    def weights(self) -> dict[str, torch.Tensor]:
        """What the engines load: the whole state dict, or a LoRA policy's adapter tensors only."""
        if is_lora(self.model):
            return adapter_weights(self.model)
        return {k: v.detach() for k, v in self.model.state_dict().items()}

    # -- checkpoints: what resuming needs beyond the weights (the loop saves `weights()` itself) ----------
    def training_state(self) -> dict[str, Any]:
        return {"format": "torch", "optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict()}

    def load_training_state(self, state: dict[str, Any], weights: dict[str, torch.Tensor]) -> None:
        if state.get("format", "torch") != "torch":
            raise ValueError(f"this checkpoint's learner state was written by the {state['format']} learner; "
                             f"resume it with learner_backend {state['format']}")
        if is_lora(self.model):
            load_adapter_into_policy(self.model, weights)
        else:
            self.model.load_state_dict(weights)
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
