"""The v1 HTTP contract against a real server process."""

from __future__ import annotations

import httpx
import pytest

from olmorl.rewards.service._local import LocalRewardServer


@pytest.fixture(scope="module")
def server():
    with LocalRewardServer(workers=1, max_items_per_request=50, max_body_bytes=200_000,
                           max_ground_truth_chars=100_000) as srv:
        yield srv.url


def post(url: str, body, **kw) -> httpx.Response:
    return httpx.post(f"{url}/v1/verify", json=body, timeout=30, **kw)


def test_mixed_batch_every_item_gets_a_status_in_order(server):
    items = [
        {"id": "good", "verifier": "string_match", "response": "<answer>Paris</answer>", "ground_truth": "paris"},
        {"id": "alias", "verifier": "STRING_MATCHER", "response": "<answer>Rome</answer>", "ground_truth": "Paris"},
        {"id": "unknown", "verifier": "no_such_verifier", "response": "x"},
        {"id": "no-response", "verifier": "string_match"},
        {"id": "bad-gt", "verifier": "string_match", "response": "x", "ground_truth": {"a": 1}},
        {"id": "bad-option", "verifier": "string_match", "response": "x", "ground_truth": "x", "options": {"z": 1}},
        "not an object",
        {"id": "f1", "verifier": "string_f1", "response": "<think>hmm</think>the big cat", "ground_truth": ["big cat"]},
    ]
    reply = post(server, {"items": items})
    assert reply.status_code == 200
    results = reply.json()["results"]
    assert [r["id"] for r in results] == ["good", "alias", "unknown", "no-response", "bad-gt", "bad-option", None, "f1"]
    assert [r["status"] for r in results] == ["ok", "ok", "invalid", "invalid", "invalid", "invalid", "invalid", "ok"]
    # not scored is null, never a 0 a reader of `reward` could take for a wrong answer
    assert [r["reward"] for r in results] == [1.0, 0.0, None, None, None, None, None, 1.0]
    assert results[1]["verifier"] == "string_match"  # aliases resolve to the canonical name
    assert "unknown verifier 'no_such_verifier'" in results[2]["error"]
    assert results[3]["error"].startswith("item: response")
    assert results[4]["error"].startswith("ground_truth")
    assert results[5]["error"].startswith("options: z")
    assert all(r["elapsed_ms"] >= 0 for r in results)


def test_missing_and_oversized_ground_truths_are_invalid_and_say_so(server):
    items = [{"verifier": "math", "response": "\\boxed{1}"},
             {"verifier": "string_match", "response": "x", "ground_truth": None},
             {"verifier": "math", "response": "\\boxed{1}", "ground_truth": "1+" * 60_000 + "1"}]
    results = post(server, {"items": items}).json()["results"]
    assert [r["status"] for r in results] == ["invalid"] * 3
    assert results[0]["error"] == "ground_truth: missing; the math verifier needs one (GET /v1/verifiers shows its shape)"
    assert results[1]["error"].startswith("ground_truth: missing; the string_match verifier")
    # refused at once (like an over-long response), not after holding a worker until the item timeout
    assert results[2]["error"] == ("ground_truth has 120001 characters as JSON; the limit is 100000 "
                                   "(max_ground_truth_chars)") and results[2]["elapsed_ms"] < 1000


def test_empty_batch(server):
    reply = post(server, {"items": []})
    assert reply.status_code == 200 and reply.json() == {"results": []}


@pytest.mark.parametrize(
    "content, field",
    [(b"{not json", "body"), (b'{"things": []}', "items"), (b'{"items": {"a": 1}}', "items"), (b"[]", "items")],
)
def test_malformed_body_is_422_naming_the_field(server, content, field):
    reply = httpx.post(f"{server}/v1/verify", content=content, headers={"content-type": "application/json"})
    assert reply.status_code == 422
    assert reply.json()["detail"][0]["loc"][-1] == field


def test_limits_are_413_naming_the_limit(server):
    item = {"verifier": "string_match", "response": "x", "ground_truth": "x"}
    too_many = post(server, {"items": [item] * 51})
    assert too_many.status_code == 413 and "max_items_per_request=50" in too_many.json()["detail"]
    too_big = post(server, {"items": [{**item, "response": "x" * 300_000}]})
    assert too_big.status_code == 413 and "max_body_bytes" in too_big.json()["detail"]


def test_verifier_listing_and_docs(server):
    listing = {v["name"]: v for v in httpx.get(f"{server}/v1/verifiers").json()}
    assert "string_matcher" in listing["string_match"]["aliases"]
    assert listing["string_match"]["ground_truth"]  # a JSON schema
    schema = httpx.get(f"{server}/openapi.json").json()
    assert "VerifyRequest" in schema["components"]["schemas"]
    body = schema["paths"]["/v1/verify"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/VerifyRequest"}
    # the docs pages load their JavaScript and CSS from this server, not a CDN (they work offline)
    for page, assets in (("/docs", ("swagger-ui-bundle.js", "swagger-ui.css")), ("/redoc", ("redoc.standalone.js",))):
        html = httpx.get(f"{server}{page}").text
        assert "cdn" not in html.lower() and "googleapis" not in html
        for asset in assets:
            assert f'"/docs/static/{asset}"' in html
            fetched = httpx.get(f"{server}/docs/static/{asset}")
            assert fetched.status_code == 200 and len(fetched.content) > 100_000
    text = httpx.get(f"{server}/metrics").text
    for route in ("/docs", "/redoc", "/openapi.json", "/docs/static"):
        assert f'olmorl_requests_total{{code="200",route="{route}"}}' in text, route


def test_health_ready_metrics(server):
    assert httpx.get(f"{server}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{server}/readyz")
    assert ready.status_code == 200 and ready.json()["ready"] is True
    post(server, {"items": [{"verifier": "string_match", "response": "x", "ground_truth": "y"}]})
    text = httpx.get(f"{server}/metrics").text
    assert 'olmorl_items_total{status="ok",verifier="string_match"}' in text
    assert "olmorl_item_duration_seconds_bucket" in text
    assert 'olmorl_requests_total{code="200",route="/v1/verify"}' in text
    assert "olmorl_inflight_items" in text


def test_metric_labels_come_from_the_registry(server):
    """Made-up verifier names are one `unknown` label, so a client cannot grow the label set without bound."""
    made_up = [f"made_up_{i}" for i in range(5)]
    results = post(server, {"items": [{"verifier": name, "response": "x"} for name in made_up]}).json()["results"]
    assert [r["verifier"] for r in results] == made_up  # the reply still names what was asked
    text = httpx.get(f"{server}/metrics").text
    assert "made_up_" not in text
    assert 'olmorl_items_total{status="invalid",verifier="unknown"}' in text
    assert 'olmorl_item_duration_seconds_count{verifier="unknown"}' in text


def test_bearer_token(reward_server):
    url = reward_server(workers=1, api_key="s3cret")
    body = {"items": []}
    assert post(url, body).status_code == 401
    assert post(url, body, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert post(url, body, headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert httpx.get(f"{url}/v1/verifiers").status_code == 401
    assert httpx.get(f"{url}/healthz").status_code == 200  # probes stay open


def test_elapsed_ms_is_each_items_own_time_not_its_batchs(reward_server):
    """A math item next to a slow pool item and a slow sandboxed program reports its own few milliseconds (it
    used to report the whole batch's time); each slow item reports what it ran, and the histogram agrees."""
    url = reward_server(workers=1, plugins=["plugins.blocking"])
    slow_program = "```python\nimport time\ndef f():\n    time.sleep(1.0)\n    return 1\n```"
    items = [{"id": "math", "verifier": "math", "response": "\\boxed{2}", "ground_truth": "2"},
             {"id": "sleep", "verifier": "test_sleep", "response": "", "ground_truth": 0.8},
             {"id": "code", "verifier": "code", "response": slow_program, "ground_truth": ["assert f() == 1"],
              "options": {"timeout_s": 5}},
             {"id": "unknown", "verifier": "no_such_verifier", "response": "x"}]
    results = {r["id"]: r for r in post(url, {"items": items}).json()["results"]}
    assert all(r["status"] == "ok" for r in list(results.values())[:3]), results
    elapsed = {key: r["elapsed_ms"] for key, r in results.items()}
    assert elapsed["math"] < 300 and elapsed["unknown"] < 50, elapsed
    assert 750 <= elapsed["sleep"] < 1500, elapsed
    assert 950 <= elapsed["code"] < 3000, elapsed
    text = httpx.get(f"{url}/metrics").text
    math_seconds = float(next(line.split()[-1] for line in text.splitlines()
                              if line.startswith('olmorl_item_duration_seconds_sum{verifier="math"}')))
    assert math_seconds < 0.3, math_seconds


def test_an_optional_setting_set_to_none_reaches_the_server_as_none(monkeypatch):
    """LocalRewardServer passes settings as OLMORL_* variables, an explicit None as "none": every section reads it
    back as None (a swe runtime of "none" would name an OCI runtime that does not exist)."""
    from olmorl.rewards._settings import SandboxSettings, Settings, SqlSettings, SweSettings
    from olmorl.rewards.service._local import settings_env

    env = settings_env({"swe": SweSettings(runtime=None), "sandbox": SandboxSettings(docker_runtime=None),
                        "sql": SqlSettings(data_dir=None)})
    assert env["OLMORL_SWE_RUNTIME"] == "none"
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings()
    assert (settings.swe.runtime, settings.sandbox.docker_runtime, settings.sql.data_dir) == (None, None, None)
