"""Composite items through the trainer adapters: TRL (aggregate, or one reward function per component), verl and
OpenRLHF (aggregate, components in their extra info), against a real server."""

from __future__ import annotations

import importlib
import logging
import json
import math
import pickle

import httpx
import pytest
from trl.trainer.utils import get_callable_name, is_async_callable

from olmorl.clients import trl as olmorl_trl
from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._not_ok import NotOkLog

RIGHT = "<think>6 times 7</think>\n<answer>\\boxed{42}</answer>"
WRONG = "\\boxed{41}"
SPEC = [{"verifier": "math", "ground_truth": "42", "gate": True},
        {"verifier": "format", "options": {"layout": "think_answer"}, "weight": 0.5},
        {"verifier": "overlong", "options": {"max_tokens": 8, "buffer_tokens": 4}}]
OPTIONS = {"aggregate": "gate"}


@pytest.fixture(scope="module")
def server_url():
    with LocalRewardServer(workers=1) as server:
        yield server.url


async def test_trl_olmorl_reward_gives_the_aggregate_with_token_counts_from_completion_ids(server_url):
    rewards = await olmorl_trl.olmorl_reward(
        prompts=["6*7?", "6*7?"], completions=[RIGHT, WRONG], completion_ids=[[1] * 6, [1] * 9],
        verifier=["composite", "composite"], ground_truth=[SPEC, json.dumps(SPEC)], options=[OPTIONS, OPTIONS],
        base_url=server_url)
    # right: 1 + 0.5 * 1 + (4 - 6) / 4; wrong: the gate failed, so only the gate counts
    assert rewards == [1.0, 0.0]


async def test_trl_component_rewards_are_separate_functions(server_url):
    math_reward, format_reward, overlong_reward = (olmorl_trl.ComponentReward(name, base_url=server_url)
                                                   for name in ("math", "format", "overlong"))
    columns = dict(prompts=["q", "q", "q"], completions=[RIGHT, WRONG, RIGHT], completion_ids=[[1] * 6, [1] * 9, [1]],
                   verifier=["composite", "composite", "math"], ground_truth=[SPEC, SPEC, "42"])
    assert await math_reward(**columns) == [1.0, 0.0, None]  # a row that is not composite: not applicable
    assert await format_reward(**columns) == [1.0, 0.0, None]  # its weight is TRL's reward_weights, not 0.5
    assert await overlong_reward(**columns) == [-0.5, -1.0, None]
    assert await olmorl_trl.ComponentReward("length", base_url=server_url)(**columns) == [None, None, None]
    # a malformed row costs that row (the server names the problem), never the step
    broken = {**columns, "ground_truth": [SPEC, [{"verifier": "math", "weight": "heavy"}], "{not json"],
              "verifier": ["composite"] * 3}
    assert await math_reward(**broken) == [1.0, None, None]
    for func in (math_reward, format_reward):
        assert is_async_callable(func)
        restored = pickle.loads(pickle.dumps(func))
        assert get_callable_name(restored) == get_callable_name(func) and restored.config == func.config
    assert get_callable_name(format_reward) == "format_reward"


async def test_trl_component_with_correct_from_is_scored_after_its_source(server_url):
    spec = [{"verifier": "math", "ground_truth": "42"},
            {"verifier": "length", "correct_from": "math", "options": {"max_tokens": 100}}]
    length_reward = olmorl_trl.ComponentReward("length", base_url=server_url)
    rewards = await length_reward(prompts=["q", "q"], completions=[RIGHT, WRONG], completion_ids=[[1] * 50, [1] * 50],
                                  verifier=["composite"] * 2, ground_truth=[spec, spec])
    assert rewards == [pytest.approx(1.5), pytest.approx(-5.0)]  # cosine at half the limit: correct 2->1, wrong -10->0


def test_verl_returns_the_aggregate_with_components_in_extra_info(server_url, monkeypatch):
    module = importlib.import_module("olmorl.clients.verl")
    # verl's warning is rate-limited process-wide: a log of its own, so this test's failure leaves it as it was
    monkeypatch.setattr(module, "_NOT_OK", NotOkLog(logging.getLogger("olmorl.clients"), "olmorl.clients.verl", 30.0))
    scores = module.compute_score_batch(
        ["composite", "composite", "openai/gsm8k"], [RIGHT, RIGHT, "#### 3"], [SPEC, SPEC, "3"],
        [{"verifier_options": OPTIONS, "completion_tokens": 6}, {"verifier_options": OPTIONS}, None],
        base_url=server_url)
    assert scores[0]["score"] == 1.0 and scores[0]["component/format"] == 1.0 and scores[0]["component/overlong"] == -0.5
    # no token count: overlong is invalid, so the item is 0 with its flag, and the component reads NaN, not 0
    assert scores[1]["score"] == 0.0 and scores[1]["invalid"] == 1.0 and math.isnan(scores[1]["component/overlong"])
    assert scores[1]["component/math"] == 1.0
    assert scores[2]["score"] == 1.0 and math.isnan(scores[2]["component/math"])  # every sample has every key
    assert len({frozenset(s) for s in scores}) == 1


def test_openrlhf_returns_the_aggregate_with_components_in_extra_logs(server_url):
    label = {"verifier": "composite", "ground_truth": SPEC[:2], "options": OPTIONS}
    body = {"query": ["Q:" + RIGHT, "Q:" + WRONG, "Q:\\boxed{1}"], "prompts": ["Q:"] * 3,
            "labels": [label, json.dumps(label), {"verifier": "math", "ground_truth": "1"}]}
    reply = httpx.post(f"{server_url}/openrlhf/get_reward", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    data = json.loads(reply.text)  # Python's json reads NaN, as OpenRLHF's client does
    assert data["rewards"] == [1.5, 0.0, 1.0]
    assert data["extra_logs"]["olmorl_component/format"][:2] == [1.0, 0.0]
    assert math.isnan(data["extra_logs"]["olmorl_component/format"][2])
