"""The math verifiers' `judge_fallback` end to end: a real reward server whose math items the symbolic check
cannot pass are decided by the scripted judge (tests/fake_openai.py, a real uvicorn server speaking OpenAI chat
completions). Each item scripts its judge with a `[[fake: ...]]` marker in its response, and carries a tag of
its own, so a test can tell whether the judge saw it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from fake_openai import FakeOpenAI

from olmorl.rewards.engine._engine import RewardEngine
from olmorl.rewards.service._local import LocalRewardServer, free_port
from olmorl.rewards._settings import JudgeSettings, Settings

MODEL = "judge-model"
# a long timeout: the dead endpoint fails at once anyway, and 0.5 s read a loaded machine's slow fake as a failure
FAST_RETRIES = dict(timeout_s=10.0, max_retries=1, retry_backoff_s=0.05, health_interval_s=0.2)
QUESTION = "A train covers 120 km in 1.5 hours. What is its average speed in km/h?"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(models=(MODEL,)) as judge:
        yield judge


@pytest.fixture(scope="module")
def url(fake: FakeOpenAI, tmp_path_factory) -> Iterator[str]:
    """A reward server whose math items fall back to the fake judge by default (math_judge_fallback)."""
    log = tmp_path_factory.mktemp("logs") / "reward-server.log"
    judge = JudgeSettings(base_url=fake.url, model=MODEL, **FAST_RETRIES)
    with LocalRewardServer(workers=1, judge=judge, math_judge_fallback=True, log_path=str(log)) as server:
        yield server.url


def verify(url: str, items: list[dict]) -> list[dict]:
    reply = httpx.post(f"{url}/v1/verify", json={"items": items}, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()["results"]


def item(tag: str, answer: str, script: str = "json 10", verifier: str = "math", reference: str = "80",
         **options) -> dict:
    response = f"Speed is distance over time. ({tag}) The answer is $\\boxed{{{answer}}}$. [[fake: {script}]]"
    return {"id": tag, "verifier": verifier, "prompt": QUESTION, "response": response, "ground_truth": reference,
            "options": options}


def judged(fake: FakeOpenAI, tag: str) -> int:
    """How many judge calls carried this item's tag."""
    return sum(tag in str(body["messages"]) for body in fake.requests)


def test_symbolic_match_never_calls_the_judge(fake: FakeOpenAI, url: str) -> None:
    results = verify(url, [item("sym-math", "80"), item("sym-gsm", "80.0", verifier="gsm8k"),
                                 {**item("sym-strict", "80"), "verifier": "strict_math",
                                  "response": "(sym-strict) Final Answer: The final answer is 80. I hope it is "
                                              "correct."}])
    for result in results:
        assert (result["status"], result["reward"], result["details"]["method"]) == ("ok", 1.0, "symbolic"), result
        assert judged(fake, result["id"]) == 0


def test_mismatch_is_decided_by_the_judge(fake: FakeOpenAI, url: str) -> None:
    # "eighty" and 80 km/h are one answer the symbolic check cannot match; 70 is wrong, and the judge says so
    yes, no, gsm = verify(url, [item("mis-yes", "eighty kilometres per hour"), item("mis-no", "70", "json 1"),
                                      item("mis-gsm", "79", "json 2", verifier="gsm8k")])
    assert (yes["status"], yes["reward"]) == ("ok", 1.0), yes
    assert yes["details"]["method"] == "judge" and yes["details"]["symbolic_reason"] in ("mismatch", "unparseable")
    assert yes["details"]["judge"]["score"] == 10 and yes["details"]["judge"]["template"] == "answer_match"
    assert (no["status"], no["reward"], no["details"]["reason"]) == ("ok", 0.0, "judge_mismatch"), no
    assert (no["details"]["method"], no["details"]["symbolic_reason"]) == ("judge", "mismatch")
    assert (gsm["status"], gsm["reward"], gsm["details"]["method"]) == ("ok", 0.0, "judge"), gsm
    for tag in ("mis-yes", "mis-no", "mis-gsm"):
        assert judged(fake, tag) == 1
    # the judge saw the question, the reference and the response
    prompt = next(str(b["messages"]) for b in fake.requests if "mis-no" in str(b["messages"]))
    assert "average speed" in prompt and "<reference_answer>" in prompt and "boxed{70}" in prompt


def test_no_answer_found_goes_to_the_judge(fake: FakeOpenAI, url: str) -> None:
    response = "(none-found) It travels eighty kilometres every hour. [[fake: json 9]]"
    [result] = verify(url, [{"id": "none-found", "verifier": "math", "prompt": QUESTION, "response": response,
                                   "ground_truth": "80"}])
    assert (result["status"], result["reward"]) == ("ok", 1.0), result
    assert (result["details"]["method"], result["details"]["symbolic_reason"]) == ("judge", "no_answer")


def test_hedge_stays_symbolic(fake: FakeOpenAI, url: str) -> None:
    [result] = verify(url, [item("hedge", "70 \\text{ or } 80")])
    assert (result["status"], result["reward"], result["details"]["method"]) == ("ok", 0.0, "symbolic"), result
    assert result["details"]["reason"] == "hedged" and judged(fake, "hedge") == 0


def test_malformed_or_failed_judge_reply_is_an_error_not_a_zero(fake: FakeOpenAI, url: str) -> None:
    garbage, server_error = verify(url, [item("bad-garbage", "70", "garbage"), item("bad-500", "70", "500")])
    for result in (garbage, server_error):
        assert (result["status"], result["reward"]) == ("error", None), result
        assert result["error"].startswith("judge_fallback:") and result["details"]["method"] == "judge"
    assert "score" in garbage["error"] and garbage["details"]["judge"]["reason"] == "unparseable_judgement"
    assert server_error["details"]["judge"]["reason"] == "judge_unavailable"


def test_option_off_never_calls_the_judge(fake: FakeOpenAI, url: str) -> None:
    [result] = verify(url, [item("off", "70", judge_fallback=False)])
    assert (result["status"], result["reward"], result["details"]["reason"]) == ("ok", 0.0, "mismatch"), result
    assert "method" not in result["details"] and judged(fake, "off") == 0


def test_fallbacks_are_counted_in_metrics(fake: FakeOpenAI, url: str) -> None:
    verify(url, [item("count-yes", "eighty"), item("count-no", "71", "json 1"),
                       item("count-err", "72", "garbage")])
    text = httpx.get(f"{url}/metrics", timeout=10).text
    counts = {outcome: float(value) for outcome, value in re.findall(
        r'olmorl_judge_fallbacks_total\{outcome="(\w+)",verifier="math"\} (\S+)', text)}
    assert counts["correct"] >= 1 and counts["incorrect"] >= 1 and counts["error"] >= 1, counts


def fallback_counts(url: str) -> dict[str, float]:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return {outcome: float(value) for outcome, value in re.findall(
        r'olmorl_judge_fallbacks_total\{outcome="(\w+)",verifier="math"\} (\S+)', text)}


def test_a_composite_items_math_component_fallback_is_counted(fake: FakeOpenAI, url: str) -> None:
    """The fallback is counted where the judge decides, so a math component inside a composite item counts as a
    math item would (it was not counted: the composite's result is not a math result)."""
    def composite(tag: str, answer: str, script: str) -> dict:
        math_item = item(tag, answer, script)
        return {"id": tag, "verifier": "composite", "prompt": QUESTION, "response": math_item["response"],
                "ground_truth": [{"verifier": "math", "ground_truth": "80"},
                                 {"verifier": "format", "options": {"regex": "boxed"}, "weight": 0.5}]}
    before = fallback_counts(url)
    yes, no, err = verify(url, [composite("comp-yes", "eighty", "json 10"), composite("comp-no", "71", "json 1"),
                                composite("comp-err", "72", "garbage")])
    assert (yes["status"], yes["reward"], no["status"], no["reward"]) == ("ok", 1.5, "ok", 0.5), (yes, no)
    assert yes["details"]["components"][0]["details"]["method"] == "judge" and err["status"] == "error", err
    after = fallback_counts(url)
    assert {outcome: after[outcome] - before.get(outcome, 0.0) for outcome in after} == (
        {"correct": 1.0, "incorrect": 1.0, "error": 1.0})


def test_judge_down_is_an_error(reward_server, tmp_path) -> None:
    url = reward_server(workers=1, math_judge_fallback=True, judge=JudgeSettings(
        base_url=f"http://127.0.0.1:{free_port()}/v1", model=MODEL, **FAST_RETRIES))
    down, plain = verify(url, [item("down", "70"), item("down-plain", "80")])
    assert (down["status"], down["reward"], down["details"]["judge"]["reason"]) == (
        "error", None, "judge_unavailable"), down
    assert (plain["status"], plain["reward"], plain["details"]["method"]) == ("ok", 1.0, "symbolic")
    # the math verifiers' warm-up (no prompt, no judge) is symbolic whatever the server's default
    assert "warm-up of verifier" not in (tmp_path / "reward-server-0.log").read_text()


def test_a_session_check_needs_no_question_yet() -> None:
    """Sessions validate their final-answer item before the conversation (its question) exists."""
    settings = Settings(workers=1, math_judge_fallback=True, judge=JudgeSettings(base_url="http://127.0.0.1:9/v1",
                                                                                 model=MODEL))
    assert RewardEngine(settings).check_item("math", "80", {}) == "math"


def test_option_without_a_judge_or_a_question_is_invalid(reward_server) -> None:
    url = reward_server(workers=1)
    no_judge, default_off = verify(url, [item("nojudge", "70", judge_fallback=True), item("default", "70")])
    assert (no_judge["status"], no_judge["reward"]) == ("invalid", None) and "OLMORL_JUDGE_BASE_URL" in (
        no_judge["error"]), no_judge
    assert (default_off["status"], default_off["reward"]) == ("ok", 0.0) and "method" not in default_off["details"]


def test_option_without_a_question_is_invalid(fake: FakeOpenAI, url: str) -> None:
    [result] = verify(url, [{**item("noprompt", "70"), "prompt": None}])
    assert result["status"] == "invalid" and "question" in result["error"], result
    assert judged(fake, "noprompt") == 0
