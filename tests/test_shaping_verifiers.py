"""The shaping verifiers (olmorl.rewards.shaping): their formulas at the points the papers define, and their
behaviour through a real server."""

from __future__ import annotations

import math

import httpx
import pytest

from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards.shaping import LengthOptions, cosine_length_reward, overlong_penalty, repetition_penalty


@pytest.fixture(scope="module")
def server():
    with LocalRewardServer(workers=1) as srv:
        yield srv.url


def verify(url: str, *items: dict) -> list[dict]:
    reply = httpx.post(f"{url}/v1/verify", json={"items": list(items)}, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()["results"]


def test_overlong_is_dapo_eq_13():
    # L_max 20480, L_cache 4096 (DAPO's setting): free up to 16384, a linear ramp to -1 at 20480, -1 beyond
    assert [overlong_penalty(n, 20480, 4096) for n in (0, 16384, 18432, 20480, 20481)] == [0.0, 0.0, -0.5, -1.0, -1.0]


def test_repetition_counts_distinct_word_ngrams():
    assert repetition_penalty("the cat sat on the mat", 2, -1.0) == (0.0, 5, 5)
    reward, distinct, total = repetition_penalty("go go go go go", 2, -0.5)  # 4 bigrams, 1 distinct
    assert (distinct, total) == (1, 4) and reward == pytest.approx(-0.375)
    assert repetition_penalty("too short", 3, -1.0) == (0.0, 0, 0)


def test_cosine_length_reward_follows_yeo_et_al():
    opts = LengthOptions(max_tokens=1000)  # the paper's defaults: correct 2 -> 1, wrong -10 -> 0, exceed -10
    assert cosine_length_reward(0, True, opts) == 2.0
    assert cosine_length_reward(500, True, opts) == pytest.approx(1.5)
    assert cosine_length_reward(999, True, opts) == pytest.approx(1.0, abs=1e-4)
    assert cosine_length_reward(0, False, opts) == -10.0
    assert cosine_length_reward(500, False, opts) == pytest.approx(-5.0)
    assert cosine_length_reward(1000, True, opts) == -10.0  # reached the limit: the exceed reward
    quarter = 1 + 0.5 * (2 - 1) * (1 + math.cos(math.pi / 4))
    assert cosine_length_reward(250, True, opts) == pytest.approx(quarter)


def test_format_checks_through_the_server(server):
    layout = {"layout": "think_answer"}
    items = [
        {"verifier": "format", "response": "<think>a</think>\n<answer>b</answer>", "options": layout},
        {"verifier": "format", "response": "<answer>b</answer>", "options": layout},
        {"verifier": "format", "response": "<think>a</think><answer>b</answer> trailing", "options": layout},
        {"verifier": "format", "response": "<think>a</think><think>c</think><answer>b</answer>", "options": layout},
        {"verifier": "format", "response": "x <tool>ls</tool>", "options": {"required_tags": ["tool", "answer"]}},
        {"verifier": "format", "response": "Final: 12", "options": {"regex": r"Final: \d+$"}},
    ]
    results = verify(server, *items)
    assert [r["reward"] for r in results] == [1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert results[4]["details"]["checks"] == {"tag:tool": True, "tag:answer": False}


@pytest.mark.parametrize("item, message", [
    ({"verifier": "format", "response": "x"}, "options: Value error, no check"),
    ({"verifier": "format", "response": "x", "options": {"regex": "("}}, "not a valid regex"),
    ({"verifier": "format", "response": "x", "ground_truth": "y", "options": {"regex": "x"}}, "ground_truth"),
    ({"verifier": "overlong", "response": "x", "options": {"max_tokens": 10, "buffer_tokens": 4}},
     "needs the item's completion_tokens"),
    ({"verifier": "overlong", "response": "x", "completion_tokens": 1, "options": {"max_tokens": 4, "buffer_tokens": 8}},
     "buffer_tokens (8) exceeds max_tokens (4)"),
    ({"verifier": "overlong", "response": "x", "completion_tokens": -1, "options": {"max_tokens": 4, "buffer_tokens": 2}},
     "completion_tokens"),
    ({"verifier": "repetition", "response": "x", "options": {"max_penalty": 1.0}}, "max_penalty"),
    ({"verifier": "length", "response": "x", "completion_tokens": 3, "options": {"max_tokens": 8}},
     'mode cosine needs {"correct": true|false}'),
    ({"verifier": "length", "response": "x", "completion_tokens": 3, "options": {"mode": "target"}},
     "mode target needs target_tokens"),
])
def test_shaping_input_errors_are_invalid_and_say_why(server, item, message):
    (result,) = verify(server, item)
    assert result["status"] == "invalid" and result["reward"] is None
    assert message in result["error"], result["error"]


def test_token_counts_reach_the_length_verifiers(server):
    results = verify(
        server,
        {"verifier": "overlong", "response": "x", "completion_tokens": 18432,
         "options": {"max_tokens": 20480, "buffer_tokens": 4096}},
        {"verifier": "length", "response": "x", "completion_tokens": 500, "ground_truth": {"correct": True},
         "options": {"max_tokens": 1000}},
        {"verifier": "length", "response": "x", "completion_tokens": 1500,
         "options": {"mode": "target", "target_tokens": 1000, "alpha": 0.001}},
        {"verifier": "repetition", "response": "go go go go go", "options": {"ngram_size": 2, "max_penalty": -0.5}},
    )
    assert [r["status"] for r in results] == ["ok"] * 4
    assert [round(r["reward"], 6) for r in results] == [-0.5, 1.5, -0.5, -0.375]
