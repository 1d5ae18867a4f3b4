"""Composite items (olmorl.rewards.engine._composite) through a real server: POST /v1/verify and the Python client."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from olmorl.clients import RewardClient
from olmorl.rewards.service._local import LocalRewardServer

PLUGINS = ["plugins.blocking", "plugins.misbehaving", "plugins.loop_sleep"]
RIGHT = "<think>6 times 7</think> <answer>\\boxed{42}</answer>"
WRONG = "<think>6 times 7</think> <answer>\\boxed{41}</answer>"


@pytest.fixture(scope="module")
def server():
    with LocalRewardServer(workers=2, plugins=PLUGINS) as srv:
        yield srv.url


def verify(url: str, *items: dict) -> list[dict]:
    reply = httpx.post(f"{url}/v1/verify", json={"items": list(items)}, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()["results"]


def composite(response: str, components: list[dict], **options) -> dict:
    return {"verifier": "composite", "response": response, "ground_truth": components, "options": options}


MATH = {"verifier": "math", "ground_truth": "42"}
FORMAT = {"verifier": "format", "options": {"layout": "think_answer"}}


def test_weighted_sum_is_the_aggregate_and_each_component_is_reported(server):
    item = composite(WRONG, [MATH, {**FORMAT, "weight": 0.25}])
    (result,) = verify(server, item)
    assert result["status"] == "ok" and result["verifier"] == "composite"
    assert result["reward"] == 0.25  # 1.0 * 0 (wrong answer) + 0.25 * 1 (right format)
    listed = result["details"]["components"]
    assert [(c["name"], c["reward"], c["status"], c["weight"]) for c in listed] == [
        ("math", 0.0, "ok", 1.0), ("format", 1.0, "ok", 0.25)]
    assert listed[0]["details"]["extracted"] == "41" and listed[1]["details"]["checks"] == {"layout": True}


def test_min_all_pass_and_gate_aggregates(server):
    parts = [MATH, FORMAT]
    right_min, wrong_min, right_all, wrong_all = verify(
        server, composite(RIGHT, parts, aggregate="min"), composite(WRONG, parts, aggregate="min"),
        composite(RIGHT, parts, aggregate="all_pass"), composite(WRONG, parts, aggregate="all_pass"))
    assert [r["reward"] for r in (right_min, wrong_min, right_all, wrong_all)] == [1.0, 0.0, 1.0, 0.0]
    gated = [{**MATH, "gate": True, "weight": 2.0}, {**FORMAT, "weight": 0.5}]
    passed, blocked = verify(server, composite(RIGHT, gated, aggregate="gate"),
                             composite(WRONG, gated, aggregate="gate"))
    assert passed["reward"] == 2.5 and passed["details"]["gate_passed"] is True
    # the format component passed too, but behind a failed gate it does not count
    assert blocked["reward"] == 0.0 and blocked["details"]["gate_passed"] is False
    assert blocked["details"]["components"][1]["reward"] == 1.0


def test_a_failed_component_fails_the_item_unless_it_says_skip(server):
    parts = [MATH, {"verifier": "test_buggy"}, {**FORMAT, "weight": 0.5}]
    failed, skipped = verify(server, composite(RIGHT, parts), composite(RIGHT, parts, on_component_error="skip"))
    # never a silent 0 for the check that did not run
    assert failed["status"] == "error" and failed["reward"] is None
    assert failed["error"].startswith("component 'test_buggy' is error: KeyError")
    assert [c["status"] for c in failed["details"]["components"]] == ["ok", "error", "ok"]
    assert skipped["status"] == "ok" and skipped["reward"] == 1.5
    assert skipped["details"]["skipped"] == ["test_buggy"]
    gate_down = composite(RIGHT, [{"verifier": "test_buggy", "gate": True}, FORMAT], aggregate="gate",
                          on_component_error="skip")
    unknown = composite(RIGHT, [MATH, {"verifier": "no_such_verifier"}])
    gate_result, unknown_result = verify(server, gate_down, unknown)
    assert gate_result["status"] == "error" and "it is a gate" in gate_result["error"]
    assert unknown_result["status"] == "invalid" and "unknown verifier 'no_such_verifier'" in unknown_result["error"]


@pytest.mark.parametrize("components, options, message", [
    ([], {}, "at least one component"),
    ([MATH, MATH], {}, "component name 'math' is not unique"),
    ([{"verifier": "composite", "ground_truth": [MATH]}], {}, "composites do not nest"),
    ([{**MATH, "gate": True}], {}, "gate is set but the aggregate is 'weighted_sum'"),
    ([{**MATH, "weight": 2}], {"aggregate": "min"}, "aggregate 'min' takes no weights"),
    ([MATH], {"aggregate": "gate"}, "needs a component with gate: true"),
    ([MATH, {"verifier": "length", "correct_from": "nope", "options": {"max_tokens": 8}}], {},
     "correct_from 'nope' names no other component"),
    ([{**MATH, "weight": "heavy"}], {}, "ground_truth: 0.weight"),
    ([MATH], {"aggregate": "mean"}, "options: aggregate"),
])
def test_malformed_composites_are_invalid_and_say_why(server, components, options, message):
    (result,) = verify(server, composite(RIGHT, components, **options))
    assert result["status"] == "invalid" and result["reward"] is None
    assert message in result["error"], result["error"]


def test_pool_and_loop_components_of_one_item_run_concurrently(server):
    # 2 s each: one after the other is 4 s, together about 2, and a loaded machine's overhead fits the margin
    item = composite("x", [{"verifier": "test_sleep", "ground_truth": 2.0},
                           {"verifier": "test_loop_sleep", "ground_truth": 2.0}])
    started = time.perf_counter()
    (result,) = verify(server, item)
    took = time.perf_counter() - started
    assert result["status"] == "ok" and result["reward"] == 1.5
    assert took < 3.5, f"{took:.2f} s: the pool and loop components ran one after the other"


def test_correct_from_feeds_the_cosine_length_reward_and_tokens_reach_components(server):
    length = {"verifier": "length", "correct_from": "math", "options": {"max_tokens": 1000}}
    overlong = {"verifier": "overlong", "options": {"max_tokens": 1000, "buffer_tokens": 200}}
    right, wrong = verify(server, {**composite(RIGHT, [MATH, length, overlong]), "completion_tokens": 900},
                          {**composite(WRONG, [MATH, length, overlong]), "completion_tokens": 0})
    right_parts = {c["name"]: c for c in right["details"]["components"]}
    assert right_parts["length"]["details"] == {"tokens": 900, "correct": True}
    assert right_parts["overlong"]["reward"] == -0.5
    wrong_parts = {c["name"]: c for c in wrong["details"]["components"]}
    assert wrong_parts["length"]["reward"] == -10.0 and wrong_parts["length"]["details"]["correct"] is False
    assert wrong["reward"] == -10.0  # 0 (wrong) - 10 (wrong at length 0) + 0 (not overlong)


def test_python_client_scores_composites(server):
    with RewardClient(server) as client:
        result = client.verify_one(verifier="composite", response=RIGHT, completion_tokens=10,
                                   ground_truth=[MATH, {"verifier": "overlong",
                                                        "options": {"max_tokens": 12, "buffer_tokens": 4}}])
    assert result.status == "ok" and result.reward == 0.5
    assert [c["reward"] for c in result.details["components"]] == [1.0, -0.5]


def _tamper_count(url: str, kind: str) -> float:
    text = httpx.get(url + "/metrics", timeout=10).text
    found = re.search(r'^olmorl_code_tamper_total\{kind="%s",verifier="code"\} (\S+)$' % kind, text, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_sandbox_component_runs_and_its_tamper_is_counted_in_metrics(server):
    forger = "```python\nimport os\ndef f(x):\n    os.write(3, b'{\"v\": \\n')\n    return 2\n```"
    honest = "```python\ndef f(x):\n    return 2\n```"
    before = _tamper_count(server, "protocol")
    tests = {"verifier": "code", "ground_truth": ["assert f(1) == 2"]}
    forged, passed = verify(server, composite(forger, [tests, FORMAT]), composite(honest, [tests]))
    assert passed["status"] == "ok" and passed["reward"] == 1.0
    code_part = forged["details"]["components"][0]
    assert forged["status"] == "ok" and code_part["reward"] == 0.0 and code_part["details"]["tamper"] == {"protocol": 1}
    # the sandbox's telemetry sees a component's tamper as it sees an item's
    assert _tamper_count(server, "protocol") == before + 1
