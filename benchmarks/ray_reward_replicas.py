"""Reward items/s through the Ray Serve deployment with 1 and with 2 replicas, in one run.

A local two-node Ray cluster (ray.cluster_utils.Cluster on loopback, 1 logical CPU per node), one
worker per replica, each replica reserving its node's CPU: with 2 replicas each gets a node (and, on
an idle 2-core machine, a core) of its own. The items are the CPU-bound math mix of
benchmarks/math_throughput.py (no I/O), sent by 4 concurrent clients in batches of 128 through the one
HTTP address. On this 2-core machine, shared with other work, the cluster's own processes (GCS,
raylets, Serve controller and proxy, the client) compete with the replicas for the same two cores,
so the ratio shows how far the second replica helps here, not how replicas scale on real nodes.

    python benchmarks/ray_reward_replicas.py [--items 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import percentile  # noqa: E402
from math_throughput import make_items  # noqa: E402

from olmorl.rewards.service._local import free_port  # noqa: E402
from olmorl.rewards._settings import Settings  # noqa: E402


async def _send(url: str, batches: list[list[dict]], clients: int) -> list[float]:
    latencies: list[float] = []
    queue = list(batches)

    async def client() -> None:
        async with httpx.AsyncClient(timeout=600) as http:
            while queue:
                reply = await http.post(f"{url}/v1/verify", json={"items": queue.pop()})
                reply.raise_for_status()
                latencies.extend(r["elapsed_ms"] / 1000 for r in reply.json()["results"])

    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies


def measure(url: str, items: list[dict], clients: int) -> tuple[float, list[float]]:
    batches = [items[i:i + 128] for i in range(0, len(items), 128)]
    asyncio.run(_send(url, batches[:4], clients))  # warm every replica's workers
    start = time.perf_counter()
    latencies = asyncio.run(_send(url, batches, clients))
    return len(items) / (time.perf_counter() - start), latencies


def main() -> None:
    import ray
    from ray import serve
    from ray.cluster_utils import Cluster

    from olmorl.rewards.service._ray_serve import APP_NAME, serve_rewards

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    items = make_items(args.items)
    print(f"{len(items)} math items, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (shared machine)")
    store = 100 * 2**20
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": store})
    cluster.add_node(num_cpus=1, object_store_memory=store)
    rows = []
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        settings = Settings(workers=1, port=free_port(), log_level="warning")
        for replicas in (1, 2):
            url = serve_rewards(settings, ray_address=cluster.address, replicas=replicas, replica_cpus=1)
            rate, latencies = measure(url, items, args.clients)
            rows.append((replicas, rate, latencies))
            serve.delete(APP_NAME)
        serve.shutdown()
    finally:
        ray.shutdown()
        cluster.shutdown()
    print(f"{'replicas (1 worker each)':<28}{'items/s':>9}{'item p50 ms':>12}{'item p99 ms':>12}")
    for replicas, rate, latencies in rows:
        print(f"{replicas:<28}{rate:>9.0f}{1000 * statistics.median(latencies):>12.1f}"
              f"{1000 * percentile(latencies, 0.99):>12.1f}")
    print(f"2 replicas / 1 replica: {rows[1][1] / rows[0][1]:.2f}x (2 cores shared with the cluster's own "
          f"processes and other work: this machine cannot show replica scaling; load average now "
          f"{os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
