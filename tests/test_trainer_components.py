"""Composite rows in olmorl-train: options and token counts reach the server, per-component rewards come back,
GDPO-style per-component advantages, and one reward curve per component."""

import asyncio
from collections import Counter, deque
from types import SimpleNamespace

import pytest
import torch

from olmorl.clients import VerifyResult
from olmorl.rewards.service._local import LocalRewardServer
from olmorl.trainer import TrainConfig, Trainer
from olmorl.trainer._data import build_prompts
from olmorl.trainer._objective import decoupled_group_advantages, group_advantages
from olmorl.trainer._rewards import GroupScorer, component_rewards, score_completions
from olmorl.trainer._step_metrics import StepTally
from olmorl.trainer._tiny import build_char_tokenizer
from olmorl.trainer.engines._types import Completion, Group

SPEC = [{"verifier": "math", "ground_truth": "3"},
        {"verifier": "overlong", "options": {"max_tokens": 10, "buffer_tokens": 4}, "weight": 0.5}]


def test_decoupled_advantages_normalize_each_component_apart():
    components = {"math": (1.0, [1.0, 0.0, 0.0, 1.0]), "length": (0.5, [-8.0, 0.0, -4.0, 0.0])}
    expected = (group_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0]), "std")
                + 0.5 * group_advantages(torch.tensor([-8.0, 0.0, -4.0, 0.0]), "std"))
    assert decoupled_group_advantages(components, "std").tolist() == pytest.approx(expected.tolist())
    # summed first, the length term's scale (8) would dominate the answer's (1); apart, each counts at unit scale
    summed = group_advantages(torch.tensor([1.0 - 4.0, 0.0, -2.0, 1.0]), "std")
    assert decoupled_group_advantages(components, "std").tolist() != pytest.approx(summed.tolist())


def test_composite_rows_send_their_options_and_token_counts(tmp_path):
    tokenizer = build_char_tokenizer(tmp_path / "tok")
    user = [{"role": "user", "content": "1+2="}]
    rows = [{"messages": user, "dataset": "composite", "ground_truth": SPEC},
            {"messages": user, "dataset": "composite", "ground_truth": [SPEC[0], {**SPEC[1], "weight": 1.0}],
             "options": {"aggregate": "min"}}]
    summed, lowest = build_prompts(rows, tokenizer, source="s", max_prompt_tokens=20)

    async def score():
        with LocalRewardServer(workers=1) as server:
            scorer = GroupScorer([server.url], api_key=None, timeout_s=60.0, batch_size=64, max_wait_s=30.0)
            try:
                return await score_completions(scorer, [summed, summed, lowest], ["\\boxed{3}", "\\boxed{4}", "\\boxed{3}"],
                                               [8, 2, 8])
            finally:
                await scorer.close()

    right, wrong, right_min = asyncio.run(score())
    assert (right.status, right.reward, wrong.reward) == ("ok", 0.75, 0.0)
    assert (right_min.status, right_min.reward) == ("ok", -0.5)
    assert component_rewards([right, wrong]) == {"math": (1.0, [1.0, 0.0]), "overlong": (0.5, [-0.5, 0.0])}
    assert component_rewards([right_min]) is None  # min is not a weighted sum: nothing to decompose


def _composite(math: float, length: float) -> VerifyResult:
    parts = [{"name": "math", "verifier": "math", "weight": 1.0, "reward": math, "status": "ok"},
             {"name": "length", "verifier": "length", "weight": 0.5, "reward": length, "status": "ok"}]
    return VerifyResult(verifier="composite", reward=math + 0.5 * length, status="ok",
                        details={"aggregate": "weighted_sum", "components": parts})


@pytest.mark.parametrize("per_component", [False, True])
def test_accept_uses_per_component_advantages_and_logs_each_component(per_component):
    trainer = Trainer.__new__(Trainer)  # _accept and _step_metrics need no model
    trainer.config = TrainConfig(model="m", advantage_norm="std", advantage_per_component=per_component)
    trainer.counters, trainer.accepted, trainer.pending = Counter(), deque(), {0: SimpleNamespace(verifier_label="composite")}
    trainer.tally = StepTally()
    trainer.scorer = SimpleNamespace(retries=0, latencies=[])
    trainer.teacher = None  # no distillation
    results = [_composite(1.0, -8.0), _composite(0.0, 0.0), _composite(0.0, -4.0), _composite(1.0, 0.0)]
    completions = [Completion([5, 6], [-1.0, -1.0], [0, 0], "stop") for _ in results]
    trainer._accept(Group(0, [1], completions, None, 0), results)
    advantages = [s.advantage for s in trainer.accepted[0].samples]
    components = {"math": (1.0, [1.0, 0.0, 0.0, 1.0]), "length": (0.5, [-8.0, 0.0, -4.0, 0.0])}
    expected = (decoupled_group_advantages(components, "std") if per_component
                else group_advantages(torch.tensor([r.reward for r in results], dtype=torch.float64), "std"))
    assert advantages == pytest.approx(expected.tolist())
    metrics = trainer._step_metrics([], {}, Counter())
    assert metrics["reward_component/math"] == 0.5 and metrics["reward_component/length"] == -3.0
    assert metrics.get("advantage_not_per_component") == (0.0 if per_component else None)
