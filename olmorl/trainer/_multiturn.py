"""Multi-turn, tool-using rollouts, top to bottom. `MultiTurnEngine` wraps any engine behind the same interface.

A row that names an environment (`env`, `task`) becomes, per sample of its group, one session on the reward
server and a loop of turns:

    open session -> render prompt with the session's tools -> generate a turn (stops at EOS or the end of a
    tool call) -> parse tool calls -> call each on the session -> append the template's tool reply tokens
    -> next turn ... until an answer, `max_turns` or `max_total_tokens` -> /verify ends the session.

Each turn is a separate one-sample request to the wrapped engine, so a rollout waiting for a tool holds no
engine row: continuous batching keeps the others generating. Each turn names the rollout (`cache_key`): the
torch engine keeps the row's KV cache while the rollout waits on its tools and prefills only the tool reply
next turn (`engines._kept_cache`; a weight update in between drops it, so the turn is prefilled whole with
the weights current then). Token in, token out: the completion is the sampled ids, exactly, with the tool reply
ids between them; `loss_mask` is 1 on sampled tokens only, and logprobs and policy versions are kept per
sampled token across turns and weight updates. Rows without `env` pass through to the wrapped engine.
Session calls of rollouts that are ready together (opens, tool calls, verifies) go out as one batched request
each (`_sessions.SessionCalls`); each rollout still makes its own calls in order.
The finished group carries each completion's session Result, so the loop does not score it again.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import torch

from olmorl.clients import VerifyResult
from olmorl.trainer._sessions import RolloutError
from olmorl.trainer._toolcalls import ToolChat, tool_call_parser
from olmorl.trainer.engines._types import Completion, GenerationRequest, Group, take_groups

log = logging.getLogger("olmorl.trainer")


@dataclass(frozen=True)
class RolloutLimits:
    max_turns: int = 8  # assistant turns per rollout
    max_total_tokens: int = 1024  # sampled + tool reply tokens after the prompt
    max_new_tokens: int = 256  # per turn


@dataclass
class _Rollout:
    prompt: Any  # olmorl.trainer._data.Prompt with env set
    prompt_ids: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)
    turns: int = 0
    tool_calls: int = 0

    def add_sampled(self, ids: list[int], logprobs: list[float], versions: list[int]) -> None:
        self.tokens += ids
        self.mask += [1] * len(ids)
        self.logprobs += logprobs
        self.versions += versions

    def add_reply(self, ids: list[int]) -> None:
        """Tool reply tokens: no behaviour logprob (never in the loss); the version of the turn before them."""
        self.tokens += ids
        self.mask += [0] * len(ids)
        self.logprobs += [0.0] * len(ids)
        self.versions += [self.versions[-1] if self.versions else 0] * len(ids)


class MultiTurnEngine:
    """The `Engine` interface over another engine; multi-turn rows are driven here, others pass through."""

    def __init__(self, engine, chat: ToolChat, sessions, limits: RolloutLimits) -> None:
        self.inner, self.chat, self.sessions, self.limits = engine, chat, sessions, limits
        self._ids = itertools.count()
        self._turns: dict[str, asyncio.Future] = {}  # inner request id -> the turn's future
        self._out: queue.Queue[Group] = queue.Queue()
        self._in_flight = 0
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stats = {"rollouts": 0.0, "turns": 0.0, "tool_calls": 0.0, "tool_calls_malformed": 0.0,
                       "tool_s": 0.0, "waiting_for_tool": 0.0, "turns_discarded": 0.0,
                       "rollout_s": 0.0, "open_s": 0.0, "verify_s": 0.0, "tool_server_s": 0.0, "generate_s": 0.0,
                       "tokenize_s": 0.0}
        self._known_tools: dict[str, list | None] = {}  # env -> tools of its last session (None: it had an observation)

    # -- the Engine interface ------------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return self.inner.version

    @version.setter
    def version(self, value: int) -> None:
        self.inner.version = value

    def start(self) -> None:
        self.inner.start()
        started = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.call_soon(started.set)
            self._loop.create_task(self._pump())
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="olmorl-multiturn", daemon=True)
        self._thread.start()
        started.wait()

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:  # started
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=60)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
        self.inner.stop()

    def submit(self, requests: list[GenerationRequest]) -> None:
        self._check()
        if self._loop is None:
            raise RuntimeError("MultiTurnEngine.submit before start()")
        loop = self._loop
        passing = [r for r in requests if not _env_of(r)]
        with self._lock:
            self._in_flight += len(requests)
        if passing:
            self.inner.submit(passing)
        for req in requests:
            if _env_of(req):
                asyncio.run_coroutine_threadsafe(self._group(req), loop)

    def get_groups(self, timeout: float | None = None) -> list[Group]:
        self._check()
        return take_groups(self._out, timeout)

    @property
    def in_flight_groups(self) -> int:
        return self._in_flight

    def update_weights(self, weights: Mapping[str, torch.Tensor], version: int, wait: bool = False) -> None:
        self.inner.update_weights(weights, version, wait=wait)

    def pause(self) -> None:
        self.inner.pause()

    def resume(self) -> None:
        self.inner.resume()

    def stats(self) -> dict[str, float]:
        return {**self.inner.stats(), **{f"multiturn/{k}": v for k, v in self._stats.items()}}

    def get_rng_state(self):
        return self.inner.get_rng_state()

    def set_rng_state(self, state) -> None:
        self.inner.set_rng_state(state)

    def _check(self) -> None:
        if self._error is not None:
            raise RuntimeError("multi-turn rollouts failed") from self._error

    def _emit(self, group: Group) -> None:
        self._out.put(group)
        with self._lock:  # after the put: in_flight == 0 means every group is in the queue
            self._in_flight -= 1

    # -- driving the wrapped engine (the event loop thread) ------------------------------------------------
    async def _pump(self) -> None:
        try:
            while True:
                for group in await asyncio.to_thread(self.inner.get_groups, 0.05):
                    future = self._turns.pop(group.request_id, None)
                    if future is None:
                        self._emit(group)  # a single-turn row
                    elif not future.done():
                        future.set_result(group.completions[0])
        except asyncio.CancelledError:  # stop()
            raise
        except BaseException as exc:
            self._error = exc
            raise

    async def _turn(self, context: list[int], max_new_tokens: int, cache_key: str) -> Completion:
        rid = f"turn-{next(self._ids)}"
        future = asyncio.get_running_loop().create_future()
        self._turns[rid] = future
        start = time.perf_counter()
        self.inner.submit([GenerationRequest(rid, context, 1, max_new_tokens=max_new_tokens, stop=self.chat.stop,
                                             cache_key=cache_key)])
        try:
            return await future
        finally:
            self._stats["generate_s"] += time.perf_counter() - start

    async def _group(self, req: GenerationRequest) -> None:
        try:
            submitted = self.inner.version
            rollouts = await asyncio.gather(*(self._rollout(req.meta) for _ in range(req.n)))
            # each rollout carries its own prompt (the rendered tools); the group's is the first one's
            first = rollouts[0].prompt_ids if rollouts else None
            prompt_ids = first if first is not None else list(req.prompt_ids)
            self._emit(Group(req.request_id, prompt_ids, list(rollouts), req.meta, submitted))
        except asyncio.CancelledError:  # stop()
            raise
        except BaseException as exc:  # a bug here must stop the run, not hang it
            self._error = exc
            raise

    async def _rollout(self, prompt) -> Completion:
        """One sample: a whole session, turn by turn. Always returns a Completion; its `result` says how it ended."""
        ro, session_id = _Rollout(prompt), None
        key = f"rollout-{next(self._ids)}"  # the engine keeps this rollout's KV cache between its turns
        limits, self._stats["rollouts"] = self.limits, self._stats["rollouts"] + 1
        finish, last_text, began = "stop", "", time.perf_counter()
        try:
            ro.messages = list(prompt.messages)
            first_budget = min(limits.max_new_tokens, limits.max_total_tokens)
            start = time.perf_counter()
            opening = asyncio.ensure_future(self.sessions.create(prompt.env, prompt.task, prompt.env_options))
            # Opening a session starts a sandbox (tens of ms, queued on the server): when an earlier session of
            # this env had no observation, render with its tools and generate the first turn meanwhile.
            known = self._known_tools.get(prompt.env)
            first = None
            if known is not None:
                ro.prompt_ids = self._chat(self.chat.prompt_ids, ro.messages, known)
                first = asyncio.ensure_future(self._turn(list(ro.prompt_ids), first_budget, key))
            created = await opening
            self._stats["open_s"] += time.perf_counter() - start
            session_id = created.id
            self._known_tools[prompt.env] = None if created.observation else created.tools
            if created.observation or created.tools != known:  # the guess was wrong: that turn is dropped
                if first is not None:
                    self._stats["turns_discarded"] += 1
                first = None
                if created.observation:
                    ro.messages.append({"role": "user", "content": created.observation})
                ro.prompt_ids = self._chat(self.chat.prompt_ids, ro.messages, created.tools)
            while True:
                budget = min(limits.max_new_tokens, limits.max_total_tokens - len(ro.tokens))
                turn = await (first or self._turn(ro.prompt_ids + ro.tokens, budget, key))
                first = None
                ro.add_sampled(turn.token_ids, turn.logprobs, turn.versions)
                ro.turns += 1
                self._stats["turns"] += 1
                last_text = self._chat(self.chat.text, turn.token_ids)
                ro.messages.append({"role": "assistant", "content": last_text})
                calls = self._chat(self.chat.parser.parse, last_text) if turn.finish_reason == "stop" else []
                if not calls:  # an answer, or cut by the token budget
                    finish = turn.finish_reason
                    break
                if ro.turns >= limits.max_turns:
                    finish = "max_turns"
                    break
                replies, done = await self._call_tools(session_id, calls, ro)
                reply_ids = self._chat(self.chat.reply_ids, replies, ended_with_eos=bool(turn.token_ids)
                                                and turn.token_ids[-1] in self.chat.eos_ids)
                if done:
                    break
                if len(ro.tokens) + len(reply_ids) >= limits.max_total_tokens:
                    finish = "length"
                    break
                ro.add_reply(reply_ids)
            start = time.perf_counter()
            result = await self.sessions.verify(session_id, last_text, ro.messages)
            self._stats["verify_s"] += time.perf_counter() - start
            session_id = None  # /verify ended it
        except RolloutError as exc:
            result = VerifyResult(verifier=prompt.env, reward=0.0, status=exc.status, error=str(exc))
        finally:
            if session_id is not None:
                await self.sessions.close(session_id)
            self._stats["rollout_s"] += time.perf_counter() - began
        return Completion(ro.tokens, ro.logprobs, ro.versions, finish, loss_mask=ro.mask, prompt_ids=ro.prompt_ids,
                          result=result)

    def _chat(self, step, *args, **kwargs):
        """A template / tokenizer / parser step, its time counted (tokenization is on the rollout's path)."""
        start = time.perf_counter()
        try:
            return step(*args, **kwargs)
        finally:
            self._stats["tokenize_s"] += time.perf_counter() - start

    async def _call_tools(self, session_id: str, calls, ro: _Rollout) -> tuple[list[dict], bool]:
        """Run the turn's calls in order on the session; the tool messages, and whether the env is done."""
        replies, done = [], False
        for call in calls:
            ro.tool_calls += 1
            self._stats["tool_calls"] += 1
            if call.error:  # the model's mistake: it reads why, the session is not bothered
                self._stats["tool_calls_malformed"] += 1
                replies.append({"role": "tool", "name": call.name, "content": f"error: {call.error}"})
                continue
            start = time.perf_counter()
            self._stats["waiting_for_tool"] += 1
            try:
                out = await self.sessions.tool(session_id, call.name, call.arguments)
            finally:
                self._stats["waiting_for_tool"] -= 1
                self._stats["tool_s"] += time.perf_counter() - start
            self._stats["tool_server_s"] += (out.elapsed_ms or 0.0) / 1000  # the tool's own run on the server
            if out.status == "error":  # the environment or its sandbox failed, not the model
                raise RolloutError(f"tool {call.name!r} failed in the environment: {out.error}")
            replies.append({"role": "tool", "name": call.name, "content": out.output})
            done = done or out.done
            if done:
                break
        return replies, done

    async def _shutdown(self) -> None:
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and t not in self.sessions.cleanup]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # their `finally` deletes the open sessions
        await self.sessions.aclose()


def _env_of(request: GenerationRequest) -> str | None:
    return getattr(request.meta, "env", None)


def has_env_rows(mixer) -> bool:
    return any(p.env for source in mixer.sources for p in source)


def warm_interpreters(cfg) -> int:
    """The embedded reward server's python pool (`sessions.warm_interpreters`): one interpreter per rollout open at
    once, so no session open waits for an interpreter to start. The loop keeps at most (async_steps + 1) x
    prompts_per_step groups pending (its admission cap) and opens every rollout of a group at once; the server
    holds at most `sessions.max_sandboxed` sandboxed sessions, so more would wait unused."""
    from olmorl.rewards._settings import SessionSettings

    open_at_once = (cfg.async_steps + 1) * cfg.prompts_per_step * cfg.group_size
    return min(open_at_once, SessionSettings().max_sandboxed)


def multiturn_engine(engine, tokenizer, urls: list[str], cfg) -> MultiTurnEngine:
    """`engine` wrapped for a run whose data has multi-turn rows (sessions on the reward servers at `urls`)."""
    from olmorl.trainer._sessions import SessionCalls

    chat = ToolChat(tokenizer, tool_call_parser(cfg.tool_call_parser))
    sessions = SessionCalls(urls, api_key=cfg.reward_api_key, timeout_s=cfg.reward_timeout_s,
                            batch_window_s=cfg.session_batch_window_s)
    limits = RolloutLimits(max_turns=cfg.max_turns, max_total_tokens=cfg.max_total_tokens,
                           max_new_tokens=cfg.max_new_tokens)
    return MultiTurnEngine(engine, chat, sessions, limits)
