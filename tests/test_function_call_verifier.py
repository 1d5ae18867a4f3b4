"""The `function_call` verifier: parsing the Hermes and OpenAI tool-call formats, BFCL's matching rules
(acceptable-value lists, string standardization, int -> float, optional arguments, parallel calls in any
order, no call expected), and the whole path through a real server and the Python client."""

from __future__ import annotations

import json

import httpx
import pytest

from olmorl.clients import RewardClient
from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards.engine._registry import InvalidInput, canonical_name, load_verifiers
from olmorl.rewards._settings import Settings
from olmorl.rewards.function_call import Call, MalformedCall, parse_calls, parse_expected, value_matches

WEATHER = [{"get_weather": {"city": ["San Francisco", "San Francisco, CA"], "unit": ["", "celsius"]}}]


def hermes(*calls: tuple[str, dict]) -> str:
    return "".join(f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>\n" for n, a in calls)


def score(response: str, ground_truth, **options):
    verifier = load_verifiers()[canonical_name("function_call")](Settings())
    return verifier.score(verifier.make_task(response, ground_truth, options, None))


# -- parsing ---------------------------------------------------------------------------------------------
def test_parses_hermes_tags_after_thinking_and_a_cut_final_tag():
    text = ('<think><tool_call>{"name": "ignored", "arguments": {}}</tool_call></think>'
            'Sure.\n<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n'
            '<tool_call>{"name": "b", "arguments": "{\\"y\\": \\"z\\"}"}')
    assert parse_calls(text) == [Call("a", {"x": 1}), Call("b", {"y": "z"})]


def test_parses_openai_message_list_and_fenced_json():
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"n": 2}'}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}
    assert parse_calls(json.dumps(message)) == [Call("f", {"n": 2}), Call("g", {})]
    assert parse_calls(json.dumps([{"name": "f", "parameters": {"n": 2}}])) == [Call("f", {"n": 2})]
    assert parse_calls('```json\n{"name": "f", "arguments": {"n": 2}}\n```') == [Call("f", {"n": 2})]


def test_parses_bfcl_python_call_syntax():
    text = '[get_weather(city="Paris", days=(1, 2)), math.hypot(x=3, y=4.0, opts={"a": None})]'
    assert parse_calls(text) == [Call("get_weather", {"city": "Paris", "days": [1, 2]}),
                                 Call("math.hypot", {"x": 3, "y": 4.0, "opts": {"a": None}})]
    assert score(text, [{"math.hypot": {"x": [3], "y": [4.0], "opts": [{"a": [None]}]}},
                        {"get_weather": {"city": ["paris"], "days": [[1, 2]]}}]).reward == 1.0
    for bad in ("[f(1)]", "[f(x=y)]", "[f(x={1, 2})]", "[a[0](x=1)]", "[f(**k)]"):
        with pytest.raises(MalformedCall):
            parse_calls(bad)


def test_prose_and_plain_json_answers_hold_no_call():
    assert parse_calls("The weather is sunny.") == []
    assert parse_calls("[1, 2, 3]") == []
    assert parse_calls('{"answer": 42}') == []
    assert parse_calls("[citation needed] it rains") == []
    assert parse_calls("[see(below)] and more") == []  # not one Python expression
    assert parse_calls("[x for x in y]") == []


@pytest.mark.parametrize("text", [
    "<tool_call>{not json}</tool_call>",
    '<tool_call>{"arguments": {}}</tool_call>',
    '<tool_call>{"name": "f", "arguments": [1]}</tool_call>',
    '{"tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{bad"}}]}',
])
def test_an_announced_call_that_cannot_be_read_is_malformed(text):
    with pytest.raises(MalformedCall):
        parse_calls(text)


# -- values ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("given", "acceptable", "matches"), [
    ("San Francisco", "san francisco", True),
    ("April 1, 2024", "april 1 2024", True),  # BFCL standardization: spaces and ,./-_*^ dropped
    ("Paris", "London", False),
    (3, 3.0, True),  # an integer where a float is acceptable
    (3.0, 3, False),  # a float where an integer is expected: a type error
    (True, 1, False),  # a boolean is never a number
    (1, True, False),
    ("5", 5, False),  # no string -> number coercion
    ([1, 2], [1, 2], True),
    ([2, 1], [1, 2], False),  # list order matters
    (["New York", "LA"], ["new york", "la"], True),
    ({"a": "x"}, {"a": ["X"], "b": [""]}, True),  # nested dict: same rules, "" optional
    ({"a": "x"}, {"a": ["X"], "b": [1]}, False),
    ({"a": "x", "c": 1}, {"a": ["x"]}, False),
    (None, None, True),
])
def test_value_matching_rules(given, acceptable, matches):
    assert value_matches(given, acceptable) is matches


# -- scoring ---------------------------------------------------------------------------------------------
def test_single_call_with_optional_argument_left_out_or_given():
    assert score(hermes(("get_weather", {"city": "san francisco"})), WEATHER).reward == 1.0
    assert score(hermes(("get_weather", {"city": "San Francisco, CA", "unit": "Celsius"})), WEATHER).reward == 1.0
    wrong_unit = score(hermes(("get_weather", {"city": "San Francisco", "unit": "kelvin"})), WEATHER)
    assert wrong_unit.reward == 0.0 and "unit" in wrong_unit.details["errors"][0]
    missing = score(hermes(("get_weather", {"unit": "celsius"})), WEATHER)
    assert (missing.reward, missing.details["errors"]) == (0.0, ["get_weather: missing argument 'city'"])
    extra = score(hermes(("get_weather", {"city": "San Francisco", "days": 3})), WEATHER)
    assert extra.reward == 0.0 and "unexpected argument 'days'" in extra.details["errors"][0]


def test_parallel_calls_match_in_any_order_with_a_maximum_matching():
    truth = [{"f": {"x": [1, 2]}}, {"f": {"x": [1]}}]
    # greedy first-fit would give the first expected call x=1 and leave nothing for the second
    assert score(hermes(("f", {"x": 1}), ("f", {"x": 2})), truth).reward == 1.0
    assert score(hermes(("f", {"x": 2}), ("f", {"x": 1})), truth).reward == 1.0
    both_two = score(hermes(("f", {"x": 2}), ("f", {"x": 2})), truth)
    assert (both_two.reward, both_two.details["matched"]) == (0.0, 1)


def test_wrong_count_and_partial_credit():
    truth = [{"a": {}}, {"b": {"n": [1]}}]
    one = hermes(("a", {}))
    assert score(one, truth).reward == 0.0
    assert score(one, truth, partial_credit=True).reward == 0.5
    extra = hermes(("a", {}), ("b", {"n": 1}), ("c", {}))
    assert (score(extra, truth).reward, score(extra, truth).details["reason"]) == (0.0, "extra_call")
    assert score(extra, truth, partial_credit=True).reward == pytest.approx(2 / 3)


def test_call_counts_are_bounded():
    many = hermes(*[("f", {"x": i}) for i in range(129)])
    assert score(many, [{"f": {"x": [0]}}]).details["reason"] == "too_many_calls"
    with pytest.raises(InvalidInput, match="at most 128"):
        parse_expected([{"f": {}}] * 129)
    assert score(hermes(*[("f", {"x": i}) for i in range(128)]), [{"f": {"x": [i]}} for i in range(128)]).reward == 1.0


def test_no_call_expected():
    assert score("I cannot help with that; no tool fits.", []).reward == 1.0
    called = score(hermes(("get_weather", {"city": "Paris"})), [])
    assert (called.reward, called.details["reason"]) == (0.0, "unexpected_call")
    assert score("<tool_call>{oops</tool_call>", []).details["reason"] == "malformed_call"


def test_dotted_names_may_come_back_with_underscores():
    truth = [{"math.hypot": {"x": [4], "y": [5], "z": ["", 0]}}]
    assert score(hermes(("math_hypot", {"x": 4, "y": 5})), truth).reward == 1.0
    assert score(hermes(("math.hypot", {"x": 4, "y": 5, "z": 0})), truth).reward == 1.0
    assert score(hermes(("math.hypo", {"x": 4, "y": 5})), truth).details["errors"] == \
        ["math.hypot: no call of this function"]


@pytest.mark.parametrize("bad", [None, 5, "not json", [{"f": {"x": 1}}], [{"f": {"x": []}}], [{"f": {}, "g": {}}],
                                 [{"f": {"x": [{"k": "v"}]}}], [["f"]], {"f": {"x": [1]}}])
def test_invalid_ground_truth_is_refused_with_a_reason(bad):
    with pytest.raises(InvalidInput):
        parse_expected(bad)


# -- through the server and the client ------------------------------------------------------------------
@pytest.fixture(scope="module")
def url(tmp_path_factory):
    log = tmp_path_factory.mktemp("srv") / "server.log"
    with LocalRewardServer(log_path=str(log), workers=1) as srv:
        yield srv.url


def test_verify_route_and_python_client(url):
    items = [
        {"id": "ok", "verifier": "function_call", "response": hermes(("get_weather", {"city": "SF"})),
         "ground_truth": [{"get_weather": {"city": ["SF", "San Francisco"]}}]},
        {"id": "openai", "verifier": "tool_call", "ground_truth": json.dumps(WEATHER),
         "response": json.dumps({"tool_calls": [{"type": "function", "function": {
             "name": "get_weather", "arguments": json.dumps({"city": "Boston"})}}]})},
        {"id": "none", "verifier": "bfcl", "response": "No tool is needed.", "ground_truth": []},
        {"id": "bad", "verifier": "function_call", "response": "x", "ground_truth": [{"f": {"x": 1}}]},
    ]
    r = httpx.post(url + "/v1/verify", json={"items": items}, timeout=60)
    assert r.status_code == 200, r.text
    results = {res["id"]: res for res in r.json()["results"]}
    assert (results["ok"]["status"], results["ok"]["reward"]) == ("ok", 1.0)
    assert (results["openai"]["reward"], results["openai"]["details"]["reason"]) == (0.0, "mismatch")
    assert results["none"]["reward"] == 1.0
    assert results["bad"]["status"] == "invalid" and "list of acceptable values" in results["bad"]["error"]
    with RewardClient(url) as client:
        got = client.verify_one(verifier="function_call", response=hermes(("get_weather", {"city": "sf"})),
                                ground_truth=[{"get_weather": {"city": ["SF"]}}])
    assert (got.status, got.reward, got.details["calls"]) == \
        ("ok", 1.0, [{"name": "get_weather", "arguments": {"city": "sf"}}])
    listed = httpx.get(url + "/v1/verifiers", timeout=10).json()
    info = next(v for v in (listed["verifiers"] if isinstance(listed, dict) else listed) if v["name"] == "function_call")
    assert info["aliases"] == ["tool_call", "bfcl"] and "acceptable values" in info["ground_truth"]["description"]
