"""The reward server as a Ray Serve deployment on a real two-node local Ray cluster: two replicas,
one per node, score a mixed 2,000-item batch while one replica is killed mid-batch; the client's
retries bring every item back exactly once, with the reward the in-process verifier gives it
(math, IF and string items: the verifier classes called here; code items: right or wrong by
construction; 20 ms sleeps: 1)."""

from __future__ import annotations

import os
import random
import signal
import threading
import time

import httpx
import pytest

from olmorl.clients import RewardClient
from olmorl.rewards import load_verifiers
from olmorl.rewards.service._local import free_port, wait_until_ready
from olmorl.rewards._settings import SandboxSettings, Settings

pytestmark = pytest.mark.slow

ADD = "```python\ndef add(a, b):\n    return a + b\n```"
SUB = "```python\ndef add(a, b):\n    return a - b\n```"


def mixed_items(count: int, seed: int = 0) -> list[dict]:
    """Math (right and wrong), IF, string match, code (right and wrong) and 20 ms sleeps that make
    the batch last long enough to kill a replica in the middle of it."""
    from _ifeval_cases import CASES

    rng = random.Random(seed)
    items = []
    for i in range(count):
        kind = i % 10
        if kind < 3:
            n = rng.randint(1, 999)
            answer = f"\\frac{{{2 * n}}}{{2}}" if rng.random() < 0.5 else str(n + rng.randint(0, 1))
            items.append({"verifier": "math", "response": f"So the answer is $\\boxed{{{answer}}}$.",
                          "ground_truth": str(n)})
        elif kind < 5:
            instruction, kwargs, passing, failing = rng.choice(CASES[:40])
            items.append({"verifier": "ifeval", "response": passing if rng.random() < 0.5 else failing,
                          "ground_truth": str([{"instruction_id": [instruction], "kwargs": [kwargs or None]}])})
        elif kind < 7:
            word = rng.choice(["cat", "dog", "owl"])
            items.append({"verifier": "string_match", "response": f"<answer>{word}</answer>",
                          "ground_truth": rng.choice(["cat", "dog", "owl"])})
        elif kind == 7 and i % 50 == 7:
            items.append({"verifier": "code", "response": rng.choice([ADD, SUB]),
                          "ground_truth": ["assert add(1, 1) == 2", "assert add(2, 0) == 2"]})
        else:
            items.append({"verifier": "test_sleep", "response": "", "ground_truth": 0.02})
        items[-1]["id"] = str(i)
    return items


def expected_rewards(items: list[dict]) -> dict[str, float]:
    """Rewards from the verifiers called in this process (code: known by construction)."""
    settings = Settings()
    verifiers = {name: cls(settings) for name, cls in load_verifiers(["plugins.blocking"]).items()
                 if name in ("math", "ifeval", "string_match")}
    expected = {}
    for item in items:
        name = item["verifier"]
        if name in verifiers:
            verifier = verifiers[name]
            expected[item["id"]] = verifier.score(verifier.make_task(item["response"], item["ground_truth"], {},
                                                                     None)).reward
        elif name == "code":
            expected[item["id"]] = 1.0 if item["response"] == ADD else 0.5
        else:
            expected[item["id"]] = 1.0
    return expected


def replica_pids() -> dict[str, int]:
    from ray.util.state import list_actors

    return {actor.node_id: actor.pid for actor in list_actors(filters=[("state", "=", "ALIVE")])
            if actor.class_name.startswith("ServeReplica")}


def test_two_replicas_lose_no_item_when_one_is_killed(ray_cluster):
    from olmorl.rewards import serve_rewards
    from ray import serve

    items = mixed_items(2000)
    expected = expected_rewards(items)
    settings = Settings(workers=1, port=free_port(), plugins=["plugins.blocking"], api_key="s3cret",
                        sandbox=SandboxSettings(parallelism=1))
    t0 = time.monotonic()
    url = serve_rewards(settings, ray_address=ray_cluster.address, replicas=2, replica_cpus=1)
    try:
        print(f"deployed in {time.monotonic() - t0:.1f} s")
        pids = replica_pids()
        assert len(pids) == 2, pids  # one replica per node: each reserves a CPU of its own node's two
        head_node = ray_cluster.head_node.node_id
        assert head_node in pids
        # the same app: token, limits, routes
        assert httpx.post(f"{url}/v1/verify", json={"items": items[:2]}).status_code == 401
        headers = {"Authorization": "Bearer s3cret"}
        assert httpx.get(f"{url}/readyz", headers=headers).json()["ready"] is True

        results: list = []
        with RewardClient(url, api_key="s3cret", max_batch_size=50, max_concurrency=4, max_retries=8,
                          timeout=60) as client:
            run = threading.Thread(target=lambda: results.extend(client.verify(items)))
            started = time.monotonic()
            run.start()
            time.sleep(2.0)  # batches in flight on both replicas
            assert run.is_alive(), "the batch finished before a replica could be killed"
            victim = next(pid for node, pid in pids.items() if node != head_node)
            os.kill(victim, signal.SIGKILL)
            run.join(240)
            print(f"batch done {time.monotonic() - started:.1f} s after it started")
        assert not run.is_alive()
        assert [r.id for r in results] == [item["id"] for item in items]  # all back, once, in order
        assert {r.status for r in results} == {"ok"}, {r.status for r in results}
        wrong = [(r.id, r.reward, expected[r.id]) for r in results if abs(r.reward - expected[r.id]) > 1e-9]
        assert not wrong, wrong[:5]
        assert 0 < sum(r.reward for r in results) < len(results)  # right and wrong answers both present
    finally:
        serve.shutdown()


def test_cli_deploys_on_ray_and_removes_the_deployment_on_sigterm(ray_cluster, tmp_path):
    import subprocess
    import sys

    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "olmorl.rewards", "serve", "--ray-address", ray_cluster.address,
                             "--replicas", "1", "--workers", "1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(url, proc, 180, str(tmp_path / "serve.log"))
        item = {"verifier": "math", "response": "$\\boxed{\\frac{1}{2}}$", "ground_truth": "0.5"}
        assert httpx.post(f"{url}/v1/verify", json={"items": [item]}).json()["results"][0]["reward"] == 1.0
        assert "olmorl_items_total" in httpx.get(f"{url}/metrics").text
        # Replicas answer before `serve.run` returns; the CLI logs its address once it is done deploying.
        deadline = time.monotonic() + 60
        while "reward server on Ray Serve:" not in (tmp_path / "serve.log").read_text():
            assert time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 0
    from ray.util.state import list_actors

    alive = [a for a in list_actors(filters=[("state", "=", "ALIVE")]) if a.class_name.startswith("ServeReplica")]
    assert alive == []  # SIGTERM removed the deployment
    from ray import serve

    serve.shutdown()
