"""`olmorl.verify` and its twins score in-process exactly as `POST /v1/verify` does on a real server with the same
settings: a mixed batch (math, ifeval, code in a real bwrap sandbox, bad items, an unknown verifier) compared field
by field, timings aside."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import time

import httpx
import pytest
from pydantic import ValidationError

import olmorl
from olmorl.rewards import VerifyItem, VerifyResponse
from olmorl.rewards._settings import SandboxSettings

SETTINGS = {"workers": 1, "max_response_chars": 500, "sandbox": SandboxSettings(backend="bwrap")}
ADD = "```python\ndef add(a, b):\n    return a {} b\n```"
IFEVAL_TRUTH = [{"instruction_id": ["keywords:frequency", "punctuation:no_comma"],
                 "kwargs": [{"keyword": "ocean", "frequency": 2, "relation": "at least"}, None]}]
MIXED = [
    {"id": "m1", "verifier": "math", "response": "So $\\boxed{\\frac{1}{2}}$.", "ground_truth": "0.5"},
    {"id": "m2", "verifier": "gsm8k", "response": "... #### 17", "ground_truth": "18"},
    {"id": "if", "verifier": "ifeval", "response": "the ocean is wide, and the ocean is deep.",
     "ground_truth": IFEVAL_TRUTH},
    {"id": "c1", "verifier": "code", "response": ADD.format("+"), "ground_truth": ["assert add(1, 2) == 3"]},
    {"id": "c2", "verifier": "code", "response": ADD.format("-"),
     "ground_truth": ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]},
    {"id": "io", "verifier": "code_stdio", "response": "```python\nprint(int(input()) * 2)\n```",
     "ground_truth": [{"input": "2\n", "output": "4\n"}, {"input": "3\n", "output": "7\n"}]},
    {"id": "loop", "verifier": "code", "response": "```python\nwhile True: pass\n```",
     "ground_truth": ["assert True"], "options": {"timeout_s": 0.5}},
    {"id": "nogt", "verifier": "math", "response": "\\boxed{4}"},  # no ground truth
    {"id": "long", "verifier": "math", "response": "x" * 501, "ground_truth": "1"},  # past max_response_chars
    {"id": "extra", "verifier": "math", "response": "4", "ground_truth": "4", "colour": "red"},  # unknown field
    {"verifier": 7, "response": "4"},
    "not an item",
    {"id": "who", "verifier": "no_such_verifier", "response": "4", "ground_truth": "4"},
    {"id": "opt", "verifier": "code", "response": ADD.format("+"), "ground_truth": ["assert add(1, 2) == 3"],
     "options": {"no_such_option": 1}},
]
TIMINGS = {"elapsed_ms", "runtime_s"}


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def served(url: str, items: list) -> list[dict]:
    response = httpx.post(f"{url}/v1/verify", json={"items": items}, timeout=120)
    assert response.status_code == 200, response.text
    return [without_timings(r.model_dump()) for r in VerifyResponse.model_validate_json(response.content).results]


def test_verify_equals_the_server_field_by_field(reward_server):
    url = reward_server(**SETTINGS)
    expected = served(url, MIXED)
    got = [without_timings(r.model_dump()) for r in olmorl.verify(MIXED, **SETTINGS)]
    assert got == expected
    # the batch covers what it claims: right and wrong answers, tests failed and timed out in the sandbox, refusals
    assert [r["status"] for r in got] == ["ok"] * 7 + ["invalid"] * 7
    assert [r["reward"] for r in got[:7]] == [1.0, 0.0, 0.5, 1.0, 0.5, 0.5, 0.0]
    assert got[3]["details"]["backend"] == "bwrap" and got[6]["details"]["counts"] == {"timeout": 1}
    assert all(r["error"] for r in got[7:]) and all(r["reward"] is None for r in got[7:])


async def test_async_twin_and_reused_verifier_give_the_same_results():
    expected = [without_timings(r.model_dump()) for r in olmorl.verify(MIXED, **SETTINGS)]
    assert [without_timings(r.model_dump()) for r in await olmorl.averify(MIXED, **SETTINGS)] == expected
    async with olmorl.AsyncInProcessVerifier(**SETTINGS) as verifier:
        first = await verifier.verify(MIXED)
        again = await verifier.verify([VerifyItem.model_validate(MIXED[0])] + MIXED[1:])  # models, as the clients take
        assert [without_timings(r.model_dump()) for r in first] == expected
        assert [without_timings(r.model_dump()) for r in again] == expected
        assert {"math", "code", "ifeval"} <= {info.name for info in await verifier.verifiers()}
    with pytest.raises(RuntimeError, match="closed"):  # not a new pool started behind the caller's back
        await verifier.verify(MIXED[:1])


def test_a_kept_verifier_stays_warm_and_works_inside_a_running_loop():
    started = time.perf_counter()
    with olmorl.InProcessVerifier(workers=1) as verifier:
        start_s = time.perf_counter() - started
        call_started = time.perf_counter()
        assert [r.reward for r in verifier.verify(MIXED[:3])] == [1.0, 0.0, 0.5]
        call_s = time.perf_counter() - call_started

        async def inside_a_loop():  # a notebook or a trainer calling the blocking API from async code
            return verifier.verify(MIXED[:1])

        assert asyncio.run(inside_a_loop())[0].reward == 1.0
        # the server freezes its start-up heap for the workers' sake; the caller's heap must stay collectable
        assert gc.get_freeze_count() == 0
    print(f"start {start_s:.2f} s, warm call of 3 items {call_s * 1000:.1f} ms")
    assert call_s < start_s  # the pool is reused, not started per call
    for call in (lambda: verifier.verify(MIXED[:1]), verifier.verifiers):
        with pytest.raises(RuntimeError, match="closed"):
            call()


def test_items_that_no_server_could_receive_are_invalid_and_the_rest_still_scored():
    results = olmorl.verify([{"id": "set", "verifier": "math", "response": "4", "ground_truth": {4}},
                             MIXED[0], {"id": "tuple", "verifier": "math", "response": "4", "ground_truth": ("4",)}],
                            workers=1)
    assert results[0].status == "invalid" and "not JSON" in results[0].error and results[0].id == "set"
    assert results[0].reward is None
    assert results[1].status == "ok" and results[1].reward == 1.0
    assert (results[2].id, results[2].status, results[2].reward) == ("tuple", "ok", 1.0)  # a JSON list, as sent


def test_batches_past_the_request_limit_are_split_not_refused():
    items = [{"id": str(n), "verifier": "math", "response": f"\\boxed{{{n}}}", "ground_truth": "3"} for n in range(7)]
    results = olmorl.verify(items, workers=1, max_items_per_request=2)
    assert [(r.id, r.reward) for r in results] == [(str(n), float(n == 3)) for n in range(7)]


def test_settings_are_checked_by_name_and_value():
    with pytest.raises(TypeError, match="'workerz' \\(did you mean 'workers'\\?\\)"):
        olmorl.verify(MIXED[:1], workerz=1)
    with pytest.raises(ValidationError, match="workers"):
        olmorl.verify(MIXED[:1], workers=0)
    with pytest.raises(TypeError, match="list of items"):
        olmorl.verify(MIXED[0], workers=1)


def test_import_olmorl_loads_no_server_code_and_a_missing_extra_is_named():
    lean = subprocess.run([sys.executable, "-c", "import sys, olmorl; olmorl.InProcessVerifier; "
                           "print(sorted(m for m in sys.modules if m.split('.')[0] in "
                           "('fastapi', 'uvicorn', 'sympy', 'pydantic_settings') or m == 'olmorl.rewards.engine._engine'))"],
                          capture_output=True, text=True, check=True)
    assert lean.stdout.strip() == "[]"
    # the client install: no pydantic_settings (the [server] extra)
    missing = subprocess.run([sys.executable, "-c", "import sys; sys.modules['pydantic_settings'] = None; "
                              "import olmorl; olmorl.verify([])"], capture_output=True, text=True)
    assert missing.returncode != 0 and "pip install 'olmorl[server]'" in missing.stderr
