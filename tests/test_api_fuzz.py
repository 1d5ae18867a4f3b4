"""Property-based fuzzing of every route in the server's own /openapi.json (schemathesis, positive and
negative cases): no 5xx ever, and every error is a 4xx that says what is wrong. Bounded per route so
CI stays fast."""

from __future__ import annotations

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
