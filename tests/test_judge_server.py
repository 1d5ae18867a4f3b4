"""LM judge end to end: a real reward server (`reward_server`) calling the scripted fake judge
(tests/fake_openai.py, a real uvicorn server speaking OpenAI chat completions) through /v1/verify."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from fake_openai import FakeOpenAI

from olmorl.rewards.service._local import LocalRewardServer, free_port
from olmorl.rewards._settings import JudgeSettings

MODEL = "judge-model"
# fast retries and probes; a 2 s timeout, so a loaded machine's ordinary answers from the fakes are not read as
# timeouts (0.5 s was, in a CI run beside a load) while a `slow 4` script still times out
FAST_RETRIES = dict(timeout_s=2.0, max_retries=2, retry_backoff_s=0.05, health_interval_s=0.2)


@pytest.fixture
def fake_judge() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(models=(MODEL,)) as fake:
        yield fake


@dataclass
class JudgeStack:
    fake: FakeOpenAI
    url: str
    settings: JudgeSettings


@pytest.fixture(scope="module")
def judge_stack(tmp_path_factory) -> Iterator[JudgeStack]:
    """One fake judge and one reward server (with a persistent cache) shared by the tests that need no
    other settings; server start-up is most of these tests' time. Items differ between tests."""
    cache = tmp_path_factory.mktemp("judge") / "judge.sqlite"
    with FakeOpenAI(models=(MODEL,)) as fake:
        settings = JudgeSettings(base_url=fake.url, model=MODEL, cache_path=str(cache), **FAST_RETRIES)
        log = tmp_path_factory.mktemp("logs") / "reward-server.log"
        with LocalRewardServer(workers=1, judge=settings, log_path=str(log)) as server:
            yield JudgeStack(fake, server.url, settings)


def verify(url: str, items: list[dict]) -> list[dict]:
    reply = httpx.post(f"{url}/v1/verify", json={"items": items}, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()["results"]


def judged(script: str, **extra) -> dict:
    return {"id": script, "verifier": "judge", "prompt": "Explain photosynthesis.",
            "response": f"Plants turn light into sugar. [[fake: {script}]]", **extra}


# script -> (status, reward, attempts)
BEHAVIOURS = {
    "json 8": ("ok", 7 / 9, 1),
    "fenced 10": ("ok", 1.0, 1),
    "think 4": ("ok", 3 / 9, 1),
    "upper 1": ("ok", 0.0, 1),
    "pattern 6": ("ok", 5 / 9, 1),
    "garbage": ("error", None, 1),
    "empty": ("error", None, 1),
    "429 0.4; json 9": ("ok", 8 / 9, 2),
    "500; 503; json 5": ("ok", 4 / 9, 3),
    "500": ("error", None, 3),
    "slow 4; json 7": ("ok", 6 / 9, 2),
    "slow 4": ("error", None, 3),
    "drop; json 7": ("ok", 6 / 9, 2),
    "400": ("error", None, 1),
}


def test_scripted_behaviours_through_verify(judge_stack: JudgeStack) -> None:
    url, fake_judge = judge_stack.url, judge_stack.fake
    items = [judged(script) for script in BEHAVIOURS]
    items.append({"id": "f1", "verifier": "string_f1", "response": "the cat sat", "ground_truth": "the cat sat"})
    results = verify(url, items)
    by_id = {r["id"]: r for r in results}
    for script, (status, reward, attempts) in BEHAVIOURS.items():
        result = by_id[script]
        assert (result["status"], result["details"]["attempts"]) == (status, attempts), (script, result)
        assert result["reward"] == (None if reward is None else pytest.approx(reward)), script  # null: not scored
        assert result["details"]["cache_hit"] is False
        if status == "error":
            assert result["error"], script
    assert by_id["f1"]["status"] == "ok" and by_id["f1"]["reward"] == 1.0
    assert by_id["json 8"]["details"]["reasoning"] == "Scripted verdict."
    assert by_id["json 8"]["details"]["score"] == 8 and by_id["json 8"]["details"]["model"] == MODEL
    assert by_id["garbage"]["details"]["raw"].startswith("I find this response hard")
    assert "could not read the judge's score" in by_id["garbage"]["error"]
    assert by_id["429 0.4; json 9"]["elapsed_ms"] >= 400  # Retry-After honoured
    assert "after 3 attempt(s): HTTP 500" in by_id["500"]["error"]
    assert "timed out after 2 s" in by_id["slow 4"]["error"]
    assert "HTTP 400" in by_id["400"]["error"]
    assert {body["model"] for body in fake_judge.requests} == {MODEL}

    # The same batch again: every successful judgement comes from the cache, no new calls.
    calls = len(fake_judge.requests)
    again = {r["id"]: r for r in verify(url, items)}
    for script, (status, reward, _) in BEHAVIOURS.items():
        if status == "ok":
            assert again[script]["details"]["cache_hit"] is True and again[script]["reward"] == pytest.approx(reward)
    retried = sum(attempts for status, _, attempts in BEHAVIOURS.values() if status == "error")
    assert len(fake_judge.requests) - calls <= retried  # only the failures were asked again


def test_modes_templates_presets_and_invalid_items(judge_stack: JudgeStack) -> None:
    url, fake_judge = judge_stack.url, judge_stack.fake
    chat = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Capital of France?"}]
    items = []
    for template in ("quality", "factuality", "creative_writing", "refusal", "safety"):
        items.append({"id": f"ref-{template}", "verifier": "judge", "prompt": chat,
                      "response": "<think>easy</think>Paris. [[fake: json 10]]", "ground_truth": "Paris",
                      "options": {"mode": "reference", "template": template}})
        items.append({"id": f"open-{template}", "verifier": "judge", "prompt": "Capital of France?",
                      "response": "Paris. [[fake: json 1]]", "options": {"mode": "open", "template": template}})
    items += [
        {"id": "preset-ref", "verifier": "general-quality_ref", "prompt": "Q", "response": "A [[fake: json 10]]",
         "ground_truth": "A"},
        {"id": "preset-open", "verifier": "GENERAL-QUALITY", "prompt": "Q", "response": "A [[fake: json 10]]"},
        {"id": "preset-rubric", "verifier": "general-quality_rubric", "prompt": "Q",
         "response": "A [[fake: json 4]]", "ground_truth": "- names the capital\n- is one word"},
        {"id": "preset-match", "verifier": "general-web_instruct_general_verifier", "prompt": "Q",
         "response": "A [[fake: json 10]]", "ground_truth": "A"},
        {"id": "rubric-open", "verifier": "judge", "prompt": "Q", "response": "A", "options": {"template": "rubric"}},
        {"id": "no-ref", "verifier": "general-quality_ref", "prompt": "Q", "response": "A"},
        {"id": "ssrf", "verifier": "judge", "prompt": "Q", "response": "A", "options": {"base_url": "http://x"}},
        {"id": "no-prompt", "verifier": "judge", "response": "A"},
        {"id": "only-thinking", "verifier": "judge", "prompt": "Q", "response": "<think>hmm, no answer"},
    ]
    by_id = {r["id"]: r for r in verify(url, items)}
    for template in ("quality", "factuality", "creative_writing", "refusal", "safety"):
        assert by_id[f"ref-{template}"]["status"] == "ok" and by_id[f"ref-{template}"]["reward"] == 1.0
        assert by_id[f"ref-{template}"]["details"]["mode"] == "reference"
        assert by_id[f"open-{template}"]["status"] == "ok" and by_id[f"open-{template}"]["reward"] == 0.0
        assert by_id[f"open-{template}"]["details"]["template"] == template
    assert by_id["preset-ref"]["verifier"] == "general-quality_ref" and by_id["preset-ref"]["reward"] == 1.0
    assert by_id["preset-open"]["details"]["mode"] == "open" and by_id["preset-open"]["reward"] == 1.0
    assert by_id["preset-rubric"]["reward"] == pytest.approx(3 / 9)
    assert by_id["preset-rubric"]["details"]["template"] == "rubric"
    assert by_id["preset-match"]["reward"] == 1.0 and by_id["preset-match"]["details"]["template"] == "answer_match"
    assert any("<criteria>\n- names the capital\n- is one word\n</criteria>" in b["messages"][0]["content"]
               for b in fake_judge.requests)
    for bad in ("no-ref", "ssrf", "no-prompt", "rubric-open"):
        assert by_id[bad]["status"] == "invalid" and by_id[bad]["error"], by_id[bad]
    assert by_id["only-thinking"]["status"] == "ok" and by_id["only-thinking"]["details"]["reason"] == "empty_response"

    # What the judge saw: the conversation, the reference, and the response without its thinking.
    reference_prompts = [b["messages"][0]["content"] for b in fake_judge.requests
                         if "<reference_answer>\nParis\n</reference_answer>" in b["messages"][0]["content"]]
    assert len(reference_prompts) == 5
    for text in reference_prompts:
        assert "System: You are terse.\n\nUser: Capital of France?" in text and "easy" not in text


def test_unconfigured_judge_fails_only_judge_items(reward_server) -> None:
    url = reward_server(workers=1)
    results = verify(url, [
        {"id": "j", "verifier": "judge", "prompt": "Q", "response": "A"},
        {"id": "s", "verifier": "string_f1", "response": "yes", "ground_truth": "yes"},
    ])
    assert results[0]["status"] == "error" and "OLMORL_JUDGE_BASE_URL" in results[0]["error"]
    assert results[1]["status"] == "ok" and results[1]["reward"] == 1.0
    ready = httpx.get(f"{url}/readyz", timeout=10)
    assert ready.status_code == 200
    assert ready.json()["verifiers"]["judge"] == {"ready": False, "configured": False,
                                                   "error": results[0]["error"]}


def test_judge_down_then_readyz_reports_it(reward_server) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    url = reward_server(workers=1, judge=JudgeSettings(base_url=dead, model=MODEL, **FAST_RETRIES))
    results = verify(url, [judged("json 9"), {"verifier": "string_f1", "response": "a", "ground_truth": "a"}])
    assert results[0]["status"] == "error" and results[0]["details"]["attempts"] == 3
    assert "connection error" in results[0]["error"]
    assert results[1]["status"] == "ok"
    state = httpx.get(f"{url}/readyz", timeout=10).json()["verifiers"]["judge"]
    assert state["ready"] is False and state["endpoints"][0]["reachable"] is False


def _wait_until_reachable(url: str, expected: list[bool], timeout_s: float = 60.0) -> None:
    """Until /readyz shows the judge endpoints' `reachable` as `expected` (the health probe's verdict)."""
    deadline = time.monotonic() + timeout_s
    while True:
        endpoints = httpx.get(f"{url}/readyz", timeout=10).json()["verifiers"]["judge"]["endpoints"]
        if [e["reachable"] for e in endpoints] == expected or time.monotonic() > deadline:
            return
        time.sleep(0.1)


def test_load_balancing_and_failover(reward_server, fake_judge: FakeOpenAI) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with FakeOpenAI(models=(MODEL,)) as second:
        both = f"{fake_judge.url},{second.url},{dead}"
        # a refused connection fails at once whatever the timeout; a long one keeps a loaded machine's slow
        # answers from the live fakes from reading as failures
        settings = {**FAST_RETRIES, "timeout_s": 10.0}
        url = reward_server(workers=1, judge=JudgeSettings(base_url=both, model=MODEL, **settings))
        _wait_until_reachable(url, [True, True, False])  # the health probe has marked the dead endpoint
        items = [{"verifier": "judge", "prompt": f"Question {i}", "response": "An answer."} for i in range(40)]
        results = verify(url, items)
        assert all(r["status"] == "ok" and r["reward"] == pytest.approx(6 / 9) for r in results), \
            [(r["status"], r["error"]) for r in results if r["status"] != "ok"]
        assert len(fake_judge.requests) >= 10 and len(second.requests) >= 10
        state = httpx.get(f"{url}/readyz", timeout=10).json()["verifiers"]["judge"]
        assert state["ready"] is True and [e["reachable"] for e in state["endpoints"]] == [True, True, False]


def test_concurrency_limit_and_identical_items_share_a_call(reward_server) -> None:
    with FakeOpenAI(models=(MODEL,), latency_s=0.2) as fake:
        url = reward_server(workers=1, judge=JudgeSettings(base_url=fake.url, model=MODEL, concurrency=3))
        items = [{"verifier": "judge", "prompt": f"Q{i}", "response": "A"} for i in range(9)]
        items += [{"verifier": "judge", "prompt": "Q0", "response": "A"}] * 3  # duplicates of the first
        started = time.monotonic()
        results = verify(url, items)
        batch_ms = (time.monotonic() - started) * 1000
        assert all(r["status"] == "ok" for r in results)
        assert fake.max_in_flight == 3
        assert len(fake.requests) == 9
        # each item's own time at the judge (at least its 0.2 s), not the 3 waves its batch took: the items of
        # the later waves read well under the batch's time (relative, so a loaded machine cannot fail it; the
        # old code gave every item the batch's time)
        elapsed = [r["elapsed_ms"] for r in results[:9]]
        assert all(e >= 180 for e in elapsed), elapsed
        assert sum(e < 0.75 * batch_ms for e in elapsed) >= 6, (elapsed, batch_ms)


def test_persistent_cache_across_restarts(reward_server, judge_stack: JudgeStack) -> None:
    items = [{"verifier": "judge", "prompt": f"Persistent Q{i}", "response": "A [[fake: json 9]]"} for i in range(5)]
    first = verify(judge_stack.url, items)
    assert [r["details"]["cache_hit"] for r in first] == [False] * 5
    calls = len(judge_stack.fake.requests)
    second = verify(reward_server(workers=1, judge=judge_stack.settings), items)  # a fresh server process
    assert [r["details"]["cache_hit"] for r in second] == [True] * 5
    assert [r["reward"] for r in second] == [pytest.approx(8 / 9)] * 5
    assert len(judge_stack.fake.requests) == calls
