"""The asynchronous GRPO loop, top to bottom.

prompt mixer -> engine (continuous batching, own weights) -> finished groups scored in batches over HTTP
-> advantages, zero-std filter, active sampling -> learner step -> weights pushed inflight to the engine.

Back-pressure (AReaL's rule): at policy version v the pipeline holds at most (v + async_steps + 1) * B
groups that were submitted but not yet trained, so nothing trained is more than `async_steps` versions
stale at submission. `async_steps = 0` is the synchronous loop: generate a batch, score it, train, repeat.

`max_staleness` (eta) bounds the lag of every trained token. A group can still outlive it: a long rollout
keeps running while later, shorter ones fill the batches. `staleness_policy: drop` discards such a group
when it finishes; `throttle` never lets it happen (`_admission_cap`, `_take_batch`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path

import torch

from olmorl.trainer._checkpoint import (MetricsLog, latest_checkpoint, load_checkpoint, rng_states,
                                        save_checkpoint, set_rng_states)
from olmorl.trainer._config import TrainConfig, dump_config
from olmorl.trainer._device import resolve_device
from olmorl.trainer._data import Prompt, PromptMixer, load_sources
from olmorl.trainer._distill import TeacherScores, build_teacher, mixed_advantages, teacher_scores
from olmorl.trainer.engines._types import GenerationRequest, Group
from olmorl.trainer._eval import evaluate
from olmorl.trainer._multiturn import has_env_rows, multiturn_engine
from olmorl.trainer.learners._samples import TrainSample
from olmorl.trainer._objective import decoupled_group_advantages, group_advantages, is_zero_std
from olmorl.trainer._rewards import GroupScorer, component_rewards, embedded_reward_server, judge_agreement, \
    score_groups
from olmorl.trainer._scaleout import build_engine, build_learner
from olmorl.trainer._step_metrics import StepTally, step_metrics

log = logging.getLogger("olmorl.trainer")


@dataclass
class ScoredGroup:
    prompt: Prompt
    group: Group
    rewards: list[float]
    samples: list[TrainSample]  # empty when the group carries no signal (kept to count toward the quota)


class Trainer:
    def __init__(self, config: TrainConfig) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.config = cfg = resolve_device(config)  # device auto -> cpu | cuda, printed in the resolved config
        torch.set_num_threads(cfg.torch_threads)
        torch.manual_seed(cfg.seed)
        self.tokenizer = AutoTokenizer.from_pretrained(cfg.model)
        model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=torch.float32)
        # the engines first: they start from the base model, which a LoRA learner then wraps in place
        self.engine = build_engine(cfg, model, self.tokenizer)  # in-process, child, HTTP or Ray (_scaleout.py)
        self.learner = build_learner(cfg, model)  # plain torch (LoRA or full), or DeepSpeed rank 0 (_scaleout.py)
        self.teacher = build_teacher(cfg)  # on-policy distillation (_distill.py); None = rewards only
        train = load_sources(cfg.train_files, self.tokenizer, max_prompt_tokens=cfg.max_prompt_tokens,
                             verifier_override=cfg.verifier_override)
        evals = load_sources(cfg.eval_files, self.tokenizer, max_prompt_tokens=cfg.max_prompt_tokens,
                             verifier_override=cfg.verifier_override)
        self.mixer = PromptMixer(train, cfg.train_weights or None, cfg.seed)
        self.eval_prompts = [p for src in evals.values() for p in src]
        self.eval_prompts = self.eval_prompts[:cfg.eval_max_prompts]
        self.step = 0
        self.accepted: deque[ScoredGroup] = deque()
        self.pending: dict[int, Prompt] = {}  # submitted, not yet trained or dropped
        self.admitted: dict[int, int] = {}  # policy version when each pending group was submitted
        self.ids = itertools.count()
        self.resubmit: list[Prompt] = []  # prompts in flight at the checkpoint we resumed from
        self.counters: Counter[str] = Counter()  # since the last step
        self.trained_groups = 0
        self.tally = StepTally()  # scored since the last step (a new one from run() and each step's metrics)

    # -- setup / teardown ------------------------------------------------------------------------------
    def _resume(self) -> None:
        path = latest_checkpoint(self.config.output_dir) if self.config.resume else None
        if path is None:
            return
        state = load_checkpoint(path)
        # checkpoints written before learners had their own state kept the plain learner's at the top level
        learner_state = state.get("learner") or {"optimizer": state["optimizer"], "scheduler": state["scheduler"]}
        self.learner.load_training_state(learner_state, state["model"])
        self.mixer.load_state_dict(state["data"])
        set_rng_states(state["rng"])
        self.engine.set_rng_state(state["engine_rng"])
        self.step, self.trained_groups = state["step"], state["trained_groups"]
        self.resubmit = list(state["pending"])
        self.engine.update_weights(self.learner.weights(), self.step)
        self.engine.version = self.step
        log.info("resumed from %s (step %d, %d prompts to resubmit)", path, self.step, len(self.resubmit))

    def _checkpoint(self) -> None:
        cfg = self.config
        weights = self.learner.weights()  # gathered: a ZeRO-3 rank's own parameters are partitions
        state = {"model": weights, "learner": self.learner.training_state(),
                 "data": self.mixer.state_dict(), "rng": rng_states(), "engine_rng": self.engine.get_rng_state(),
                 "step": self.step, "version": self.step, "trained_groups": self.trained_groups,
                 "pending": [self.pending[k] for k in sorted(self.pending)]}
        # a LoRA policy's model/ is its PEFT adapter directory (peft writes it), which `olmorl-train export` merges
        save_checkpoint(cfg.output_dir, self.step, state, dump_config(cfg), self.learner.model, self.tokenizer,
                        keep=cfg.keep_checkpoints, weights=None if cfg.lora_rank else weights)

    # -- feeding the engine ----------------------------------------------------------------------------
    def _feed(self) -> None:
        cfg, B = self.config, self.config.prompts_per_step
        if self.draining:
            return
        if cfg.active_sampling and self.counters["filtered"] >= cfg.max_sampling_rounds * B:
            return  # active sampling budget for this step is spent: train on what there is
        target = self._admission_cap()
        have = self.trained_groups + len(self.pending)  # pending includes the accepted, untrained groups
        requests = []
        for _ in range(max(0, target - have)):
            prompt = self.resubmit.pop(0) if self.resubmit else self.mixer.next()
            rid = next(self.ids)
            self.pending[rid] = prompt
            self.admitted[rid] = self.step
            requests.append(GenerationRequest(rid, list(prompt.prompt_ids), cfg.group_size, meta=prompt))
        if requests:
            self.engine.submit(requests)

    def _admission_cap(self) -> int:
        """How many groups may have been submitted (trained + pending) before the next one may start.

        AReaL's rule, floor((N_r - 1) / B) <= i + eta for the N_r-th rollout at policy version i, is
        N_r <= (i + eta + 1) * B; here eta is `async_steps`. Under `throttle` the version i is also taken at the
        oldest group still pending: while a group submitted at v is pending, trained + pending <= (v + eta + 1) * B,
        so the others fill at most v + eta full batches and that group is trained at a step <= v + eta."""
        cfg, B = self.config, self.config.prompts_per_step
        cap = (self.step + cfg.async_steps + 1) * B
        if cfg.staleness_policy == "throttle":
            assert cfg.max_staleness is not None  # TrainConfig checks it
            oldest = min(self.admitted.values(), default=self.step)
            cap = min(cap, (oldest + cfg.max_staleness + 1) * B)
        return cap

    def _release(self, request_id: int) -> None:
        """The group leaves the pipeline (trained or dropped): its place may go to a new one."""
        del self.pending[request_id]
        self.admitted.pop(request_id, None)

    # -- scoring -----------------------------------------------------------------------------------------
    async def _score_forever(self) -> None:
        cfg = self.config
        while True:
            groups = await asyncio.to_thread(self.engine.get_groups, 0.2)
            if cfg.async_steps == 0:  # synchronous: score a whole round at once (deterministic)
                while self.engine.in_flight_groups > 0:
                    groups += await asyncio.to_thread(self.engine.get_groups, 0.2)
                groups += self.engine.get_groups(0)
            if not groups:
                continue
            groups.sort(key=lambda g: g.request_id)
            prompts = [self.pending[g.request_id] for g in groups]
            # the teacher scores the same groups while the reward server does; its failure stops the run
            scored, teacher = await asyncio.gather(score_groups(self.scorer, self.tokenizer, prompts, groups),
                                                   teacher_scores(self.teacher, groups, self.config.distill_loss))
            for g, results, teacher_logprobs in zip(groups, scored, teacher):
                self._accept(g, results, teacher_logprobs)
            self._feed()
            self.ready.set()

    def _accept(self, group: Group, results, teacher_logprobs: list[TeacherScores] | None = None) -> None:
        cfg = self.config
        prompt = self.pending[group.request_id]
        bad = [r for r in results if r.status in ("invalid", "error")]
        if bad:  # never scored as a wrong answer: the whole group leaves the batch
            log.warning("dropping group of %s: %s %s", prompt.verifier_label, bad[0].status, bad[0].error)
            self.counters["dropped_" + bad[0].status] += 1
            self._release(group.request_id)
            return
        rewards = [float(r.reward) for r in results]
        truncated = [c.finish_reason == "length" for c in group.completions]
        if cfg.truncation == "penalize":
            rewards = [cfg.truncation_reward if t else r for r, t in zip(rewards, truncated)]
        self.counters["groups_scored"] += 1
        if (agreement := judge_agreement(results)) is not None:  # before filtering: a biased judge's groups tie
            self.counters["judged_groups"] += 1
            self.counters["judge_agreement"] += agreement  # type: ignore[assignment]  # typeshed: Counter values int
        self.tally.rewards.append((prompt.verifier_label, rewards))
        components = component_rewards(results)
        for name, (_, component) in (components or {}).items():
            self.tally.components.append((name, component))
        self.counters["timeouts"] += sum(r.status == "timeout" for r in results)
        self.tally.completions.extend((len(c.token_ids), t) for c, t in zip(group.completions, truncated))
        r = torch.tensor(rewards, dtype=torch.float64)
        samples = []
        # per-component advantages (decoupled): a weighted-sum composite's components, None for one reward
        decoupled = (components if cfg.advantage_per_component and cfg.truncation != "penalize" else None)
        if cfg.advantage_per_component and decoupled is None:
            self.counters["advantage_not_per_component"] += 1  # not a weighted-sum composite: one reward, as usual
        # decoupled, a group carries signal when any component varies (a gate's sum may not)
        zero_std = (all(is_zero_std(torch.tensor(c)) for _, c in decoupled.values()) if decoupled is not None
                    else is_zero_std(r))
        if cfg.filter_zero_std and zero_std and teacher_logprobs is None:  # distilled, every group has signal
            self.counters["filtered"] += 1
            if cfg.active_sampling:  # replaced by a fresh prompt on the next _feed
                self._release(group.request_id)
                return
        else:
            adv = (decoupled_group_advantages(decoupled, cfg.advantage_norm) if decoupled is not None
                   else group_advantages(r, cfg.advantage_norm)).tolist()
            for k, (c, a, t) in enumerate(zip(group.completions, adv, truncated)):
                token_adv, full = None, None
                if teacher_logprobs is not None:
                    sampled = teacher_logprobs[k]
                    if isinstance(sampled, torch.Tensor):  # full_*_kl: the KL is a loss term, the advantage the reward's
                        full = sampled
                        sampled = full.gather(1, torch.tensor(c.token_ids, dtype=torch.long)[:, None])[:, 0].tolist()
                        token_adv = [cfg.reward_weight * a] * len(c.token_ids)
                    else:
                        token_adv = mixed_advantages(a, c.logprobs, sampled, cfg.reward_weight, cfg.distill_weight)
                    self.tally.distill_kl += [s - te for s, te, m in zip(c.logprobs, sampled,
                                                                  c.loss_mask or [1] * len(c.token_ids)) if m]
                samples.append(TrainSample(list(c.prompt_ids or group.prompt_ids), c.token_ids, c.logprobs, c.versions,
                                           a, in_loss=not (t and cfg.truncation == "mask"), loss_mask=c.loss_mask,
                                           token_advantages=token_adv, teacher_logprobs=full))
        self.accepted.append(ScoredGroup(prompt, group, rewards, samples))

    # -- training ----------------------------------------------------------------------------------------
    def _take_batch(self) -> list[ScoredGroup] | None:
        cfg, B = self.config, self.config.prompts_per_step
        if cfg.max_staleness is not None:  # AReaL eta: too-old groups are dropped and replaced
            fresh: deque[ScoredGroup] = deque()
            for sg in self.accepted:
                oldest = min((min(s.loss_versions) for s in sg.samples if s.loss_versions), default=self.step)
                if self.step - oldest > cfg.max_staleness:
                    self.counters["stale_dropped"] += 1
                    self._release(sg.group.request_id)
                else:
                    fresh.append(sg)
            self.accepted = fresh
        budget_spent = cfg.active_sampling and self.counters["filtered"] >= cfg.max_sampling_rounds * B
        if len(self.accepted) >= B or (budget_spent and self.accepted):
            if cfg.staleness_policy == "throttle":
                return self._oldest_batch(min(B, len(self.accepted)))
            return [self.accepted.popleft() for _ in range(min(B, len(self.accepted)))]
        if budget_spent and not self.accepted and not self.pending:
            raise RuntimeError(f"no learning signal: {self.counters['filtered']} groups in a row had identical "
                               "rewards (check the verifier and the data, or disable filter_zero_std)")
        return None

    def _oldest_batch(self, size: int) -> list[ScoredGroup] | None:
        """throttle: the `size` groups submitted first (AReaL trains the older trajectories first), or None to wait
        while a group still generating would lag more than max_staleness if this step went without it (a short
        batch, when active sampling gave up, could otherwise step past it)."""
        order = sorted(self.accepted, key=lambda sg: self.admitted[sg.group.request_id])
        batch, rest = order[:size], order[size:]
        finished = {sg.group.request_id for sg in order}
        running = [v for rid, v in self.admitted.items() if rid not in finished]
        assert self.config.max_staleness is not None
        if running and self.step + 1 - min(running) > self.config.max_staleness:
            return None
        self.accepted = deque(rest)
        return batch

    async def _train_forever(self) -> None:
        cfg = self.config
        last = time.perf_counter()
        gen_tokens_before = self.engine.stats()["tokens"]
        engine_idle_before = self.engine.stats()["idle_s"]
        learner_busy = 0.0
        while self.step < cfg.total_steps:
            batch = self._take_batch()
            if batch is None:
                self.ready.clear()
                await self.ready.wait()
                continue
            samples = [s for sg in batch for s in sg.samples]
            lags = Counter(self.step - v for s in samples for v in s.loss_versions)
            t0 = time.perf_counter()
            stats = await asyncio.to_thread(self.learner.train_step, samples) if samples else {"skipped": 1.0}
            learner_busy += time.perf_counter() - t0
            self.step += 1
            self.trained_groups += len(batch)
            for sg in batch:
                self._release(sg.group.request_id)
            await self._push_weights()
            now = time.perf_counter()
            es = self.engine.stats()
            metrics = self._step_metrics(batch, stats, lags)
            wall = now - last
            metrics.update(step_s=wall, gen_tokens_per_s=(es["tokens"] - gen_tokens_before) / wall,
                           trained_tokens_per_s=stats.get("trained_tokens", 0.0) / wall,
                           learner_idle_frac=max(0.0, 1 - learner_busy / wall),
                           engine_idle_frac=min(1.0, (es["idle_s"] - engine_idle_before) / wall),
                           kv_stale_tokens=es["kv_stale_tokens"])
            metrics.update({k: v for k, v in es.items() if k.startswith("multiturn/")})  # turns, tool calls, tool time
            gen_tokens_before, engine_idle_before, learner_busy, last = es["tokens"], es["idle_s"], 0.0, now
            if cfg.eval_every and self.eval_prompts and self.step % cfg.eval_every == 0:
                t_eval = time.perf_counter()
                metrics.update(await evaluate(self.learner.model, self.tokenizer, self.eval_prompts, self.scorer, cfg))
                metrics["eval_s"] = time.perf_counter() - t_eval  # wall-clock-to-accuracy excludes this
            self.metrics.write(self.step, metrics, echo=self.step % max(cfg.log_every, 1) == 0)
            self.history.append(metrics)
            if (cfg.save_every and self.step % cfg.save_every == 0) or self.step == cfg.total_steps:
                self._checkpoint()
            self._feed()

    async def _push_weights(self) -> None:
        if not self.config.inflight_updates:  # wait for the engine to drain, then swap
            self.draining = True
            while self.engine.in_flight_groups > 0:
                await asyncio.sleep(0.01)
            self.draining = False
        # the last step's weights are applied before run() returns: stopping the engine would drop a queued swap
        last = self.step >= self.config.total_steps
        self.engine.update_weights(self.learner.weights(), self.step, wait=self.config.async_steps == 0 or last)

    def _step_metrics(self, batch: list[ScoredGroup], stats: dict, lags: Counter) -> dict:
        metrics = step_metrics(batch, stats, lags, self.tally, self.counters, self.config, self.scorer, self.teacher)
        self.scorer.latencies.clear()
        if self.teacher is not None:
            self.teacher.latencies.clear()
        self.tally, self.counters = StepTally(), Counter()
        return metrics

    # -- entry point -------------------------------------------------------------------------------------
    def run(self) -> list[dict]:
        cfg = self.config
        print("olmorl-train config:\n" + dump_config(cfg), flush=True)
        self._resume()
        self.history: list[dict] = []
        self.tally = StepTally()
        self.draining = False
        # first: a missing tracker package fails before anything starts
        self.metrics = MetricsLog.from_config(cfg, resumed_step=self.step if self.step > 0 else None)
        server = None
        engine_started = False
        stopped_by: BaseException | None = None
        was_deterministic = torch.are_deterministic_algorithms_enabled()
        try:  # from here on, however the run ends (Ctrl-C while the reward server starts too) it says so in one line
            urls = list(cfg.reward_urls)
            if not urls and cfg.ray_reward_replicas:  # a Ray Serve deployment on the trainer's cluster (_ray.py)
                from olmorl.trainer._ray import RayRewardService

                server = RayRewardService(cfg).start()
                urls = [server.url]
            if not urls:  # embedded mode: the same HTTP path, against a child olmorl-rewards on loopback
                Path(cfg.output_dir).mkdir(parents=True, exist_ok=True)
                server = embedded_reward_server(cfg, multiturn=has_env_rows(self.mixer))
                urls = [server.start().url]
            if has_env_rows(self.mixer):  # multi-turn rows: sessions on the same reward servers (_multiturn.py)
                self.engine = multiturn_engine(self.engine, self.tokenizer, urls, cfg)
            torch.use_deterministic_algorithms(cfg.deterministic or was_deterministic)
            engine_started = True  # stopped even if its start fails half-way
            self.engine.start()
            asyncio.run(self._main(urls))
        except BaseException as exc:
            stopped_by = exc
            raise
        finally:
            torch.use_deterministic_algorithms(was_deterministic)
            if engine_started:
                self.engine.stop()
            self.metrics.close()
            if server is not None:
                server.stop()
            self.metrics.console.stopped(self.step, latest_checkpoint(cfg.output_dir), stopped_by)
        return self.history

    async def _main(self, urls: list[str]) -> None:
        cfg = self.config
        self.scorer = GroupScorer(urls, api_key=cfg.reward_api_key, timeout_s=cfg.reward_timeout_s,
                                  batch_size=cfg.reward_batch_size, max_wait_s=cfg.reward_max_wait_s)
        self.ready = asyncio.Event()
        if cfg.eval_every and self.eval_prompts and self.step == 0:
            self.metrics.write(0, await evaluate(self.learner.model, self.tokenizer, self.eval_prompts, self.scorer, cfg))
        self._feed()
        scorer_task = asyncio.create_task(self._score_forever())
        try:
            trainer_task = asyncio.create_task(self._train_forever())
            done, _ = await asyncio.wait({scorer_task, trainer_task}, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # re-raise a failure of either side
        finally:
            scorer_task.cancel()
            await asyncio.gather(scorer_task, return_exceptions=True)
            await self.scorer.close()
            if self.teacher is not None:
                await self.teacher.close()
