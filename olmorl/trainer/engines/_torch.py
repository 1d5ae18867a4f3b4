"""The in-process engine: a transformers-based continuous-batching engine (its interface: `_types`).

`TorchEngine` runs a decode loop over the model's KV cache in a background thread. Rows of the running
batch are independent sequences at different lengths (per-row position ids and attention mask over a
shared, left-aligned cache); a finished row leaves the batch at once and a waiting sequence is prefilled
and joins on the next step, so nobody waits for the longest sequence. Weight updates are applied between
two decode steps without draining the batch ("inflight", KV cache kept: PipelineRL/OlmoRL), or, with
`update_mode="abort"`, every running row is re-prefilled under the new weights (AReaL). Every token records
the policy version that sampled it. A finished row whose request has a `cache_key` leaves its KV cache behind
for the request that extends it (multi-turn: `_kept_cache`), so a conversation is not prefilled again each turn.
A row's tokens and when it ends are `_rows`; the batch's tensors in the KV cache, `_batch_cache`.
"""

from __future__ import annotations

import inspect
import queue
import threading
import time
from collections import deque
from typing import Mapping

import torch

from olmorl.trainer._lora import load_policy_weights, same_kind
from olmorl.trainer.engines._batch_cache import KVCache, causal_lm_config, kept_rows, prefill_inputs, stacked
from olmorl.trainer.engines._kept_cache import (KeptCache, KeptCaches, batch_past, compacted, extension_inputs,
                                                kept_past, row_cache)
from olmorl.trainer.engines._rows import PendingGroup, Row
from olmorl.trainer.engines._sampling import check_sampling, sampling_logprobs
from olmorl.trainer.engines._types import GenerationRequest, Group, take_groups
from olmorl.trainer.engines._weight_dtypes import WeightDtypes


class TorchEngine:
    """Continuous-batching sampler over a Hugging Face causal LM (CPU or one GPU).

    Each token is drawn with the engine's `torch.Generator` from softmax(logits / temperature), cut to the
    `top_k` most likely tokens (0 = off) and then to the smallest set whose mass reaches `top_p`, and
    renormalized. The logprob recorded per token is under that truncated distribution (the behaviour policy),
    not the full softmax the learner scores with; see `olmorl.trainer.engines._sampling`.
    """

    def __init__(self, model: torch.nn.Module, *, eos_token_id: int | list[int], pad_token_id: int,
                 max_new_tokens: int, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
                 max_batch_size: int = 64, continuous: bool = True, update_mode: str = "inflight", seed: int = 0,
                 version: int = 0, admit_chunk: int | None = None, kept_caches: int | None = None,
                 join_span: int = 16) -> None:
        if update_mode not in ("inflight", "abort"):
            raise ValueError(f"update_mode must be inflight or abort, not {update_mode!r}")
        # transformers 5 calls the KV cache `cache` (argument and output) and warns on `past_key_values`, the 4.x name
        self._cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        check_sampling(temperature, top_k, top_p)
        self.model = model.eval()
        self.eos_ids = set([eos_token_id] if isinstance(eos_token_id, int) else eos_token_id)
        self.pad_id = pad_token_id
        self.max_new_tokens = max_new_tokens
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p
        self.max_batch_size = max_batch_size
        self.admit_chunk = max(1, max_batch_size // 8) if admit_chunk is None else admit_chunk
        self.continuous = continuous
        # a sequence admitted beside running rows joins their decode step when it adds at most this many tokens
        # (a tool reply); a longer one is prefilled apart: joined, it costs a forward as wide as itself per row
        self.join_span = join_span
        self.update_mode = update_mode
        self.version = version
        self.device = next(model.parameters()).device
        self.weight_dtypes = WeightDtypes.of_model(model)  # what a staged update is cast to
        # on the model's device: torch.multinomial refuses a generator on another device (CUDA probs, CPU generator)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)

        self._cv = threading.Condition()
        self._commands: deque[tuple] = deque()
        self._paused = False
        self._running = False
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._out: queue.Queue[Group] = queue.Queue()
        self._waiting: deque[Row] = deque()
        self._rows: list[Row] = []
        self._cache: KVCache | None = None
        self._mask: torch.Tensor | None = None  # [rows, cache_len] 1 where the cache column is the row's token
        self._next_input: torch.Tensor | None = None  # [rows] last sampled token, not yet in the cache
        self._positions: torch.Tensor | None = None  # [rows] position id of that token
        self._in_flight_groups = 0
        # busy_s is wall time; cpu_s the engine thread's own CPU (the rest of busy_s: waiting for a core or the GIL);
        # forward_pad_tokens: pad tokens fed to forwards (rows widened to a longer row's new tokens)
        self._stats = {"tokens": 0.0, "decode_steps": 0.0, "row_steps": 0.0, "busy_s": 0.0, "idle_s": 0.0,
                       "cpu_s": 0.0, "forwards": 0.0, "forward_pad_tokens": 0.0,
                       "updates": 0.0, "kv_stale_tokens": 0.0,
                       "prefill_tokens": 0.0, "prefill_tokens_reused": 0.0}
        self._stale_rows: set[int] = set()  # ids of rows whose cache predates the latest inflight update
        # KV caches of finished rows with a cache_key, for the request that extends them; rollouts waiting on a
        # tool outnumber the running rows, so the default keeps four per row (0: off)
        self._kept = KeptCaches(4 * max_batch_size if kept_caches is None else kept_caches)

    # -- public interface ------------------------------------------------------------------------------
    def start(self) -> None:
        self._running = True
        self._thread = threading.Thread(target=self._run, name="olmorl-engine", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cv:
            self._running = False
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def submit(self, requests: list[GenerationRequest]) -> None:
        """Queue prompts; all requests of one call are admitted in order, after any earlier command."""
        self._check()
        with self._cv:
            self._commands.append(("submit", list(requests), self.version))
            self._in_flight_groups += len(requests)
            self._cv.notify_all()

    def get_groups(self, timeout: float | None = None) -> list[Group]:
        """Finished groups (at least one, waiting up to `timeout`; [] on timeout)."""
        self._check()
        return take_groups(self._out, timeout)

    def update_weights(self, weights: Mapping[str, torch.Tensor], version: int, wait: bool = False) -> None:
        """Swap weights between two decode steps without stopping generation; tokens after it carry `version`."""
        self._check()
        done = threading.Event()
        applied_before_return = wait and self._running  # not started (a resume's first sync): at the first token
        # A copy only when the caller may write its tensors before they are applied: loading straight from them
        # saves one pass over the weights (Ray's read-only shared memory, a learner's live parameters). The copy
        # is in the model's dtype: an fp32 master's bf16 copy is half the bytes, and the same bits on load.
        staged = same_kind(weights, weights) if applied_before_return else self.weight_dtypes.cast(weights)
        with self._cv:
            self._commands.append(("update", staged, version, done))
            self._cv.notify_all()
        if applied_before_return:
            while not done.wait(0.5):
                self._check()

    def pause(self) -> None:
        with self._cv:
            self._paused = True

    def resume(self) -> None:
        with self._cv:
            self._paused = False
            self._cv.notify_all()

    @property
    def in_flight_groups(self) -> int:
        return self._in_flight_groups

    def stats(self) -> dict[str, float]:
        return dict(self._stats, running_rows=float(len(self._rows)), waiting=float(len(self._waiting)))

    def get_rng_state(self) -> torch.Tensor:
        return self.generator.get_state()

    def set_rng_state(self, state: torch.Tensor) -> None:
        self.generator.set_state(state)

    # -- engine thread -----------------------------------------------------------------------------------
    def _check(self) -> None:
        if self._error is not None:
            raise RuntimeError("generation engine failed") from self._error

    def _run(self) -> None:
        try:
            with torch.inference_mode():
                while True:
                    idle_start = time.perf_counter()
                    with self._cv:
                        while self._running and (self._paused or (not self._commands and not self._has_work())):
                            self._cv.wait(0.5)
                        if not self._running:
                            return
                        commands = list(self._commands)
                        self._commands.clear()
                    busy_start, cpu_start = time.perf_counter(), time.thread_time()
                    self._stats["idle_s"] += busy_start - idle_start
                    self._iterate(commands)
                    self._stats["busy_s"] += time.perf_counter() - busy_start
                    self._stats["cpu_s"] += time.thread_time() - cpu_start
        except BaseException as exc:  # surfaced to the caller on its next call
            self._error = exc

    def _iterate(self, commands: list[tuple]) -> None:
        for command in commands:
            self._apply(command)
        if not self._admit() and self._rows:
            self._decode_step()

    def run_steps(self, n: int) -> None:
        """Drive the engine from the calling thread for `n` iterations (tests; the engine must not be started)."""
        if self._thread is not None:
            raise RuntimeError("run_steps drives an engine that was not started")
        with torch.inference_mode():
            for _ in range(n):
                commands = list(self._commands)
                self._commands.clear()
                self._iterate(commands)

    def _has_work(self) -> bool:
        return bool(self._rows) or bool(self._waiting)

    def _apply(self, command: tuple) -> None:
        if command[0] == "submit":
            _, requests, version = command
            for req in requests:
                pending = PendingGroup(req, version, [None] * req.n)
                for i in range(req.n):
                    self._waiting.append(Row(pending, i, list(req.prompt_ids)))
        else:
            _, weights, version, done = command
            load_policy_weights(self.model, weights)  # full weights, or a LoRA adapter (_lora.py)
            self.version = version
            self._stats["updates"] += 1
            self._kept.clear()  # computed under the old weights
            if self._rows and self.update_mode == "abort":
                self._reprefill_rows()
            else:
                self._stale_rows = {id(r) for r in self._rows}
            done.set()

    def _forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
                 cache: object) -> tuple[torch.Tensor, KVCache]:
        self._stats["forwards"] += 1
        if input_ids.shape[1] > 1:  # a decode step feeds one real token a row
            self._stats["forward_pad_tokens"] += input_ids.numel() - int(attention_mask[:, -input_ids.shape[1]:].sum())
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         use_cache=True, **{self._cache_arg: cache})
        return out.logits[:, -1, :].float(), getattr(out, self._cache_arg)

    def _batch(self) -> tuple[KVCache, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The running rows' KV cache, attention mask, next input tokens and their positions."""
        if self._cache is None or self._mask is None or self._next_input is None or self._positions is None:
            raise RuntimeError(f"the engine has {len(self._rows)} running rows but no batch state for them")
        return self._cache, self._mask, self._next_input, self._positions

    def _prefill(self, id_lists: list[list[int]]) -> tuple[torch.Tensor, KVCache, torch.Tensor]:
        from transformers import DynamicCache

        input_ids, mask, positions = prefill_inputs(id_lists, self.pad_id)
        logits, cache = self._forward(input_ids.to(self.device), mask.to(self.device), positions.to(self.device),
                                      DynamicCache(config=causal_lm_config(self.model)))
        return logits, cache, mask.to(self.device)

    def _admit(self) -> bool:
        """Admit waiting sequences; True when that forward also decoded the running rows' next token."""
        free = self.max_batch_size - len(self._rows)
        if not self._waiting or free <= 0 or (not self.continuous and self._rows):
            return False
        # An admission prefilled apart (a suffix over join_span: every fresh prompt longer than it) costs one extra
        # forward; gather a few free slots first unless the batch is nearly empty or nothing more is waiting. On
        # small models per-call overhead dominates the step. (A joined row costs no forward: the gate only delays it.)
        if self._rows and free < self.admit_chunk and len(self._waiting) > free and len(self._rows) >= self.admit_chunk:
            return False
        new = [self._waiting.popleft() for _ in range(min(free, len(self._waiting)))]
        kept = [self._kept.take(s.group.request.cache_key, s.prompt_ids) for s in new]
        if self._rows:
            # A suffix longer than join_span would widen every running row to its length (all pad but one
            # token): those rows are prefilled in a forward of their own, then decode with the batch.
            apart = [len(s.prompt_ids) - len(k.ids if k else ()) > self.join_span for s, k in zip(new, kept)]
            if any(apart):
                self._start([s for s, a in zip(new, apart) if a], [k for k, a in zip(kept, apart) if a])
                new, kept = [s for s, a in zip(new, apart) if not a], [k for k, a in zip(kept, apart) if not a]
        if not new:
            return False
        if not self._rows:
            self._start(new, kept)
            return False
        # One forward for all (per-call overhead dominates small models): a fresh row extends an empty cache,
        # and the running rows decode their next token in it, so a turn back from its tool joins the next step.
        extending = [k for k in kept if k is not None]
        layout = extending[0] if extending else KeptCache([], [(layer.keys[:1], layer.values[:1])
                                                               for layer in self._batch()[0].layers])
        running, running_positions = self._rows, self._batch()[3]
        input_ids, mask, positions, cache = self._extension(new, kept, layout, running)
        logits, cache = self._forward(input_ids, mask, positions, cache)
        self._count_decode_step()
        decoded = self._sample(logits[:len(running)], running)
        joined = self._sample(logits[len(running):], new)
        self._rows, self._cache = running + new, cache
        self._mask = compacted(cache, mask)
        self._next_input = torch.cat([decoded, joined])
        self._positions = torch.cat([running_positions + 1,
                                     torch.tensor([len(s.prompt_ids) for s in new], device=self.device)])
        self._retire_finished()
        return True

    def _start(self, new: list[Row], kept: list[KeptCache | None]) -> None:
        """Prefill `new` in a forward of their own (each extending its kept cache, if any); they join the
        batch with their first sampled token."""
        extending = [k for k in kept if k is not None]
        if not extending:
            self._stats["prefill_tokens"] += sum(len(s.prompt_ids) for s in new)
            self._join(new, *self._prefill([s.prompt_ids for s in new]))
        else:
            input_ids, mask, positions, cache = self._extension(new, kept, extending[0], [])
            logits, cache = self._forward(input_ids, mask, positions, cache)
            self._join(new, logits, cache, mask)
        self._retire_finished()

    def _extension(self, new: list[Row], kept: list[KeptCache | None], layout: KeptCache,
                   running: list[Row]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, object]:
        """Inputs of a forward that extends each new row's kept cache (an empty one without) by the rest of its
        prompt, after the running rows' next token."""
        caches = [k if k is not None else layout.empty() for k in kept]
        suffixes = [s.prompt_ids[len(k.ids):] for s, k in zip(new, caches)]
        self._stats["prefill_tokens"] += sum(len(x) for x in suffixes)
        self._stats["prefill_tokens_reused"] += sum(len(k.ids) for k in caches)
        pasts = [kept_past(k) for k in caches]
        if running:
            running_cache, running_mask, next_input, running_positions = self._batch()
            pasts.insert(0, batch_past(running_cache, running_mask, running_positions))
            suffixes = [[t] for t in next_input.tolist()] + suffixes
        return extension_inputs(pasts, suffixes, self.pad_id, causal_lm_config(self.model), self.device)

    def _join(self, rows: list[Row], logits: torch.Tensor, cache: KVCache, mask: torch.Tensor) -> None:
        """Rows just prefilled join the batch with their first sampled token."""
        tokens = self._sample(logits, rows)
        positions = torch.tensor([len(s.prompt_ids) for s in rows], device=self.device)
        self._merge(rows, cache, mask, tokens, positions)

    def _merge(self, rows: list[Row], cache: KVCache, mask: torch.Tensor, next_input: torch.Tensor,
               positions: torch.Tensor) -> None:
        if not self._rows:
            self._rows, self._cache, self._mask = list(rows), cache, mask
            self._next_input, self._positions = next_input, positions
            return
        old_cache, old_mask, old_next_input, old_positions = self._batch()
        self._mask = stacked(old_cache, old_mask, cache, mask)
        self._rows.extend(rows)
        self._next_input = torch.cat([old_next_input, next_input])
        self._positions = torch.cat([old_positions, positions])

    def _decode_step(self) -> None:
        cache, mask, next_input, positions = self._batch()
        step_mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        logits, self._cache = self._forward(next_input[:, None], step_mask, positions[:, None], cache)
        self._mask = step_mask
        self._count_decode_step()
        self._next_input = self._sample(logits, self._rows)
        self._positions = positions + 1
        self._retire_finished()

    def _count_decode_step(self) -> None:
        self._stats["kv_stale_tokens"] += sum(id(row) in self._stale_rows for row in self._rows)
        self._stats["decode_steps"] += 1
        self._stats["row_steps"] += len(self._rows)

    def _sample(self, logits: torch.Tensor, rows: list[Row]) -> torch.Tensor:
        logprobs = sampling_logprobs(logits, self.temperature, self.top_k, self.top_p)
        tokens = torch.multinomial(logprobs.exp(), 1, generator=self.generator).squeeze(1)
        picked = logprobs.gather(1, tokens[:, None]).squeeze(1)
        for row, tok, lp in zip(rows, tokens.tolist(), picked.tolist()):
            row.record(tok, lp, self.version, self.eos_ids, self.max_new_tokens)
        self._stats["tokens"] += len(rows)
        return tokens

    def _retire_finished(self) -> None:
        keep = [i for i, r in enumerate(self._rows) if r.finish_reason is None]
        if len(keep) == len(self._rows):
            return
        cache, batch_mask, next_input, positions = self._batch()
        for index, row in enumerate(self._rows):
            if row.finish_reason is None:
                continue
            key = row.group.request.cache_key
            if key is not None and id(row) not in self._stale_rows:
                self._kept.keep(key, row_cache(cache, batch_mask, index, row.prompt_ids + row.tokens[:-1]))
            self._finish(row)
        if not keep:
            self._rows, self._cache, self._mask = [], None, None
            self._stale_rows.clear()
            return
        remaining = torch.tensor(keep, device=self.device)
        self._mask = kept_rows(cache, batch_mask, remaining)
        self._rows = [self._rows[i] for i in keep]
        self._next_input = next_input.index_select(0, remaining)
        self._positions = positions.index_select(0, remaining)

    def _finish(self, row: Row) -> None:
        group = row.group.complete(row)
        self._stale_rows.discard(id(row))
        if group is not None:
            self._out.put(group)
            with self._cv:  # after the put: in_flight == 0 means every group is in the queue
                self._in_flight_groups -= 1

    def _reprefill_rows(self) -> None:
        """AReaL-style update: recompute every running row's KV cache under the new weights."""
        rows = self._rows
        _, cache, mask = self._prefill([r.prompt_ids + r.tokens[:-1] for r in rows])
        self._rows, self._cache, self._mask = list(rows), cache, mask
