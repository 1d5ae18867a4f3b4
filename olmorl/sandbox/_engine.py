"""The Docker engine as the code sandbox (`_docker`) and task containers (`_containers`) use it: the API
client and the attach socket under it, container owners (this host's processes, by pid and start time), the
removal of a container, and a container's files in this host's cgroup tree.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from pathlib import Path
from typing import Any

from olmorl.sandbox._backends import SandboxUnavailable

log = logging.getLogger("olmorl.sandbox")

API_TIMEOUT_S = 60


def _process_start(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_id(pid: int | None = None) -> str:
    """This process as a container owner: host name, pid and start time (pids get reused)."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}/{pid}/{_process_start(pid) or '?'}"


def owner_gone(owner: str) -> bool:
    """True if `owner` is a process of this host that no longer runs (other hosts: unknown, False)."""
    host, _, rest = owner.partition("/")
    pid, _, started = rest.partition("/")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return _process_start(int(pid)) != started


def _api(timeout: float = API_TIMEOUT_S) -> Any:
    import docker
    from docker.utils import kwargs_from_env

    return docker.APIClient(version="auto", timeout=timeout, **kwargs_from_env())


def _engine_url() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def _raw_socket(attached: Any) -> socket.socket:
    """The plain socket under docker-py's attach response (unix:// or tcp:// engines)."""
    import ssl

    sock = getattr(attached, "_sock", attached)
    if not isinstance(sock, socket.socket) or isinstance(sock, ssl.SSLSocket):
        raise SandboxUnavailable("the docker sandbox backend needs an engine on a unix:// or plain tcp:// "
                                 "socket (TLS and ssh connections are not supported)")
    return sock


def remove_container(api: Any, container: str, wait_s: float = 20.0) -> None:
    """Force-remove `container` and wait up to `wait_s` until it is gone.

    A 409 "removal ... already in progress" is the engine's own removal (`auto_remove` once the attach ends):
    the container is on its way out and nothing of it can run again, so past the wait this returns, with a
    warning, instead of failing the caller (a loaded engine can take longer than any fixed wait). Any other
    error that lasts past the wait raises `SandboxUnavailable`."""
    from docker.errors import APIError, NotFound

    deadline = time.monotonic() + wait_s
    while True:
        try:
            api.remove_container(container, force=True, v=True)
            return
        except NotFound:
            return
        except APIError as exc:
            if time.monotonic() > deadline:
                if "already in progress" in str(exc):
                    log.warning("sandbox container %s: the engine's removal is still running after %.0f s",
                                container[:12], wait_s)
                    return
                raise SandboxUnavailable(f"could not remove sandbox container {container[:12]}: {exc}") from exc
        time.sleep(0.05)


def cgroup_file(api: Any, container: str, controller: str, names: tuple[str, ...]) -> Path | None:
    """The first of `names` (a cgroup v2 name, then a v1 one) in the container's `controller` directory of this
    host's cgroup tree (v1 or v2), if this host can see it."""
    pid = (api.inspect_container(container).get("State") or {}).get("Pid") or 0
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines() if pid > 0 else []
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            directory = Path("/sys/fs/cgroup") / controller / path.lstrip("/")
        elif controllers == "":
            directory = Path("/sys/fs/cgroup") / path.lstrip("/")
        else:
            continue
        for name in names:
            if (directory / name).exists():
                return directory / name
    return None
