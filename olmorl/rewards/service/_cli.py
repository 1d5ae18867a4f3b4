"""`olmorl-rewards serve` runs the reward server; `olmorl-rewards verify FILE` scores a dataset."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import socket
import sys
from typing import Any

from pydantic import ValidationError

from olmorl.rewards._settings import Settings


def build_parser() -> argparse.ArgumentParser:
    from olmorl import __version__

    parser = argparse.ArgumentParser(prog="olmorl-rewards", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the reward server (settings also from OLMORL_* env vars)")
    serve.add_argument("--host", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="bind port (default 8000)")
    serve.add_argument("--workers", type=int, help="verification worker processes (default: one per core)")
    serve.add_argument("--item-timeout", type=float, dest="item_timeout_s", help="hard limit per item, seconds")
    serve.add_argument("--plugin", action="append", dest="plugins", help="module that registers verifiers")
    serve.add_argument("--log-level", help="debug, info, warning, error")
    serve.add_argument("--tokenizer", help="the policy's tokenizer.json (or its directory): /openrlhf/get_reward "
                                           "counts completion tokens with it (overlong, length)")
    serve.add_argument("--allow-unauthenticated-remote", action="store_true", default=None,
                       help="listen beyond loopback with no OLMORL_API_KEY (anyone who reaches the port runs code "
                            "in the sandbox); default: refuse")
    serve.add_argument("--stop-with-parent", type=int, metavar="PID",
                       help="PID of the process that starts this server: the server stops when that process ends, "
                            "however it ends (SIGKILL included); embedded servers (olmorl-train) use it")
    serve.add_argument("--ray-address", help="deploy on this Ray cluster as a Ray Serve deployment ([ray] extra), "
                                             "e.g. auto or HEAD_IP:6379; default: one embedded server")
    serve.add_argument("--replicas", type=int, default=1, help="with --ray-address: replicas of the server")
    serve.add_argument("--min-replicas", type=int, help="with --ray-address: autoscale from this many replicas")
    serve.add_argument("--max-replicas", type=int, help="with --ray-address: autoscale up to this many replicas")
    serve.add_argument("--replica-cpus", type=float, help="with --ray-address: CPUs each replica reserves "
                                                          "(default: its --workers)")

    verify = sub.add_parser("verify", help="score a JSONL or Parquet file and print a summary",
                            description="Score every row of FILE and print a summary (mean reward and accuracy "
                                        "over the rows scored ok). Exit 0 when some row was scored, 1 when none "
                                        "was or no server answered, 2 for a missing file or column.")
    verify.add_argument("file", help="JSONL (.jsonl/.json) or Parquet (.parquet, needs pyarrow) file")
    verify.add_argument("--output", "-o", help="write the scored rows as JSONL here (default: none)")
    verify.add_argument("--server", help="score through this server (comma-separated replicas) "
                                         "(default: in-process)")
    verify.add_argument("--api-key", help="bearer token for --server (default: OLMORL_API_KEY)")
    verify.add_argument("--verifier", help="use this verifier for every row (default: the verifier column)")
    verify.add_argument("--verifier-column", help="column naming the verifier (default: verifier, else dataset)")
    verify.add_argument("--response-column", default="response", help="column with the completion "
                                                                      "(default: %(default)s)")
    verify.add_argument("--ground-truth-column", default="ground_truth", help="column with the reference "
                                                                              "(default: %(default)s)")
    verify.add_argument("--prompt-column", help="column with the prompt (default: prompt, else messages)")
    verify.add_argument("--label-column", default="label", help="column with a true/false label, if any "
                                                                "(default: %(default)s)")
    verify.add_argument("--batch-size", type=int, default=256, help="items per batch (default: %(default)s)")
    verify.add_argument("--workers", type=int, help="in-process worker processes (default: one per core)")
    verify.add_argument("--plugin", action="append", dest="plugins", help="module that registers verifiers "
                                                                          "(repeatable; default: none)")
    return parser


class SettingsError(ValueError):
    """A flag or OLMORL_* variable out of range: the message names the setting."""


def settings_from(args: argparse.Namespace, names: tuple[str, ...]) -> Settings:
    """CLI flags win over OLMORL_* environment variables, which win over defaults."""
    overrides: dict[str, Any] = {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']} (got {e['input']!r:.40})"
                             for e in exc.errors(include_url=False))
        raise SettingsError(f"invalid settings (flags or OLMORL_* variables): {problems}") from None


def serve(args: argparse.Namespace) -> int:
    if args.stop_with_parent is not None:  # first: a parent SIGKILLed during our start-up must not leave us running
        from olmorl.rewards.engine._lifetime import stop_with_parent

        stop_with_parent(args.stop_with_parent)  # SIGTERM: a clean stop (sessions, workers, sandboxes)
    import uvicorn

    from olmorl.rewards.service._server import create_app

    settings = settings_from(args, ("host", "port", "workers", "item_timeout_s", "plugins", "log_level",
                                    "allow_unauthenticated_remote", "tokenizer"))
    check_exposure(settings)
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.ray_address:  # Ray Serve's proxy listens for the deployment
        from olmorl.rewards.service._ray_serve import run_until_signalled

        run_until_signalled(settings, ray_address=args.ray_address, replicas=args.replicas,
                            min_replicas=args.min_replicas, max_replicas=args.max_replicas,
                            replica_cpus=args.replica_cpus)
        return 0
    try:  # before the workers and the sandbox warm up: a taken port fails in a second, not after them
        listener = listening_socket(settings.host, settings.port)
    except OSError as exc:
        print(f"olmorl-rewards serve: error: cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    config = uvicorn.Config(create_app(settings), host=settings.host, port=settings.port,
                            log_level=settings.log_level, timeout_graceful_shutdown=30,
                            timeout_keep_alive=settings.keep_alive_s)
    uvicorn.Server(config).run(sockets=[listener])
    return 0


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


def check_exposure(settings: Settings) -> None:
    """A server that runs model-written code listens beyond loopback only with an API key, or when told to."""
    if is_loopback(settings.host) or settings.api_key or settings.allow_unauthenticated_remote:
        return
    raise SettingsError(f"refusing to listen on {settings.host} (beyond loopback) without an API key: set "
                        "OLMORL_API_KEY, or pass --allow-unauthenticated-remote "
                        "(OLMORL_ALLOW_UNAUTHENTICATED_REMOTE=1) if the network is yours alone")


def listening_socket(host: str, port: int) -> socket.socket:
    """A bound socket for uvicorn (which binds only after the app's start-up); OSError if the port is taken."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    listener = socket.socket(family, kind, proto)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
    except OSError:
        listener.close()
        raise
    return listener


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            sys.exit(serve(args))
        from olmorl.rewards.service._evaluate import InputError, NothingScored, run_evaluation

        try:
            sys.exit(run_evaluation(args, settings_from(args, ("workers", "plugins"))))
        except InputError as exc:
            sys.exit(_fail(args.command, 2, exc))
        except NothingScored as exc:
            sys.exit(_fail(args.command, 1, exc))
    except SettingsError as exc:
        sys.exit(_fail(args.command, 2, exc))


def _fail(command: str, code: int, exc: Exception) -> int:
    print(f"olmorl-rewards {command}: error: {exc}", file=sys.stderr)
    return code


if __name__ == "__main__":
    main()
