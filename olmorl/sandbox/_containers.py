"""Task containers: one long-lived container per agentic session (the `swe` environment), driven by
`docker exec` through the engine's API (docker-py), the way `_docker` drives the code sandbox.

A container runs a task's image with no network, a read-only root, CPU / memory / pids limits and
two sized tmpfs mounts as its only writable places: the task's working directory (its disk limit:
`--storage-opt size=` needs overlay2 on xfs with project quotas, which most engines lack) and /tmp.
The image keeps a copy of the working directory (SNAPSHOT_DIR, made at build time) that is copied
into the tmpfs when the container starts. PID 1 is a shell loop that reaps orphans and survives
`kill -KILL -1` (verify uses it to stop whatever the agent left running).

Who runs what: the agent's tools run as AGENT_USER (an unprivileged uid that owns the working
directory and nothing else: the Python installation and the rest of the root are read-only, and
root-owned besides); the server's own steps (filling the working directory, reading it back at verify,
the hidden tests in a fresh container) run as root.

Containers carry TASK_LABEL and an owner label (host, pid, process start time, as `_docker`):
`close()` removes a container with its volumes, and `sweep_task_containers()` (run at server start)
removes those whose owner process is gone (a crashed server).

`start_task_container(image, limits)` is a standalone coroutine so a pool can start containers ahead
of demand; it needs nothing of a session.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import secrets
import socket
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olmorl.sandbox._backends import SandboxUnavailable
from olmorl.sandbox._engine import _api, _raw_socket, cgroup_file, owner_gone, owner_id, remove_container

log = logging.getLogger("olmorl.sandbox")

TASK_LABEL = "org.olmorl.task"  # every task container carries it
TASK_OWNER_LABEL = "org.olmorl.task.owner"  # "HOST/PID/STARTTIME" of the server that started it
SNAPSHOT_DIR = "/opt/olmorl/snapshot"  # the image's copy of the working directory
TMP_MB = 64  # /tmp of a task container
TIMED_OUT = 124  # GNU timeout's exit status when the limit was reached (TERM)
KILLED_AFTER_GRACE = 128 + 9  # ... and when the command outlived TERM's grace (`-k`): KILL
ROOT_USER = "0:0"
AGENT_USER = "1000:1000"  # the agent's tools: owns the working directory, no capability, no other writable file
TEST_USER = "1001:1001"  # the hidden tests at verify (a fresh container): owns no file at all
# PID 1: reaps every orphan (dash's wait reaps any child) and restarts its sleep if it is killed
_PID1 = "trap '' TERM; while :; do sleep 3600 & wait; done"


@dataclass(frozen=True)
class ContainerLimits:
    cpus: float = 1.0
    memory_mb: int = 2048  # the processes; the tmpfs mounts are charged to the same cgroup, so they come on top
    pids: int = 256
    disk_mb: int = 1024  # the working directory's tmpfs
    runtime: str | None = None  # OCI runtime, e.g. runsc (gVisor)


@dataclass(frozen=True)
class ExecResult:
    exit_code: int  # TIMED_OUT or KILLED_AFTER_GRACE when the time limit stopped it
    stdout: str
    stderr: str
    timed_out: bool
    elapsed_s: float
    # processes of the container the kernel's OOM killer ended during the run (its cgroup's count): how a
    # status of 137 (128 + SIGKILL) is told from an `exit 137`; 0 where this host cannot see the cgroup
    oom_kills: int = 0


_client: Any = None


def engine() -> Any:
    """One docker-py API client for the process (shared by threads, as `_docker`'s slots share theirs)."""
    global _client
    if _client is None:
        _client = _api()
    return _client


class _Kept:
    """A stream kept within bounds: its first and last `limit` bytes and how many were seen."""

    def __init__(self, limit: int) -> None:
        self.limit, self.head, self.tail, self.seen = limit, bytearray(), bytearray(), 0

    def add(self, data: bytes) -> None:
        self.seen += len(data)
        room = self.limit - len(self.head)
        self.head += data[:max(room, 0)]
        self.tail = (self.tail + data[max(room, 0):])[-self.limit:]

    def text(self) -> str:
        if self.seen <= self.limit:
            return self.head.decode("utf-8", "replace")
        keep = self.limit // 2  # half of the head and half of the tail
        head, tail = self.head[:keep].decode("utf-8", "replace"), self.tail[-keep:].decode("utf-8", "replace")
        return f"{head}\n...[{self.seen - 2 * keep} bytes truncated]...\n{tail}"


class TaskContainer:
    """A started task container. Every method is a coroutine; blocking engine calls run in threads."""

    def __init__(self, container: str, workdir: str) -> None:
        self.id = container
        self.workdir = workdir
        self.closed = False
        self.oom_file: Path | None = None  # its memory cgroup's events (the `oom_kill` count), once started

    def oom_kills(self) -> int:
        """How many of its processes the kernel's OOM killer has ended (a cgroup file: no engine call)."""
        try:
            text = self.oom_file.read_text() if self.oom_file is not None else ""
        except OSError:
            return 0
        return next((int(line.split()[1]) for line in text.splitlines() if line.startswith("oom_kill ")), 0)

    async def exec(self, command: list[str], *, timeout_s: float, stdin: bytes | None = None,
                   workdir: str | None = None, max_output: int = 1 << 20, user: str = ROOT_USER,
                   env: dict[str, str] | None = None) -> ExecResult:
        """Run `command` as `user` (the container's root unless told), with `env` added to the image's
        environment, under `timeout -k 2 timeout_s` (the whole process group is signalled); stdout and stderr
        are kept to `max_output` characters each (head and tail)."""
        oom_before = self.oom_kills()
        code, out, err, elapsed = await self._run(command, timeout_s, stdin, workdir, max_output, user, env)
        # a command may exit 124 or 137 by itself: only one that ran to the limit was stopped by it
        stopped = code in (TIMED_OUT, KILLED_AFTER_GRACE) and elapsed >= timeout_s
        return ExecResult(code, out.text(), err.text(), stopped, elapsed, self.oom_kills() - oom_before)

    async def read_tree(self, path: str, *, max_bytes: int, timeout_s: float = 60.0) -> bytes:
        """`path` as a tar archive (links stored as links, never followed), read by root; RuntimeError when it
        cannot be read or is over `max_bytes`."""
        return await self.output(["tar", "-C", path, "-cf", "-", "."], max_bytes=max_bytes, timeout_s=timeout_s,
                                 what=f"reading {path} from the task container")

    async def output(self, command: list[str], *, max_bytes: int, timeout_s: float = 60.0,
                     what: str = "a root command in the task container") -> bytes:
        """The whole stdout of `command`, run by root in /; RuntimeError (naming `what`) when it fails or writes
        more than `max_bytes`."""
        code, out, err, _ = await self._run(command, timeout_s, None, "/", max_bytes, ROOT_USER)
        if code != 0 or out.seen > max_bytes:
            why = err.text().strip()[-500:] or ("over the size limit" if code == 0 else f"exit {code}")
            raise RuntimeError(f"{what} failed: {why}")
        return bytes(out.head)

    async def _run(self, command: list[str], timeout_s: float, stdin: bytes | None, workdir: str | None,
                   max_output: int, user: str, env: dict[str, str] | None = None) -> tuple[int, _Kept, _Kept, float]:
        wrapped = ["timeout", "-k", "2", f"{timeout_s:g}", *command]
        return await asyncio.to_thread(self._exec, wrapped, timeout_s + 10.0, stdin, workdir or self.workdir,
                                       max_output, user, env)

    def _exec(self, command: list[str], deadline_s: float, stdin: bytes | None, workdir: str,
              max_output: int, user: str, env: dict[str, str] | None = None) -> tuple[int, _Kept, _Kept, float]:
        api = engine()
        started = time.monotonic()
        created = api.exec_create(self.id, command, stdin=stdin is not None, stdout=True, stderr=True,
                                  workdir=workdir, user=user, environment=env or None)
        attached = api.exec_start(created["Id"], socket=True)
        sock = _raw_socket(attached)
        streams = {1: _Kept(max_output), 2: _Kept(max_output)}
        timed_out = False
        try:
            sock.settimeout(deadline_s)
            if stdin is not None:
                sock.sendall(stdin)
                sock.shutdown(socket.SHUT_WR)  # the engine closes the process's stdin
            buffer = b""
            while chunk := sock.recv(1 << 16):
                buffer += chunk
                while len(buffer) >= 8:  # frames: [stream, 0, 0, 0, size u32 big-endian] + payload
                    size = int.from_bytes(buffer[4:8], "big")
                    if len(buffer) < 8 + size:
                        break
                    if buffer[0] in streams:
                        streams[buffer[0]].add(buffer[8:8 + size])
                    buffer = buffer[8 + size:]
        except TimeoutError:  # `timeout` inside did not end it (a stopped engine, a frozen container)
            timed_out = True
        finally:
            try:
                attached.close()
            except OSError:
                pass
        code = None if timed_out else api.exec_inspect(created["Id"]).get("ExitCode")
        return (TIMED_OUT if code is None else int(code)), streams[1], streams[2], time.monotonic() - started

    async def write_files(self, files: dict[str, bytes], dest: str, *, timeout_s: float = 30.0,
                          user: str = ROOT_USER) -> None:
        """Write `files` (paths relative to `dest`) into the container, replacing whatever is at those paths
        (a file, a directory or a link the agent put there)."""
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w") as tar:
            parts = [path.split("/")[:-1] for path in files]
            for parent in sorted({"/".join(p[:i]) for p in parts for i in range(1, len(p) + 1)}):
                info = tarfile.TarInfo(parent)
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            for path, data in sorted(files.items()):
                info = tarfile.TarInfo(path)
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
        await self.extract(archive.getvalue(), dest, remove=sorted(files), timeout_s=timeout_s, user=user)

    async def extract(self, archive: bytes, dest: str, *, remove: list[str], timeout_s: float = 30.0,
                      user: str = ROOT_USER) -> None:
        """Remove the paths `remove` (relative to `dest`), then unpack the tar `archive` into `dest` (modes
        kept, owner: `user`)."""
        clear = 'mkdir -p "$1" && cd "$1" && shift && rm -rf -- "$@"'
        batches = [remove[i:i + 512] for i in range(0, len(remove), 512)] or [[]]  # bounded command lines
        for i, batch in enumerate(batches):
            last = i == len(batches) - 1
            result = await self.exec(["sh", "-c", clear + (" && tar -x --no-same-owner -f -" if last else ""), "sh",
                                      dest, *batch], timeout_s=timeout_s, stdin=archive if last else None, user=user)
            if result.exit_code != 0:
                raise RuntimeError(f"writing files into {dest} failed: {result.stderr.strip()}")

    async def kill_processes(self) -> None:
        """Stop every process but PID 1 (what the agent left running in the background)."""
        await self.exec(["sh", "-c", "kill -KILL -1 2>/dev/null; exit 0"], timeout_s=10.0)

    async def close(self) -> None:
        """Remove the container and its anonymous volumes. Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        try:
            await asyncio.to_thread(remove_container, engine(), self.id)
        except Exception as exc:  # engine gone: the next server start sweeps it (owner label)
            log.warning("could not remove task container %s: %s", self.id[:12], exc)


def _create(image: str, limits: ContainerLimits, workdir: str, scratch: tuple[str, ...], name: str) -> str:
    from docker.types import LogConfig, Ulimit

    api = engine()
    memory = f"{limits.memory_mb + limits.disk_mb + TMP_MB * (1 + len(scratch))}m"  # tmpfs pages count against the cgroup
    host_config = api.create_host_config(
        network_mode="none",
        read_only=True,
        # the scratch directories (where verify puts a Harbor task's tests and reward) are root's: not the agent's
        tmpfs={workdir: f"rw,exec,nosuid,nodev,size={limits.disk_mb}m,mode=0755",
               "/tmp": f"rw,exec,nosuid,nodev,size={TMP_MB}m,mode=1777",
               **{path: f"rw,exec,nosuid,nodev,size={TMP_MB}m,mode=0755" for path in scratch}},
        ipc_mode="private",
        mem_limit=memory,
        memswap_limit=memory,
        pids_limit=limits.pids,
        nano_cpus=int(limits.cpus * 1e9),
        cap_drop=["ALL"],
        # root inside may own and change any file of the task and signal its processes; nothing else
        cap_add=["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID"],
        security_opt=["no-new-privileges"],
        ulimits=[Ulimit(name="core", soft=0, hard=0)],
        log_config=LogConfig(type=LogConfig.types.NONE),
        runtime=limits.runtime,
        init=False,  # PID 1 is _PID1, which must survive `kill -1`
    )
    created = api.create_container(
        image, command=["sh", "-c", _PID1], entrypoint=[], user="0:0", hostname="task", working_dir=workdir,
        network_disabled=True, labels={TASK_LABEL: "1", TASK_OWNER_LABEL: owner_id()}, name=name,
        host_config=host_config, environment={"HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"},
    )
    try:
        api.start(created["Id"])
    except BaseException:
        remove_container(api, created["Id"])
        raise
    return str(created["Id"])


_discarding: set[asyncio.Future[None]] = set()  # removals of containers whose start was cancelled


async def _discard(creating: asyncio.Future[str]) -> None:
    try:
        container_id = await creating
    except Exception:  # it did not start: nothing to remove
        return
    await TaskContainer(container_id, "/").close()


async def start_task_container(image: str, limits: ContainerLimits, *, workdir: str,
                               scratch: tuple[str, ...] = (), owner: str = AGENT_USER) -> TaskContainer:
    """A started container of `image` with its working directory filled from the image's snapshot and owned by
    `owner` (the agent's uid; root in a verdict container, where the tests' uid owns nothing); `scratch`: more
    writable directories (TMP_MB tmpfs each), e.g. where verify puts hidden tests."""
    from docker.errors import DockerException
    from requests import RequestException

    name = f"olmorl-task-{os.getpid()}-{secrets.token_hex(6)}"
    creating = asyncio.ensure_future(asyncio.to_thread(_create, image, limits, workdir, tuple(scratch), name))
    try:
        container_id = await asyncio.shield(creating)
    except asyncio.CancelledError:  # the engine call goes on in its thread: remove what it makes
        _discarding.add(task := asyncio.ensure_future(_discard(creating)))
        task.add_done_callback(_discarding.discard)
        raise
    except (DockerException, RequestException, OSError) as exc:
        raise SandboxUnavailable(f"the task container did not start: {exc}") from exc
    container = TaskContainer(container_id, workdir)
    try:
        container.oom_file = await asyncio.to_thread(cgroup_file, engine(), container_id, "memory",
                                                     ("memory.events", "memory.oom_control"))
        # the agent owns the working directory (and nothing else)
        filled = await container.exec(["sh", "-c", f'cp -a {SNAPSHOT_DIR}/. "$1"/ && chown -R {owner} "$1"', "sh",
                                       workdir], timeout_s=60.0, workdir="/")
        if filled.exit_code != 0:
            raise SandboxUnavailable(f"filling the task's working directory failed: {filled.stderr.strip()[-500:]}")
    except BaseException:  # cancelled or failed: nothing may outlive it
        await container.close()
        raise
    return container


def sweep_task_containers() -> int:
    """Remove the task containers of servers on this host that are gone (they crashed); the count."""
    api = engine()
    removed = 0
    for info in api.containers(all=True, filters={"label": TASK_LABEL}):
        owner = (info.get("Labels") or {}).get(TASK_OWNER_LABEL, "")
        if owner != owner_id() and owner_gone(owner):
            remove_container(api, info["Id"])
            removed += 1
    return removed
