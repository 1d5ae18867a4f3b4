"""Property-based fuzzing of every route in the server's own /openapi.json (schemathesis, positive and
negative cases): no 5xx ever, and every error is a 4xx that says what is wrong. Bounded per route so
CI stays fast."""

from __future__ import annotations

import json

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from olmorl.rewards.service._local import LocalRewardServer


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


def _post_routes(url: str) -> list[str]:
    paths = httpx.get(f"{url}/openapi.json").json()["paths"]
    return [path for path, methods in paths.items() if "post" in methods]


def test_deeply_nested_bodies_are_422_naming_the_limit_on_every_post_route():
    """Nesting past max_json_depth is refused once, before any route parses the body: a 422 that names the
    setting, on every route that takes a body (our own reader on /v1/verify, FastAPI's, the Gym routes')."""
    with LocalRewardServer(workers=1, max_json_depth=40) as server:
        posts = _post_routes(server.url)
        assert {"/v1/verify", "/openrlhf/get_reward", "/run_code", "/seed_session"} <= set(posts)
        # 41 levels: under the parser's limit (the old server took it), over the setting
        too_deep = ["[" * 41 + "]" * 41, '{"items": [' + "[" * 40 + "]" * 40 + "]}", "[" * 50_000 + "]" * 50_000]
        for body in too_deep:
            for path in posts:
                reply = httpx.post(f"{server.url}{path}", content=body, timeout=60,
                                   headers={"content-type": "application/json"})
                assert reply.status_code == 422, (path, reply.status_code, reply.text[:200])
                assert "nests deeper than max_json_depth=40" in reply.json()["detail"][0]["msg"]
        # brackets inside strings are text, not nesting
        reply = httpx.post(f"{server.url}/v1/verify", timeout=60, json={"items": [
            {"verifier": "string_match", "response": "[" * 100 + '\\"{' * 50, "ground_truth": "x"}]})
        assert reply.status_code == 200 and reply.json()["results"][0]["status"] == "ok"
        # nesting at the limit reaches the route: here one invalid item, not the batch
        reply = httpx.post(f"{server.url}/v1/verify", timeout=60, json={
            "items": [{"verifier": "math", "response": "x", "ground_truth": json.loads("[" * 37 + "]" * 37)}]})
        assert reply.status_code == 200 and reply.json()["results"][0]["status"] == "invalid"


def test_every_post_route_bounds_the_body_chunked_or_not():
    """max_body_bytes holds on every route, for a declared Content-Length and for a chunked body that declares
    none (counted as it streams): a 413 with a JSON error naming the setting."""
    limit = 50_000
    with LocalRewardServer(workers=1, max_body_bytes=limit) as server:
        posts = _post_routes(server.url)
        body = json.dumps({"items": [], "query": [], "code": "x" * limit}).encode()

        def chunked():
            for start in range(0, len(body), 8192):
                yield body[start:start + 8192]

        for path in posts:
            for content in (body, chunked()):
                reply = httpx.post(f"{server.url}{path}", content=content, timeout=60,
                                   headers={"content-type": "application/json"})
                assert reply.status_code == 413, (path, reply.status_code, reply.text[:200])
                assert f"max_body_bytes={limit}" in reply.json()["detail"]
        under = httpx.post(f"{server.url}/v1/verify", timeout=60, json={"items": []})
        assert under.status_code == 200
        assert 'olmorl_requests_total{code="413",route="unmatched"}' in httpx.get(f"{server.url}/metrics").text
