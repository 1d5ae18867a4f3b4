"""The `ifeval` verifier end to end through a real reward server: good and bad items in one batch."""

from __future__ import annotations

import httpx


def test_ifeval_batch_through_the_server(reward_server):
    url = reward_server(workers=1)
    open_instruct_gt = "[{'instruction_id': ['punctuation:no_comma', 'last_word:last_word_answer'], 'kwargs': [None, {'last_word': 'brief'}]}]"
    items = [
        {"id": "good", "verifier": "ifeval", "response": "<think>hmm, ok</think>Keep it brief", "ground_truth": open_instruct_gt},
        {"id": "half", "verifier": "ifeval", "response": "Keep it short, brief", "ground_truth": open_instruct_gt},
        {"id": "unknown-id", "verifier": "ifeval", "response": "x", "ground_truth": [{"instruction_id": ["made:up"], "kwargs": [None]}]},
        {"id": "bad-kwargs", "verifier": "ifeval", "response": "x",
         "ground_truth": [{"instruction_id": ["keywords:frequency"], "kwargs": [{"keyword": "a", "frequency": "many", "relation": "at least"}]}]},
        {"id": "tulu3", "verifier": "ifeval_old", "response": "all lower case", "ground_truth": {"func_name": "validate_lowercase"}},
        {"id": "loose-all", "verifier": "ifeval", "response": 'Here:\n"quoted"', "options": {"mode": "loose", "score": "all"},
         "ground_truth": [{"instruction_id": ["startend:quotation", "count:numbers"], "kwargs": [None, {"N": 0.0}]}]},
    ]
    response = httpx.post(f"{url}/v1/verify", json={"items": items}, timeout=60)
    response.raise_for_status()
    results = {r["id"]: r for r in response.json()["results"]}
    assert results["good"]["status"] == "ok" and results["good"]["reward"] == 1.0
    assert results["half"]["reward"] == 0.5
    assert [c["passed"] for c in results["half"]["details"]["constraints"]] == [False, True]
    assert results["unknown-id"]["status"] == "invalid" and "made:up" in results["unknown-id"]["error"]
    assert results["bad-kwargs"]["status"] == "invalid" and "keywords:frequency" in results["bad-kwargs"]["error"]
    assert results["tulu3"]["reward"] == 1.0
    assert results["loose-all"]["reward"] == 1.0
    listed = httpx.get(f"{url}/v1/verifiers", timeout=10).json()
    info = next(v for v in (listed["verifiers"] if isinstance(listed, dict) else listed) if v["name"] == "ifeval")
    assert "ifeval_old" in info["aliases"] and any(n.startswith("fixed:") for n in info["notes"])
