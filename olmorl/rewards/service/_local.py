"""Run a reward server as a child process on loopback: for the trainer's embedded mode, tests and
benchmarks. It is the same `olmorl-rewards serve` a user runs, so the embedded path is the real one."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
from typing import Any

import httpx
from pydantic import BaseModel


def free_port() -> int:
    """A loopback port free now, for a server that binds it a moment later.

    Picked at random below the kernel's ephemeral range: a port from that range (what binding port 0 returns) is
    what every outgoing connection takes, so it can be gone before the server binds it. Ray's worker ports
    (10002-19999 by default) are left alone too."""
    low = _ephemeral_low()
    for port in random.sample(range(20000, low), min(64, max(0, low - 20000))):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def stop_process_group(process: subprocess.Popen[bytes] | None, grace_s: float = 15.0) -> None:
    """SIGTERM a child started with `start_new_session=True`; past `grace_s`, SIGKILL its whole group."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)  # the whole group: worker processes included
        process.wait()


def settings_env(overrides: dict[str, Any], prefix: str = "OLMORL_") -> dict[str, str]:
    """Settings overrides as OLMORL_* environment variables (nested sections get their own prefix)."""
    env: dict[str, str] = {}
    for key, value in overrides.items():
        if isinstance(value, BaseModel):
            fields = {k: getattr(value, k) for k in value.model_fields_set}
            env.update(settings_env(fields, f"{prefix}{key.upper()}_"))
            # a field explicitly set to None (judge.temperature) is sent as "none"
            env.update({f"{prefix}{key.upper()}_{k.upper()}": "none" for k, v in fields.items() if v is None})
        elif isinstance(value, (list, dict)):
            env[f"{prefix}{key.upper()}"] = json.dumps(value)
        elif value is not None:
            env[f"{prefix}{key.upper()}"] = str(value)
    return env


def wait_until_ready(url: str, process: subprocess.Popen[bytes], timeout_s: float, log_path: str | None = None) -> None:
    """Poll `url`/readyz until it answers 200; a process that exits first or a missed deadline is an error."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"reward server exited with code {process.returncode} before it was "
                               f"ready (log: {log_path or 'not kept'})")
        try:
            if httpx.get(f"{url}/readyz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"reward server on {url} not ready within {timeout_s:g} s")


class LocalRewardServer:
    """`with LocalRewardServer(workers=2) as server: server.url` — started, ready, stopped on exit.

    The server stops when this process ends, however it ends (SIGKILL included: it watches its parent pid), so it
    never outlives its user holding memory, its port and its sandbox slots.
    """

    def __init__(self, *, port: int | None = None, ready_timeout_s: float = 60.0, log_path: str | None = None,
                 extra_env: dict[str, str] | None = None, **settings: Any) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ready_timeout_s = ready_timeout_s
        self.log_path = log_path
        self.env = {**os.environ, **settings_env(settings), **(extra_env or {}),
                    "OLMORL_HOST": "127.0.0.1", "OLMORL_PORT": str(self.port)}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> "LocalRewardServer":
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(
            [sys.executable, "-m", "olmorl.rewards", "serve", "--stop-with-parent", str(os.getpid())], env=self.env,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_until_ready(self.url, self.process, self.ready_timeout_s, self.log_path)
        except BaseException:  # not ready in time, or Ctrl-C while waiting: nothing may keep running
            self.stop()
            raise
        return self

    def stop(self) -> None:
        stop_process_group(self.process)

    def __enter__(self) -> "LocalRewardServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
