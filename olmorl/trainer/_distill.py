"""On-policy distillation: a teacher scores the tokens the student sampled, and each token's advantage is the
per-token reverse KL to the teacher (Thinking Machines' "On-Policy Distillation", 2025; Qwen3's and GKD's
on-policy distillation):

    A_t = reward_weight * A_group + distill_weight * -(log p_student(x_t) - log p_teacher(x_t))

`log p_student` is the engine's logprob of the sampled token (the distribution it was drawn from), `log p_teacher`
the teacher's at temperature 1. Minimizing the sampled reverse KL, sum_t log p_student - log p_teacher, with the
policy gradient is what this advantage does; the GRPO objective around it (clipping, truncated IS for the
engine's lag) is unchanged. That is `distill_loss: sampled`.

`distill_loss: full_reverse_kl` (GKD's on-policy divergences, Agarwal et al. 2024) instead adds to each sampled
position's loss the reverse KL over the whole vocabulary, distill_weight * sum_v p_s(v) (log p_s(v) - log p_t(v)),
computed in the learner from the student's current logits and the teacher's logprobs of every vocabulary entry at
that position (`LocalTeacher.distributions`); the advantage is then the reward's alone. Its gradient is exact at
each position instead of a one-token estimate. `full_forward_kl` is the same with KL(p_t || p_s): cross-entropy to
the teacher's distribution on the student's prefixes, whose gradient is bounded where the reverse KL's grows with
how sure the teacher is (|log p_t| of a wrong token).

A teacher is a model directory scored in-process (`LocalTeacher`) or an `olmorl-engine` server
(`RemoteTeacher`, POST /v1/logprobs, see `olmorl.trainer.engines._server`). The loop scores each batch of
finished groups with the teacher while the reward server scores them (`Trainer._score_forever`); a teacher that
fails raises `TeacherError` and stops the run: a token is never given a 0 advantage for want of a teacher.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import TYPE_CHECKING, Any, Protocol

import httpx
import torch

if TYPE_CHECKING:
    from olmorl.trainer._config import TrainConfig
    from olmorl.trainer.engines._types import Group

Sequence = tuple[list[int], list[int]]  # (prompt token ids, completion token ids)
# a completion's teacher logprobs: of its sampled tokens, or (full_*_kl) a [tokens, vocab] tensor of every entry's
TeacherScores = list[float] | torch.Tensor


class TeacherError(RuntimeError):
    """The teacher could not score the student's tokens (unreachable, refused, or a wrong answer)."""


def reverse_kl_advantages(student_logprobs: list[float], teacher_logprobs: list[float]) -> list[float]:
    """-(log p_student(x_t) - log p_teacher(x_t)) per sampled token: positive where the teacher likes the token
    more than the student does."""
    if len(student_logprobs) != len(teacher_logprobs):
        raise ValueError(f"{len(student_logprobs)} student logprobs but {len(teacher_logprobs)} teacher logprobs")
    return [t - s for s, t in zip(student_logprobs, teacher_logprobs)]


def mixed_advantages(group_advantage: float, student_logprobs: list[float], teacher_logprobs: list[float],
                     reward_weight: float, distill_weight: float) -> list[float]:
    """Each token's advantage: the completion's GRPO advantage and the token's reverse-KL advantage, weighted."""
    return [reward_weight * group_advantage + distill_weight * kl
            for kl in reverse_kl_advantages(student_logprobs, teacher_logprobs)]


def full_reverse_kl(student_logprobs: torch.Tensor, teacher_logprobs: torch.Tensor) -> torch.Tensor:
    """KL(p_student || p_teacher) at each position, sum over the vocabulary of p_s (log p_s - log p_t), from
    [positions, vocab] logprobs; differentiable in the student's."""
    teacher = _same_vocabulary(student_logprobs, teacher_logprobs)
    return (student_logprobs.exp() * (student_logprobs - teacher)).sum(-1)


def full_forward_kl(student_logprobs: torch.Tensor, teacher_logprobs: torch.Tensor) -> torch.Tensor:
    """KL(p_teacher || p_student) at each position, sum of p_t (log p_t - log p_s): cross-entropy to the teacher's
    distribution on the student's own prefixes (GKD with beta 0); its logit gradient p_s - p_t stays in [-1, 1]."""
    teacher = _same_vocabulary(student_logprobs, teacher_logprobs)
    return (teacher.exp() * (teacher - student_logprobs)).sum(-1)


# distill_loss values computed over the whole vocabulary in the learner
FULL_KL = {"full_reverse_kl": full_reverse_kl, "full_forward_kl": full_forward_kl}


def _same_vocabulary(student_logprobs: torch.Tensor, teacher_logprobs: torch.Tensor) -> torch.Tensor:
    if student_logprobs.shape != teacher_logprobs.shape:
        raise ValueError(f"student logprobs {tuple(student_logprobs.shape)} but teacher logprobs "
                         f"{tuple(teacher_logprobs.shape)} (the teacher must share the student's vocabulary)")
    return teacher_logprobs.to(student_logprobs.device, student_logprobs.dtype)


@torch.no_grad()
def sequence_distributions(model: Any, sequences: list[Sequence]) -> list[torch.Tensor]:
    """Logprobs (temperature 1) of every vocabulary entry at each completion position of each (prompt, completion):
    a [completion tokens, vocab] float32 tensor per sequence, one forward pass for all of them."""
    from olmorl.trainer.learners._plain import completion_states
    from olmorl.trainer.learners._samples import TrainSample

    head = model.get_output_embeddings()
    out = [torch.empty((0, head.weight.shape[0])) for _ in sequences]
    scored = [k for k, (_, completion) in enumerate(sequences) if completion]
    if not scored:
        return out
    samples = [TrainSample(list(sequences[k][0]), list(sequences[k][1]), [], [], 0.0) for k in scored]
    flat, _ = completion_states(getattr(model, model.base_model_prefix), samples, device=head.weight.device)
    values = torch.log_softmax(head(flat).float(), dim=-1).cpu()
    start = 0
    for k, sample in zip(scored, samples):
        out[k] = values[start:start + len(sample.completion_ids)]
        start += len(sample.completion_ids)
    return out


@torch.no_grad()
def sequence_logprobs(model: Any, sequences: list[Sequence]) -> list[list[float]]:
    """Logprob (temperature 1) of every completion token of each (prompt, completion) under `model` (a transformers
    causal LM), one forward pass for all of them. The learner's own logprob path (right-padded rows, the chunked head)."""
    from olmorl.trainer.learners._plain import completion_states, token_logprobs
    from olmorl.trainer.learners._samples import TrainSample

    scored = [k for k, (_, completion) in enumerate(sequences) if completion]
    out: list[list[float]] = [[] for _ in sequences]
    if not scored:
        return out
    samples = [TrainSample(list(sequences[k][0]), list(sequences[k][1]), [], [], 0.0) for k in scored]
    head = model.get_output_embeddings()
    flat, targets = completion_states(getattr(model, model.base_model_prefix), samples, device=head.weight.device)
    logp, _ = token_logprobs(flat, head, targets, impl="naive" if head.bias is not None else "chunked")
    values = logp.float().cpu().tolist()
    start = 0
    for k, sample in zip(scored, samples):
        out[k] = values[start:start + len(sample.completion_ids)]
        start += len(sample.completion_ids)
    return out


class Teacher(Protocol):
    latencies: list[float]  # seconds per teacher call since the loop last read them

    async def logprobs(self, sequences: list[Sequence]) -> list[list[float]]: ...
    async def close(self) -> None: ...


class LocalTeacher:
    """A model directory loaded in this process (float32, eval mode); batches scored one after another in a
    worker thread, so the event loop (and the engine's thread) keep running."""

    def __init__(self, model_dir: str, *, batch_size: int, device: str = "cpu") -> None:
        from transformers import AutoModelForCausalLM

        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.model.to(torch.device(device))
        self.model.requires_grad_(False)
        self.batch_size = batch_size
        self.latencies: list[float] = []

    async def _batched(self, score: Any, sequences: list[Sequence]) -> list[Any]:
        """`score(model, batch)` over batches of `batch_size`, one after another in a worker thread."""
        out: list[Any] = []
        for start in range(0, len(sequences), self.batch_size):
            batch = sequences[start:start + self.batch_size]
            t0 = time.perf_counter()
            try:
                out += await asyncio.to_thread(score, self.model, batch)
            except (RuntimeError, IndexError, ValueError) as exc:  # e.g. a token id outside its vocabulary
                raise TeacherError(f"local teacher failed on {len(batch)} sequences: {type(exc).__name__}: {exc}") from exc
            self.latencies.append(time.perf_counter() - t0)
        return out

    async def logprobs(self, sequences: list[Sequence]) -> list[list[float]]:
        return checked(sequences, await self._batched(sequence_logprobs, sequences), "local teacher")

    async def distributions(self, sequences: list[Sequence]) -> list[torch.Tensor]:
        """`distill_loss: full_*_kl`: the teacher's logprobs of the whole vocabulary at every completion position."""
        out = await self._batched(sequence_distributions, sequences)
        for k, ((_, completion), values) in enumerate(zip(sequences, out)):
            if values.shape[0] != len(completion) or not bool(torch.isfinite(values).all()):
                raise TeacherError(f"local teacher: sequence {k} got logprobs of shape {tuple(values.shape)} "
                                   f"for {len(completion)} completion tokens, or a value that is not finite")
        return out

    async def close(self) -> None:
        return None


class RemoteTeacher:
    """An `olmorl-engine` server: POST {url}/v1/logprobs {"sequences": [{"prompt_ids", "completion_ids"}]} ->
    {"logprobs": [[float per completion token], ...]}. Batches of `batch_size` go out concurrently."""

    def __init__(self, url: str, *, batch_size: int, timeout_s: float, max_concurrency: int = 4) -> None:
        self.url = url.rstrip("/")
        self.batch_size = batch_size
        self.client = httpx.AsyncClient(timeout=timeout_s, transport=httpx.AsyncHTTPTransport(retries=2))
        self.slots = asyncio.Semaphore(max_concurrency)
        self.latencies: list[float] = []

    async def _call(self, batch: list[Sequence]) -> list[list[float]]:
        body = {"sequences": [{"prompt_ids": p, "completion_ids": c} for p, c in batch]}
        async with self.slots:
            t0 = time.perf_counter()
            try:
                response = await self.client.post(f"{self.url}/v1/logprobs", json=body)
            except httpx.HTTPError as exc:
                raise TeacherError(f"teacher {self.url} unreachable: {type(exc).__name__}: {exc}") from exc
            self.latencies.append(time.perf_counter() - t0)
        if response.status_code != 200:
            raise TeacherError(f"teacher {self.url} answered {response.status_code}: {response.text[:300]}")
        try:
            logprobs = response.json()["logprobs"]
        except (ValueError, KeyError, TypeError) as exc:
            raise TeacherError(f"teacher {self.url} sent no logprobs: {response.text[:300]}") from exc
        return checked(batch, logprobs, f"teacher {self.url}")

    async def logprobs(self, sequences: list[Sequence]) -> list[list[float]]:
        batches = [sequences[i:i + self.batch_size] for i in range(0, len(sequences), self.batch_size)]
        return [lp for part in await asyncio.gather(*map(self._call, batches)) for lp in part]

    async def close(self) -> None:
        await self.client.aclose()


def checked(sequences: list[Sequence], logprobs: object, who: str) -> list[list[float]]:
    """`logprobs` if it holds one finite, non-positive logprob per completion token of each sequence; else
    TeacherError (a short or NaN answer would silently misalign or poison the advantages)."""
    if not isinstance(logprobs, list) or len(logprobs) != len(sequences):
        raise TeacherError(f"{who}: expected logprobs for {len(sequences)} sequences, got "
                           f"{len(logprobs) if isinstance(logprobs, list) else type(logprobs).__name__}")
    for k, ((_, completion), values) in enumerate(zip(sequences, logprobs)):
        if not isinstance(values, list) or len(values) != len(completion):
            raise TeacherError(f"{who}: sequence {k} has {len(completion)} completion tokens but "
                               f"{len(values) if isinstance(values, list) else values!r} logprobs")
        if not all(isinstance(v, (int, float)) and math.isfinite(v) and v <= 1e-4 for v in values):
            raise TeacherError(f"{who}: sequence {k} has a logprob that is not a finite number <= 0: {values}")
    return logprobs


async def teacher_scores(teacher: Teacher | None, groups: list[Group], distill_loss: str
                         ) -> list[list[TeacherScores] | None]:
    """Per group, the teacher's logprobs of each completion's tokens (None per group without a teacher): of the
    sampled tokens, or with a full_*_kl distill_loss a [tokens, vocab] tensor of every vocabulary entry's."""
    if teacher is None:
        return [None] * len(groups)
    sequences = [(list(c.prompt_ids or g.prompt_ids), c.token_ids) for g in groups for c in g.completions]
    scores: list[TeacherScores]
    if distill_loss != "sampled":
        assert isinstance(teacher, LocalTeacher)  # TrainConfig allows full_*_kl with teacher_model only
        scores = list(await teacher.distributions(sequences))
    else:
        scores = list(await teacher.logprobs(sequences))
    flat = iter(scores)
    return [[next(flat) for _ in g.completions] for g in groups]


def build_teacher(config: TrainConfig) -> Teacher | None:
    """The config's teacher (`teacher_model` or `teacher_url`), or None when distillation is off."""
    if config.teacher_model:
        device = "cpu" if config.device == "auto" else config.device  # resolved at start (_device.resolve_device)
        return LocalTeacher(config.teacher_model, batch_size=config.teacher_batch_size, device=device)
    if config.teacher_url:
        return RemoteTeacher(config.teacher_url, batch_size=config.teacher_batch_size,
                             timeout_s=config.teacher_timeout_s)
    return None
