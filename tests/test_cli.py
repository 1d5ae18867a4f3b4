"""The command lines as a user runs them (real subprocesses): versions, help, a taken port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from olmorl import __version__

CLIS = {"olmorl-rewards": "olmorl.rewards", "olmorl-train": "olmorl.trainer._cli",
        "olmorl-engine": "olmorl.trainer.engines._server"}


def run(module: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("prog", sorted(CLIS))
def test_version(prog):
    proc = run(CLIS[prog], "--version")
    assert proc.returncode == 0 and proc.stdout.strip().endswith(f" {__version__}"), proc.stderr


def test_train_help_lists_subcommands_and_the_config_help():
    text = run(CLIS["olmorl-train"], "--help").stdout
    assert "filter" in text and "plot" in text and "--help-config" in text and "olmorl-train filter --help" in text
    config = run(CLIS["olmorl-train"], "--help-config").stdout
    # grouped in the sections the docs refer to, each field with its type, default and meaning
    for section in ("model and data:", "sampling:", "scale-out (docs/scaling.md):", "algorithm:", "rewards:"):
        assert f"\n{section}\n" in config
    line = next(line for line in config.splitlines() if line.strip().startswith("--learning-rate "))
    assert line.split()[1:4] == ["float", "1e-06", "AdamW"]
    line = next(line for line in config.splitlines() if line.strip().startswith("--train-files "))
    assert line.split()[1:5] == ["tuple[str,", "...]", "[]", "RLVR"]
    assert json.loads(next(l for l in config.splitlines() if l.strip().startswith("--output-dir ")).split()[2]) \
        == "runs/olmorl"
    assert run(CLIS["olmorl-train"], "filter", "--help").returncode == 0


def test_serve_on_a_taken_port_fails_before_warming_anything():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run(CLIS["olmorl-rewards"], "serve", "--port", str(port), "--workers", "2", "--log-level", "info",
                   timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"olmorl-rewards serve: error: cannot listen on 127.0.0.1:{port}: "
                                   "Address already in use")


@pytest.mark.parametrize("command", ["serve", "verify"])
def test_a_setting_out_of_range_is_named_not_a_traceback(command, tmp_path):
    """`--workers 0` used to start a server that answered every math or IF batch with a 500 (no worker to place
    items on); now both commands refuse it up front, naming the setting."""
    target = ["--port", "0"] if command == "serve" else [str(tmp_path / "items.jsonl")]
    proc = run(CLIS["olmorl-rewards"], command, *target, "--workers", "0", timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"olmorl-rewards {command}: error: invalid settings (flags or OLMORL_* variables): "
                                   "workers: Input should be greater than or equal to 1 (got 0)")


def test_serve_refuses_to_listen_beyond_loopback_without_an_api_key():
    """A server that runs model-written code: on 0.0.0.0 with no API key it exits 2 with one line, unless a key
    is set or --allow-unauthenticated-remote says the network is the user's alone. Loopback needs neither."""
    from olmorl.rewards.service._cli import is_loopback

    assert all(map(is_loopback, ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.0.0.5", "my-host"]))
    with socket.socket() as taken:  # so a serve that passes the check fails at once, before warming anything
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        env = {k: v for k, v in os.environ.items() if k not in ("OLMORL_API_KEY", "OLMORL_HOST")}

        def serve(*flags: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "olmorl.rewards", "serve", "--host", "0.0.0.0", "--port",
                                   port, "--workers", "1", *flags], capture_output=True, text=True, timeout=60,
                                  env={**env, **extra_env})

        refused = serve()
        assert refused.returncode == 2
        assert refused.stderr.strip() == (
            "olmorl-rewards serve: error: refusing to listen on 0.0.0.0 (beyond loopback) without an API key: set "
            "OLMORL_API_KEY, or pass --allow-unauthenticated-remote (OLMORL_ALLOW_UNAUTHENTICATED_REMOTE=1) if "
            "the network is yours alone")
        for allowed in (serve(OLMORL_API_KEY="k"), serve("--allow-unauthenticated-remote"),
                        serve(OLMORL_ALLOW_UNAUTHENTICATED_REMOTE="1")):
            assert allowed.returncode == 1 and "Address already in use" in allowed.stderr, allowed.stderr
