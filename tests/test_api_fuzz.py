"""Property-based fuzzing of every route in the server's own /openapi.json (schemathesis, positive and
negative cases): no 5xx ever, and every error is a 4xx that says what is wrong. Bounded per route so
CI stays fast."""

from __future__ import annotations

import json

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from olmorl.rewards._local import LocalRewardServer


@pytest.fixture(scope="module")
def api_schema():
    with LocalRewardServer(workers=1, item_timeout_s=2.0) as server:
        yield schemathesis.openapi.from_url(f"{server.url}/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=30, deadline=None, derandomize=True, print_blob=True,
          suppress_health_check=list(HealthCheck))
def test_no_server_errors_and_every_error_explains_itself(case):
    response = case.call(timeout=60)
    assert response.status_code < 500, f"{case.method} {case.path}: {response.status_code} {response.text[:500]}"
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body, dict) and body.get("detail"), response.text[:500]


def test_deeply_nested_bodies_are_4xx_naming_the_limit_on_every_post_route():
    """Tens of thousands of brackets hit the JSON parser's recursion limit: a 422 that names it, on every route
    that takes a body (our own reader on /v1/verify, FastAPI's on the others)."""
    with LocalRewardServer(workers=1) as server:
        paths = httpx.get(f"{server.url}/openapi.json").json()["paths"]
        # /close_session reads only its cookie, never a body
        posts = [path for path, methods in paths.items() if "post" in methods and path != "/close_session"]
        assert "/v1/verify" in posts and "/openrlhf/get_reward" in posts
        for body in ("[" * 50_000 + "]" * 50_000, '{"items": [' + "[" * 30_000 + "]" * 30_000 + "]}"):
            for path in posts:
                reply = httpx.post(f"{server.url}{path}", content=body, timeout=60,
                                   headers={"content-type": "application/json"})
                assert reply.status_code == 422, (path, reply.status_code, reply.text[:200])
                assert "nests deeper than the JSON parser's limit" in reply.json()["detail"][0]["msg"]
        # nesting under the parser's limit is one invalid item with a readable path, not a 5 kB one
        reply = httpx.post(f"{server.url}/v1/verify", timeout=60, json={
            "items": [{"verifier": "math", "response": "x", "ground_truth": json.loads("[" * 900 + "]" * 900)}]})
        result = reply.json()["results"][0]
        assert result["status"] == "invalid" and "levels" in result["error"] and len(result["error"]) < 300
