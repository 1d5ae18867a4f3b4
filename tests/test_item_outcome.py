"""One item outcome: a verifier returns a Score (`ok`) or raises ItemError(status, message, details); the item
carries that status, message and details with reward null, from the worker pool and from the event loop alike."""

from __future__ import annotations

import pickle

import httpx
import pytest

from olmorl.rewards import InvalidInput, ItemError, Score


def test_item_error_statuses_and_pickling():
    with pytest.raises(ValueError, match="invalid, error or timeout"):
        ItemError("ok", "an error is never ok")  # type: ignore[arg-type]
    for exc in (InvalidInput("bad", {"field": "x"}), ItemError("timeout", "slow", {"reason": "t"}, 1.5)):
        back = pickle.loads(pickle.dumps(exc))  # how a pool worker's outcome reaches the server
        assert type(back) is type(exc) and (back.status, back.message, back.details, back.elapsed_s) == \
            (exc.status, exc.message, exc.details, exc.elapsed_s)
    assert isinstance(InvalidInput("x"), ItemError) and InvalidInput("x").status == "invalid"
    with pytest.raises(TypeError):
        Score(0.0, {}, status="error")  # type: ignore[call-arg]  # no second way to say it


def test_item_errors_reach_the_results(reward_server):
    url = reward_server(workers=1, plugins=["plugins.item_errors"])
    items = [{"id": f"{where}-{response}", "verifier": f"test_item_errors_{where}", "response": response}
             for where in ("pool", "loop") for response in ("invalid", "error", "timeout", "fine")]
    results = {r["id"]: r for r in httpx.post(f"{url}/v1/verify", json={"items": items}, timeout=60).json()["results"]}
    for where in ("pool", "loop"):
        invalid = results[f"{where}-invalid"]
        assert (invalid["status"], invalid["reward"], invalid["error"]) == ("invalid", None, f"bad item ({where})")
        assert invalid["details"] == {"where": where, "field": "response"}
        for status in ("error", "timeout"):
            result = results[f"{where}-{status}"]
            assert (result["status"], result["reward"], result["error"]) == (status, None, f"{status} ({where})")
            assert result["details"] == {"where": where} and result["elapsed_ms"] == 250.0  # the verifier's own time
        assert (results[f"{where}-fine"]["status"], results[f"{where}-fine"]["reward"]) == ("ok", 1.0)
