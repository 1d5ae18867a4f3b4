from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from olmorl.rewards.service._local import LocalRewardServer

TESTS = Path(__file__).parent
# The swe task repositories hold their own tests (run inside task containers), not this suite's.
collect_ignore_glob = ["swe_tasks/*"]
# Subprocess servers import test plugins (tests/plugins/...) from here.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH")]))
sys.path.insert(0, str(TESTS))


@pytest.fixture
def reward_server(tmp_path):
    """Factory: `url = reward_server(workers=1, judge=JudgeSettings(...))` starts a real server
    (`python -m olmorl.rewards serve`) on 127.0.0.1 at a random port; all are stopped at teardown."""
    started: list[LocalRewardServer] = []

    def start(**settings) -> str:
        log = tmp_path / f"reward-server-{len(started)}.log"
        server = LocalRewardServer(log_path=str(log), **settings).start()
        started.append(server)
        return server.url

    start.servers = started  # type: ignore[attr-defined]  # for tests that kill or restart one
    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def ray_cluster():
    """A real two-node Ray cluster on loopback (ray.cluster_utils.Cluster: a head and a second node,
    each its own raylet with 2 logical CPUs and a small object store), shut down after the session."""
    pytest.importorskip("ray", reason="the [ray] extra is not installed")
    import ray
    from ray.cluster_utils import Cluster

    store = 80 * 2**20  # small: the machine is shared
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "object_store_memory": store,
                                                            "resources": {"head": 1}})
    cluster.add_node(num_cpus=2, object_store_memory=store, resources={"second": 1})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
