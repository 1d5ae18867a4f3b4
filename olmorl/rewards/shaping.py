"""Shaping verifiers: rewards for how a completion is written, not whether it is right. Each is usable alone or
as a component of a `composite` item (olmorl.rewards._composite), where it is typically weighted against a
correctness check.

| name | reward | anchor |
|---|---|---|
| `format` | 1.0 when every structure check passes, else 0.0 | DeepSeek-R1 format reward (think-then-answer) |
| `overlong` | 0 up to `max_tokens - buffer_tokens`, then linearly to -1 at `max_tokens`, -1 past it | DAPO, Eq. 13 |
| `repetition` | `max_penalty * (1 - distinct n-grams / n-grams)`, in [max_penalty, 0] | Yeo et al. 2025, App. |
| `length` | cosine-scaled by correctness and token count, or a target-length penalty | Yeo et al. 2025; L1 |

`overlong` and `length` read the completion's token count from the item's `completion_tokens` (the trainer and
the adapters fill it in); an item without one is `invalid`, never a made-up length.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from olmorl.rewards.engine._registry import InvalidInput, Score, Task, Verifier, register

_THINK_ANSWER = "^\\s*<{think}>.*?</{think}>\\s*<{answer}>.*?</{answer}>\\s*$"


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _ResponseOnly(Verifier):
    """A shaping verifier that reads the response (and its token count) alone: no ground truth."""

    ground_truth_type = None


def _tokens(task: Task, verifier: str) -> int:
    if task.completion_tokens is None:
        raise InvalidInput(f"the {verifier} verifier needs the item's completion_tokens (the completion's token "
                           "count; olmorl-train and the adapters fill it in; /openrlhf/get_reward counts it with the "
                           "server's tokenizer setting, OLMORL_TOKENIZER)")
    return task.completion_tokens


# -- format --------------------------------------------------------------------------------------------------
class FormatOptions(_Options):
    layout: Literal["think_answer"] | None = Field(
        default=None, description="think_answer: the whole response is <think>...</think> then <answer>...</answer>, "
        "each exactly once (tag names from think_tag / answer_tag).")
    think_tag: str = Field(default="think", pattern=r"^[A-Za-z_][\w-]*$")
    answer_tag: str = Field(default="answer", pattern=r"^[A-Za-z_][\w-]*$")
    required_tags: list[str] = Field(default_factory=list, description="Each must appear as a <tag>...</tag> pair.")
    regex: str | None = Field(default=None, description="Python regex the response must contain (re.search, DOTALL); "
                                                        "anchor it with ^...$ to match the whole response.")

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regex: {exc}") from None
        return value

    @field_validator("required_tags")
    @classmethod
    def _tag_names(cls, tags: list[str]) -> list[str]:
        bad = [tag for tag in tags if not re.fullmatch(r"[A-Za-z_][\w-]*", tag)]
        if bad:
            raise ValueError(f"not tag names: {bad}")
        return tags

    @model_validator(mode="after")
    def _some_check(self) -> FormatOptions:
        if self.layout is None and not self.required_tags and self.regex is None:
            raise ValueError("no check: give layout, required_tags or regex")
        return self


@register
class FormatVerifier(_ResponseOnly):
    """Structure checks. `layout: think_answer` is the format reward of DeepSeek-R1 (Guo et al. 2025, "DeepSeek-R1:
    Incentivizing Reasoning Capability in LLMs via RL", §2.2.2): reasoning in think tags, then the answer in answer
    tags, nothing else. The reward is 1.0 when every check given passes, else 0.0; `details.checks` says which."""

    name = "format"
    description = ("Structure checks: think-then-answer layout, required <tag>...</tag> pairs, a regex. "
                   "1.0 when all pass, else 0.0. No ground truth.")
    options_model = FormatOptions

    def score(self, task: Task) -> Score:
        opts: FormatOptions = task.options
        text = task.response
        checks: dict[str, bool] = {}
        if opts.layout == "think_answer":
            think, answer = re.escape(opts.think_tag), re.escape(opts.answer_tag)
            whole = re.match(_THINK_ANSWER.format(think=think, answer=answer), text, re.DOTALL) is not None
            once = all(text.count(f"<{tag}>") == 1 and text.count(f"</{tag}>") == 1
                       for tag in (opts.think_tag, opts.answer_tag))
            checks["layout"] = whole and once
        for tag in opts.required_tags:
            checks[f"tag:{tag}"] = re.search(f"<{re.escape(tag)}>.*?</{re.escape(tag)}>", text, re.DOTALL) is not None
        if opts.regex is not None:
            checks["regex"] = re.search(opts.regex, text, re.DOTALL) is not None
        passed = all(checks.values())
        return Score(float(passed), {"checks": checks})


# -- overlong ------------------------------------------------------------------------------------------------
class OverlongOptions(_Options):
    max_tokens: int = Field(gt=0, description="L_max: the generation limit, in tokens.")
    buffer_tokens: int = Field(gt=0, description="L_cache: the punishment interval before max_tokens (DAPO: 4096 "
                                                  "of 20480).")

    @model_validator(mode="after")
    def _buffer_fits(self) -> OverlongOptions:
        if self.buffer_tokens > self.max_tokens:
            raise ValueError(f"buffer_tokens ({self.buffer_tokens}) exceeds max_tokens ({self.max_tokens})")
        return self


def overlong_penalty(tokens: int, max_tokens: int, buffer_tokens: int) -> float:
    """DAPO's soft overlong punishment (Yu et al. 2025, "DAPO: An Open-Source LLM Reinforcement Learning System at
    Scale", arXiv:2503.14476, Eq. 13): 0 while |y| <= L_max - L_cache; ((L_max - L_cache) - |y|) / L_cache within the
    buffer, a linear ramp from 0 to -1; -1 past L_max."""
    start = max_tokens - buffer_tokens
    if tokens <= start:
        return 0.0
    if tokens <= max_tokens:
        return (start - tokens) / buffer_tokens
    return -1.0


@register
class OverlongVerifier(_ResponseOnly):
    __doc__ = overlong_penalty.__doc__
    name = "overlong"
    reads_completion_tokens = True
    description = ("DAPO soft overlong punishment from the item's completion_tokens: 0, then a linear ramp to -1 "
                   "over the buffer_tokens before max_tokens, -1 past it. No ground truth.")
    options_model = OverlongOptions

    def score(self, task: Task) -> Score:
        opts: OverlongOptions = task.options
        tokens = _tokens(task, self.name)
        return Score(overlong_penalty(tokens, opts.max_tokens, opts.buffer_tokens), {"tokens": tokens})


# -- repetition ----------------------------------------------------------------------------------------------
class RepetitionOptions(_Options):
    ngram_size: int = Field(default=3, ge=1, le=64, description="n of the word n-grams counted.")
    max_penalty: float = Field(default=-1.0, le=0.0, ge=-1e6, description="The reward when every n-gram repeats.")


def repetition_penalty(text: str, ngram_size: int, max_penalty: float) -> tuple[float, int, int]:
    """The n-gram repetition penalty of Yeo et al. 2025 ("Demystifying Long Chain-of-Thought Reasoning in LLMs",
    arXiv:2502.03373, appendix): over the lower-cased whitespace words, `max_penalty * (1 - distinct / total)`
    n-grams. Text with fewer than n words has no n-gram and no penalty. Returns (reward, distinct, total)."""
    words = text.lower().split()
    total = len(words) - ngram_size + 1
    if total <= 0:
        return 0.0, 0, 0
    distinct = len({tuple(words[i:i + ngram_size]) for i in range(total)})
    return max_penalty * (1 - distinct / total), distinct, total


@register
class RepetitionVerifier(_ResponseOnly):
    __doc__ = repetition_penalty.__doc__
    name = "repetition"
    description = ("Word n-gram repetition penalty (Yeo et al. 2025): max_penalty * (1 - distinct/total n-grams), "
                   "in [max_penalty, 0]. No ground truth.")
    options_model = RepetitionOptions

    def score(self, task: Task) -> Score:
        opts: RepetitionOptions = task.options
        reward, distinct, total = repetition_penalty(task.response, opts.ngram_size, opts.max_penalty)
        return Score(reward, {"distinct_ngrams": distinct, "ngrams": total})


# -- length --------------------------------------------------------------------------------------------------
class LengthOptions(_Options):
    mode: Literal["cosine", "target"] = "cosine"
    max_tokens: int | None = Field(default=None, gt=0, description="cosine: L_max, the generation limit.")
    correct_r0: float = Field(default=2.0, description="cosine: reward of a correct answer of length 0.")
    correct_rL: float = Field(default=1.0, description="cosine: reward of a correct answer of length max_tokens.")
    wrong_r0: float = Field(default=-10.0, description="cosine: reward of a wrong answer of length 0.")
    wrong_rL: float = Field(default=0.0, description="cosine: reward of a wrong answer of length max_tokens.")
    exceed_reward: float = Field(default=-10.0, description="cosine: reward once the length reaches max_tokens.")
    target_tokens: int | None = Field(default=None, gt=0, description="target: the wanted length.")
    alpha: float = Field(default=0.0003, ge=0.0, description="target: penalty per token away from target_tokens.")

    @model_validator(mode="after")
    def _mode_fields(self) -> LengthOptions:
        if self.mode == "cosine" and self.max_tokens is None:
            raise ValueError("mode cosine needs max_tokens")
        if self.mode == "target" and self.target_tokens is None:
            raise ValueError("mode target needs target_tokens")
        return self


class Correctness(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    correct: bool = Field(description="Whether the answer is right; in a composite, set by `correct_from`.")


def cosine_length_reward(tokens: int, correct: bool, opts: LengthOptions) -> float:
    """The cosine length-scaling reward of Yeo et al. 2025 ("Demystifying Long Chain-of-Thought Reasoning in LLMs",
    arXiv:2502.03373, §4.2): CosFn(t, T, r0, rL) = rL + (r0 - rL)(1 + cos(t pi / T)) / 2, with (r0, rL) the correct
    pair (default 2, 1: shorter right answers earn more) or the wrong pair (default -10, 0: a wrong answer is
    punished less the longer it thinks), and `exceed_reward` (default -10) once t reaches T. Defaults are the
    paper's."""
    assert opts.max_tokens is not None  # checked by LengthOptions
    if tokens >= opts.max_tokens:
        return opts.exceed_reward
    r0, rl = (opts.correct_r0, opts.correct_rL) if correct else (opts.wrong_r0, opts.wrong_rL)
    return rl + 0.5 * (r0 - rl) * (1 + math.cos(tokens * math.pi / opts.max_tokens))


@register
class LengthVerifier(Verifier):
    """`mode: cosine` is `cosine_length_reward` and needs the answer's correctness as ground truth `{"correct":
    bool}` (in a composite, `correct_from` names the component that decides it). `mode: target` is the length term
    of L1's LCPO reward (Aggarwal & Welleck 2025, "L1: Controlling How Long A Reasoning Model Thinks", arXiv:
    2503.04697): `-alpha * |target_tokens - tokens|`, no ground truth; add the correctness term as a component."""

    name = "length"
    reads_completion_tokens = True
    description = ("Length reward from the item's completion_tokens: cosine-scaled by correctness (Yeo et al. "
                   "2025; ground truth {\"correct\": bool}) or -alpha*|target - tokens| (L1).")
    ground_truth_type = Correctness | None
    options_model = LengthOptions

    def score(self, task: Task) -> Score:
        opts: LengthOptions = task.options
        tokens = _tokens(task, self.name)
        if opts.mode == "target":
            assert opts.target_tokens is not None
            return Score(-opts.alpha * abs(opts.target_tokens - tokens), {"tokens": tokens})
        if task.ground_truth is None:
            raise InvalidInput('ground_truth: mode cosine needs {"correct": true|false} (in a composite, set '
                               "correct_from to the component that decides it)")
        correct = task.ground_truth.correct
        return Score(cosine_length_reward(tokens, correct, opts), {"tokens": tokens, "correct": correct})
