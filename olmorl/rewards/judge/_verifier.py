"""The `judge` verifier and its open-instruct-named presets (`general-quality`, `general-quality_ref`, ...).

The engine resolves an alias to a verifier name and passes only options on, so a name that implies a
mode and template is its own small registered subclass with different option defaults. All of them
share one backend per event loop and judge settings: one client, one concurrency limit, one cache.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from olmorl.rewards.engine._registry import InvalidInput, ItemError, Score, Task, Verifier, register
from olmorl.rewards._settings import JudgeSettings, Settings
from olmorl.rewards.judge._cache import CachedJudgement, JudgeCache, cache_key
from olmorl.rewards.judge._client import JudgeCallError, JudgeClient
from olmorl.rewards.judge._parse import JudgementError, parse_judgement
from olmorl.rewards.judge._templates import (
    TEMPLATES,
    Mode,
    TemplateName,
    render_prompt,
    render_question,
    render_references,
    strip_reasoning,
    truncate_middle,
)

NOT_CONFIGURED = ("the LM judge is not configured: set OLMORL_JUDGE_BASE_URL and OLMORL_JUDGE_MODEL in the "
                  "environment of the reward server, or of `olmorl-rewards verify` when it scores in-process")
def not_configured() -> ItemError:
    return ItemError("error", NOT_CONFIGURED, {"reason": "judge_not_configured"})
_RAW_EXCERPT_CHARS = 1000


def require_question(prompt: Any) -> None:
    """Every judge needs the question it judges answers to."""
    if prompt is None or (isinstance(prompt, (str, list)) and not prompt):
        raise InvalidInput("prompt: the judge needs the question (a string or chat messages)")


def _options_model(name: str, mode: Mode | None, template: TemplateName) -> type[BaseModel]:
    return create_model(
        name,
        __config__=ConfigDict(extra="forbid", frozen=True),
        mode=(Mode | None, Field(default=mode, description=(
            "`reference`: judge against the reference answer in ground_truth; `open`: judge the response "
            "on its own (ground_truth ignored). Unset: reference when ground_truth is given, else open."))),
        template=(TemplateName, Field(default=template, description="Judging rubric.")),
    )


JudgeOptions = _options_model("JudgeOptions", None, "quality")


@dataclass
class _Backend:
    client: JudgeClient
    cache: JudgeCache
    users: int = 0
    calls: dict[str, asyncio.Task[Any]] = field(default_factory=dict)  # identical judgements in flight


_BACKENDS: dict[tuple[int, str], _Backend] = {}


async def _acquire(settings: JudgeSettings) -> tuple[tuple[int, str], _Backend]:
    key = (id(asyncio.get_running_loop()), settings.model_dump_json())
    backend = _BACKENDS.get(key)
    if backend is None:
        backend = _Backend(JudgeClient(settings), JudgeCache(settings.cache_size, settings.cache_path))
        _BACKENDS[key] = backend
        await backend.cache.open()
        await backend.client.start()
    backend.users += 1
    return key, backend


async def _release(key: tuple[int, str]) -> None:
    backend = _BACKENDS.get(key)
    if backend is None:
        return
    backend.users -= 1
    if backend.users <= 0:
        del _BACKENDS[key]
        for call in backend.calls.values():
            call.cancel()
        await asyncio.gather(*backend.calls.values(), return_exceptions=True)
        await backend.client.stop()
        await backend.cache.close()


@register
class JudgeVerifier(Verifier):
    name = "judge"
    aliases: ClassVar[tuple[str, ...]] = ("lm_judge", "llm_judge")
    description = ("LM judge over an OpenAI-compatible endpoint (server-configured): scores a chat response "
                   "in [0, 1], against a reference answer or any of several (mode `reference`) or on its own "
                   "(`open`).")
    ground_truth_type: ClassVar[Any] = str | list[str] | None
    options_model: ClassVar[type[BaseModel]] = JudgeOptions
    runs_in = "loop"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.judge = settings.judge
        self._backend_key: tuple[int, str] | None = None
        self._backend: _Backend | None = None

    # -- lifecycle -----------------------------------------------------------------------------------
    async def start(self) -> None:
        if self._backend is None:
            self._backend_key, self._backend = await _acquire(self.judge)

    async def stop(self) -> None:
        if self._backend_key is not None:
            key, self._backend_key, self._backend = self._backend_key, None, None
            await _release(key)

    def readiness(self) -> dict[str, Any] | None:
        if type(self) is not JudgeVerifier:
            return None  # the presets share the `judge` backend; report it once
        if self._backend is None or not self._backend.client.configured:
            return {"ready": False, "configured": False, "error": NOT_CONFIGURED}
        client = self._backend.client
        return {"ready": any(e.reachable for e in client.endpoints), "configured": True, **client.state(),
                "cache": self._backend.cache.stats()}

    def question_of(self, task: Task) -> tuple[str, bool]:
        """The question as the judge sees it, truncated by the rule; and whether it was cut."""
        return truncate_middle(render_question(task.prompt), self.judge.max_input_chars)  # type: ignore[arg-type]

    def deadline_s(self, task: Task) -> float:
        return self.judge.item_deadline_s

    def notes(self) -> list[str]:
        if not (self.judge.base_url and self.judge.model):
            return [NOT_CONFIGURED]
        return [f"judge model {self.judge.model}, scale {self.judge.score_min}..{self.judge.score_max}"]

    # -- validation ----------------------------------------------------------------------------------
    def make_task(self, response: str, ground_truth: Any, options: dict[str, Any], prompt: Any) -> Task:
        task = super().make_task(response, ground_truth, options, prompt)
        given = [task.ground_truth] if isinstance(task.ground_truth, str) else (task.ground_truth or [])
        references = [r for r in given if r.strip()]
        has_reference = bool(references)
        mode = task.options.mode or ("reference" if has_reference else "open")
        if mode == "reference" and not has_reference:
            raise InvalidInput("ground_truth: mode 'reference' needs the reference answer (a non-empty string, "
                               "or a list of them, any one acceptable)")
        reference = render_references(references, task.options.template) if has_reference else None
        if (task.options.template, mode) not in TEMPLATES:
            raise InvalidInput(f"options: template {task.options.template!r} needs mode 'reference' (its "
                               "ground_truth is what the response is checked against)")
        require_question(prompt)
        return Task(response=task.response, ground_truth=reference if mode == "reference" else None,
                    options=task.options.model_copy(update={"mode": mode}), prompt=task.prompt)

    # -- scoring -------------------------------------------------------------------------------------
    async def score_async(self, task: Task) -> Score:
        backend = self._backend
        if backend is None or not backend.client.configured:
            raise not_configured()
        template, mode = task.options.template, task.options.mode
        limit = self.judge.max_input_chars
        question, q_cut = self.question_of(task)
        response, r_cut = truncate_middle(strip_reasoning(task.response), limit)
        reference, ref_cut = (truncate_middle(task.ground_truth, limit) if mode == "reference" else (None, False))
        base = {"template": template, "mode": mode, "model": self.judge.model,
                "truncated": [n for n, cut in (("question", q_cut), ("response", r_cut), ("reference", ref_cut))
                              if cut]}
        if not response:
            return Score(0.0, {**base, "reason": "empty_response", "cache_hit": False, "attempts": 0})

        key = cache_key(template=template, mode=mode, question=question, response=response, reference=reference,
                        model=self.judge.model or "", score_min=self.judge.score_min, score_max=self.judge.score_max)
        cached = await backend.cache.get(key)
        if cached is not None:
            return Score(self._reward(cached.score), {**base, "reasoning": cached.reasoning, "score": cached.score,
                                         "cache_hit": True, "attempts": 0})
        call = backend.calls.get(key)
        coalesced = call is not None
        if call is None:
            prompt_text = render_prompt(template, mode, question=question, response=response, reference=reference,
                                        score_min=self.judge.score_min, score_max=self.judge.score_max)
            call = asyncio.create_task(self._judge(backend, key, prompt_text, base))
            backend.calls[key] = call
            call.add_done_callback(lambda _: backend.calls.pop(key, None))
        # Shielded: a caller that times out does not cancel the call that identical items wait on.
        try:
            score = await asyncio.shield(call)
        except ItemError as exc:
            if coalesced:
                raise ItemError(exc.status, exc.message, {**exc.details, "coalesced": True}, exc.elapsed_s) from None
            raise
        if coalesced:
            score = Score(score.reward, {**score.details, "coalesced": True}, score.elapsed_s)
        return score

    def _reward(self, score: float) -> float:
        lo, hi = self.judge.score_min, self.judge.score_max
        if self.judge.reward_mapping == "over_max":  # open-instruct: 1..10 gives 0.1..1
            return score / hi if hi > 0 else 0.0
        return (score - lo) / (hi - lo) if hi > lo else 0.0

    async def _judge(self, backend: _Backend, key: str, prompt_text: str, base: dict[str, Any]) -> Score:
        try:
            reply = await backend.client.complete([{"role": "user", "content": prompt_text}])
        except JudgeCallError as exc:
            raise ItemError("error", str(exc), {**base, "reason": "judge_unavailable", "cache_hit": False,
                                                "attempts": exc.attempts}) from None
        details = {**base, "cache_hit": False, "attempts": reply.attempts, "endpoint": reply.endpoint}
        if reply.finish_reason == "length":  # whatever it wrote last is not a verdict it finished
            raw = reply.text or ""
            raise ItemError("error", "the judge reply was cut off (finish_reason=length) before its verdict; raise "
                                     "judge.max_tokens", {**details, "reason": "judge_cut_off",
                                                          "raw": raw[:_RAW_EXCERPT_CHARS]}, reply.at_judge_s)
        lo, hi = self.judge.score_min, self.judge.score_max
        try:
            judgement = parse_judgement(reply.text, lo, hi)
        except JudgementError as exc:
            raw = reply.text or ""
            raise ItemError("error", f"could not read the judge's score: {exc}",
                            {**details, "reason": "unparseable_judgement", "raw": raw[:_RAW_EXCERPT_CHARS]},
                            reply.at_judge_s) from None
        reward = self._reward(judgement.score)
        await backend.cache.put(key, CachedJudgement(reward, judgement.score, judgement.reasoning,
                                                     self.judge.model or ""))
        return Score(reward, {**details, "reasoning": judgement.reasoning, "score": judgement.score,
                              "parsed_from": judgement.parsed_from}, elapsed_s=reply.at_judge_s)


def _preset(name: str, mode: Mode | None, template: TemplateName) -> type[JudgeVerifier]:
    options = _options_model(f"Judge_{name.replace('-', '_')}_Options", mode, template)
    described = f"mode={mode}" if mode else "mode=reference if ground_truth else open"
    attrs = {"name": name, "aliases": (), "options_model": options, "__module__": __name__,
             "description": f"open-instruct's `{name}`: the `judge` verifier with {described}, "
                            f"template={template} (options may override)."}
    return register(type(f"Judge_{name.replace('-', '_')}", (JudgeVerifier,), attrs))


# open-instruct's LMJudgeVerifier names. Its factuality / creative-writing / refusal judges compare with
# the label (reference); its `quality` ignores the label; its `safety` was an empty stub; its
# `quality_rubric` label is the grading criteria; `web_instruct_general_verifier` checks the final answer.
# (open-instruct scores the last two 0/1; here they use the judge scale like the rest.)
PRESETS: dict[str, tuple[Mode | None, TemplateName]] = {
    "general-quality": ("open", "quality"),
    "general-quality_ref": ("reference", "quality"),
    "general-factuality": ("reference", "factuality"),
    "general-creative_writing": ("reference", "creative_writing"),
    "general-refusal": ("reference", "refusal"),
    "general-safety": (None, "safety"),
    "general-quality_rubric": ("reference", "rubric"),
    "general-web_instruct_general_verifier": ("reference", "answer_match"),
}
PRESET_VERIFIERS = {name: _preset(name, mode, template) for name, (mode, template) in PRESETS.items()}
