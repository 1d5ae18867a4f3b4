"""What a learner trains on: one scored completion with its prompt, the engine's logprobs and policy versions,
its advantage and which tokens the loss counts. The loop builds these from scored groups; the plain and
DeepSpeed learners and the row packer all take them."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class TrainSample:
    prompt_ids: list[int]
    completion_ids: list[int]
    behav_logprobs: list[float]  # engine logprobs of the completion tokens
    versions: list[int]  # policy version per completion token
    advantage: float
    in_loss: bool = True  # False for masked (e.g. truncated) completions
    loss_mask: list[int] | None = None  # per completion token: 0 = not sampled (tool replies); None = all sampled
    token_advantages: list[float] | None = None  # one per completion token (distillation); None = `advantage` on each
    teacher_logprobs: torch.Tensor | None = None  # full-vocabulary distill_loss: [tokens, vocab] teacher logprobs

    def advantages(self) -> list[float]:
        """The advantage of every completion token."""
        return [self.advantage] * len(self.completion_ids) if self.token_advantages is None else self.token_advantages

    @property
    def loss_tokens(self) -> int:
        """Tokens the loss and its normalization count: the sampled ones."""
        return len(self.completion_ids) if self.loss_mask is None else sum(self.loss_mask)

    def token_weights(self, weight: float) -> list[float]:
        """`weight` on every sampled completion token, 0 on the others."""
        return [weight] * len(self.completion_ids) if self.loss_mask is None else [weight * m for m in self.loss_mask]

    @property
    def loss_versions(self) -> list[int]:
        """Policy versions of the sampled tokens (staleness counts these)."""
        return self.versions if self.loss_mask is None else [v for v, m in zip(self.versions, self.loss_mask) if m]


def token_sequence_ids(samples: list[TrainSample]) -> list[int]:
    """The index of its sample for each completion token of `samples`, in the learners' flat token order
    (sequence-level objectives such as GSPO average over a sequence's tokens)."""
    return [i for i, s in enumerate(samples) for _ in s.completion_ids]
