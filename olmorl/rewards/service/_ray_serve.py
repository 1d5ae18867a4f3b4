"""The reward server as a Ray Serve deployment ([ray] extra).

Each replica builds the same FastAPI app as `olmorl-rewards serve` (`create_app`): same routes,
token, limits and metrics, and its own RewardEngine with its own killable worker pool and sandbox
slots, so pool and sandbox work spreads over every node that holds a replica. Serve runs the app's
lifespan in each replica (workers start before the replica takes traffic, stop when it goes) and
routes every request to one replica behind one HTTP address (the proxy on the head node).

A replica that dies mid-request answers its in-flight requests with a 5xx; the client retries those
batches on a live replica, so each item comes back exactly once. Serve replaces the dead replica.
`/metrics` describes the replica that answers it; Ray's own metrics export covers the deployment.

    address = serve_rewards(Settings(workers=2), ray_address="auto", replicas=4)
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from olmorl.rewards._settings import Settings

log = logging.getLogger("olmorl.rewards")

APP_NAME = "olmorl-rewards"


def reward_deployment(settings: Settings, *, replicas: int = 1, min_replicas: int | None = None,
                      max_replicas: int | None = None, replica_cpus: float | None = None) -> Any:
    """A bound Serve application of the reward server: `replicas` fixed replicas, or autoscaling
    between `min_replicas` and `max_replicas` on requests in flight per replica. Each replica
    reserves `replica_cpus` CPUs (default: its worker count), which is what spreads replicas over nodes."""
    from ray import serve

    from olmorl.rewards.service._server import create_app

    def build_app() -> Any:  # runs in each replica
        logging.basicConfig(level=settings.log_level.upper(),
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        return create_app(settings)

    @serve.ingress(build_app)
    class RewardReplica:
        """One replica of the reward server: its own engine, worker pool and sandbox slots."""

    options: dict[str, Any] = {
        "name": "RewardServer",
        "ray_actor_options": {"num_cpus": replica_cpus if replica_cpus is not None else settings.workers},
        # A batch is one request; the engine interleaves concurrent batches itself.
        "max_ongoing_requests": 64,
        "graceful_shutdown_timeout_s": 30,
    }
    if min_replicas is not None or max_replicas is not None:
        low = min_replicas if min_replicas is not None else 1
        options["autoscaling_config"] = {"min_replicas": low, "initial_replicas": max(low, 1),
                                         "max_replicas": max_replicas if max_replicas is not None else max(low, replicas),
                                         "target_ongoing_requests": 2}
    else:
        options["num_replicas"] = replicas
    return serve.deployment(**options)(RewardReplica).bind()


def serve_rewards(settings: Settings, *, ray_address: str, replicas: int = 1, min_replicas: int | None = None,
                  max_replicas: int | None = None, replica_cpus: float | None = None) -> str:
    """Connect to the Ray cluster at `ray_address`, deploy the reward server on it with its HTTP
    proxy at settings.host:settings.port on the head node, and return that URL once every replica
    is ready. The deployment outlives this call; `stop_rewards()` removes it."""
    import ray
    from ray import serve

    if not ray.is_initialized():
        ray.init(address=ray_address, log_to_driver=False)
    serve.start(proxy_location="HeadOnly", http_options={"host": settings.host, "port": settings.port})
    serve.run(reward_deployment(settings, replicas=replicas, min_replicas=min_replicas, max_replicas=max_replicas,
                                replica_cpus=replica_cpus), name=APP_NAME, route_prefix="/")
    # Serve already running on the cluster keeps its own HTTP options: answer with the address it has.
    from ray.serve.context import _get_global_client

    client = _get_global_client()
    assert client is not None, "serve.run returned without a Serve controller"
    http = client.http_config
    if http.port != settings.port:
        log.warning("Ray Serve already listens on port %d; the reward server is there, not on %d", http.port,
                    settings.port)
    host = "127.0.0.1" if http.host in ("0.0.0.0", "::") else http.host
    return f"http://{host}:{http.port}"


def stop_rewards() -> None:
    """Delete the reward deployment (its replicas stop their worker pools) and disconnect."""
    import ray
    from ray import serve

    if ray.is_initialized():
        undeploy()
        ray.shutdown()


def undeploy() -> None:
    """Delete the reward deployment; stop Serve too when nothing else runs on it."""
    from ray import serve

    serve.delete(APP_NAME)
    if not serve.status().applications:
        serve.shutdown()


def run_until_signalled(settings: Settings, **options: Any) -> None:
    """`olmorl-rewards serve --ray-address`: deploy, log the URL, and remove the deployment on
    SIGINT/SIGTERM."""
    stop = threading.Event()
    try:
        url = serve_rewards(settings, **options)
        for signum in (signal.SIGINT, signal.SIGTERM):  # after ray.init, which installs handlers of its own
            signal.signal(signum, lambda *_: stop.set())
        log.info("olmorl reward server on Ray Serve: %s (%s)", url,
                 ", ".join(f"{k}={v}" for k, v in options.items() if v is not None))
        stop.wait()
    except SystemExit:  # SIGTERM during start-up: ray.init's handler exits; remove what was deployed all the same
        log.info("stopped during start-up")
    finally:
        stop_rewards()
