"""The `docker` backend: one warm container per slot, running the same zygote harness as bwrap.

Each slot is a container whose PID 1 is the harness (a short `python3 -c` bootstrap that reads the
harness source from stdin), reached over the container's attached stdin/stdout (docker's multiplexed
attach stream, demultiplexed here) rather than a `docker exec` per test (~50-110 ms each, measured).
A test is still a fork inside the container, so the warm path costs about what bwrap's does; only
starting or replacing a slot pays for a container (~130-250 ms).

Containment: no network (`network_mode=none`), read-only root, a sized tmpfs as the only writable
directory (/tmp, wiped after every test), no IPC mount (/dev/shm), memory (no swap) / pids / CPU
limits, `no-new-privileges`, docker's default seccomp profile plus the sandbox's own filter (loaded by
the harness), no log driver (floods never reach the disk), and an optional OCI runtime (`runsc`,
gVisor) for a paranoid mode. Two uids, as with bwrap (see `_userns`): the harness (PID 1, the zygote
and the test process) runs as the container's root with only CAP_SETUID, CAP_SETGID and CAP_KILL, and
every program as the slot's claimed program uid (`_uid_claim`: no other live slot on the host has it)
with no capability, so a program can open, signal or renice no harness process.

Lifecycle: a slot whose run overruns, or whose container dies, is force-removed and replaced on its
next use; `close()` removes every container of the pool. Containers carry labels naming their owner
(host, pid, process start time): `prepare()` removes those of owners that are gone (a crashed
server), and `stdin_once` + `auto_remove` end a container by themselves once its owner's attach
connection drops.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from pathlib import Path
from typing import Any

from olmorl.sandbox._backends import Backend, SandboxLimits, SandboxUnavailable, harness_source, inside_site_dir
from olmorl.sandbox._channel import LINE_LIMIT, Channel
from olmorl.sandbox._engine import _api, _engine_url, _raw_socket, cgroup_file, owner_gone, owner_id, remove_container
from olmorl.sandbox._languages import HARNESS_ENV, LANGUAGES
from olmorl.sandbox._seccomp import seccomp_filter
from olmorl.sandbox._uid_claim import SlotUids
from olmorl.sandbox._userns import HARNESS_CAPS

log = logging.getLogger("olmorl.sandbox")

DEFAULT_IMAGE = "olmorl-base:bookworm"
INSIDE_PYTHON = "/usr/bin/python3"
LABEL = "org.olmorl.sandbox"  # every sandbox container carries it
OWNER_LABEL = "org.olmorl.sandbox.owner"  # "HOST/PID/STARTTIME" of the server that made it
SLOT_LABEL = "org.olmorl.sandbox.slot"
LANGUAGES_LABEL = "org.olmorl.sandbox.languages"  # on an image: the languages its toolchains cover
HARNESS_USER = "0:0"  # the container's root, with HARNESS_CAPS only (programs: the slot's claimed program uid)
CPUS_PER_SLOT = 1.0  # a slot runs one test at a time
ZYGOTE_MEMORY_MB = 96  # the harness on top of the program's own ceiling
GVISOR_MEMORY_MB = 160  # gVisor's kernel (the Sentry) runs inside the container's memory cgroup too
# gVisor (ptrace platform) backs every sandboxed process with host stub processes and its Sentry with
# host threads, all in the container's pids cgroup, and (runsc 2022-12, measured) does not give
# them all back: a fork bomb leaves ~300-650 host pids behind each time. So the host limit is wide
# (the Sentry dies when it cannot make a thread), gVisor's own RLIMIT_NPROC, counted in its kernel
# for this container alone, bounds the program, and a slot is recycled once its host pid count
# passes GVISOR_RECYCLE_PIDS (read from the container's cgroup where this host can see it).
GVISOR_HOST_PIDS = 4096
GVISOR_RECYCLE_PIDS = 1024
CHECK_TIMEOUT_S = 10


def leftover_containers(api: Any, owner: str | None = None) -> list[dict[str, Any]]:
    """Sandbox containers (all, or those of `owner`), running or not."""
    label = f"{OWNER_LABEL}={owner}" if owner else LABEL
    return api.containers(all=True, filters={"label": label})


# The container's command stays short: it reads the harness source (exactly `size` bytes, unbuffered,
# so nothing after it is consumed) from stdin, then runs it as __main__.
_BOOT = ("import os\nsrc = b''\nwhile len(src) < {size}:\n    chunk = os.read(0, {size} - len(src))\n"
         "    if not chunk:\n        raise SystemExit('harness: stdin closed before the harness source')\n"
         "    src += chunk\nexec(compile(src, 'harness', 'exec'))\n")


class DockerChannel(Channel):
    """One slot's container: its attach socket, demultiplexed into the zygote's stdout and stderr."""

    def __init__(self, backend: DockerBackend, container: str, attached: Any) -> None:
        self.backend = backend
        self.container = container
        self.reader = asyncio.StreamReader(limit=LINE_LIMIT)
        self.stderr_tail = b""
        self._attached = attached  # docker-py's socket object; holds the HTTP response alive
        self._writer: asyncio.StreamWriter | None = None
        self._pump: asyncio.Task[None] | None = None
        self._eof = False
        self._closed = False
        self._pids_file: Path | None = None

    async def connect(self) -> None:
        if self.backend.gvisor:
            self._pids_file = await asyncio.to_thread(cgroup_file, self.backend.api, self.container, "pids",
                                                      ("pids.current",))
        raw = _raw_socket(self._attached)
        sock = socket.socket(fileno=os.dup(raw.fileno()))  # our own fd: independent of docker-py's objects
        sock.setblocking(False)
        stream, self._writer = await asyncio.open_connection(sock=sock, limit=LINE_LIMIT)
        self._pump = asyncio.ensure_future(self._demux(stream))
        self._writer.write(self.backend._harness)  # the bootstrap's first read (see _BOOT)

    async def _demux(self, stream: asyncio.StreamReader) -> None:
        # Non-tty attach stream: frames of [kind, 0, 0, 0, size (u32 big-endian)] + payload;
        # kind 1 is stdout (the zygote's replies), 2 is stderr.
        try:
            while True:
                header = await stream.readexactly(8)
                size = int.from_bytes(header[4:8], "big")
                payload = await stream.readexactly(size) if size else b""
                if header[0] == 1:
                    self.reader.feed_data(payload)
                elif header[0] == 2:
                    self.stderr_tail = (self.stderr_tail + payload)[-4096:]
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            self._eof = True
            self.reader.feed_eof()

    @property
    def alive(self) -> bool:
        return not (self._eof or self._closed)

    def worn(self) -> bool:
        if self._pids_file is None:
            return False
        try:
            return int(self._pids_file.read_text()) > GVISOR_RECYCLE_PIDS
        except (OSError, ValueError):
            return False

    def write(self, data: bytes) -> None:
        if self._writer is None or self._closed:
            raise ConnectionError("the sandbox container is closed")
        self._writer.write(data)

    async def drain(self) -> None:
        assert self._writer is not None
        await self._writer.drain()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._pump is not None:
            self._pump.cancel()
        if self._writer is not None:
            self._writer.close()
        try:
            self._attached.close()
        except OSError:
            pass
        try:
            await asyncio.to_thread(remove_container, self.backend.api, self.container)
        except Exception as exc:  # engine gone or stuck: the next pool start removes it (owner label)
            log.warning("could not remove sandbox container %s: %s", self.container[:12], exc)


class DockerBackend(Backend):
    name = "docker"
    secure = True

    def __init__(self, python: str | None, limits: SandboxLimits, *, image: str | None = None,
                 runtime: str | None = None, site_dirs: tuple[str, ...] = ()) -> None:
        self.python = python or INSIDE_PYTHON  # a path inside the image
        self.limits = limits
        self.root = False
        self.site_dirs = tuple(site_dirs)  # host dirs, bind-mounted read-only (the engine must see them)
        self._languages: dict[str, str] | None = None
        self.image = image or DEFAULT_IMAGE
        self.runtime = runtime or None
        self.owner = owner_id()
        self.gvisor = False  # set by prepare() from the engine's runtime table
        self._api: Any = None
        self._harness = harness_source()
        self._seccomp: list[str] = []  # set by prepare(), which knows whether the runtime is gVisor

    @property
    def api(self) -> Any:
        if self._api is None:
            self._api = _api()
        return self._api

    def unavailable(self) -> str | None:
        try:
            import docker
        except ImportError:
            return "the docker sandbox backend needs the `docker` package (pip install 'olmorl[server]')"
        try:
            api = _api(CHECK_TIMEOUT_S)
        except docker.errors.DockerException as exc:
            return (f"no Docker engine answers at {_engine_url()} ({exc}); start one "
                    "(scripts/docker-engine.sh) or pick another sandbox.backend")
        try:
            try:
                api.inspect_image(self.image)
            except docker.errors.ImageNotFound:
                hint = ("build it with scripts/build-base-image.sh" if self.image == DEFAULT_IMAGE
                        else "build or load it, or change sandbox.docker_image (OLMORL_SANDBOX_DOCKER_IMAGE)")
                return f"the docker sandbox image {self.image!r} is not on the engine: {hint}"
            if self.runtime:
                runtimes = sorted(api.info().get("Runtimes") or {})
                if self.runtime not in runtimes:
                    return (f"the Docker engine has no runtime {self.runtime!r} (it has {', '.join(runtimes)}); "
                            "register it in the engine's daemon.json (gVisor: `runsc install`) or unset "
                            "sandbox.docker_runtime")
        except docker.errors.DockerException as exc:
            return f"the Docker engine at {_engine_url()} failed a check: {exc}"
        finally:
            api.close()
        return None

    def languages(self) -> dict[str, str]:
        """The image says what it carries: the label LANGUAGES_LABEL (docker/Dockerfile.full sets it);
        an image without it runs Python and bash (Debian's minimal base has both)."""
        if self._languages is None:
            try:
                labels = (self.api.inspect_image(self.image).get("Config") or {}).get("Labels") or {}
            except Exception as exc:  # engine down: unavailable() reports it; don't cache a guess
                return {name: f"the docker image could not be inspected: {exc}" for name in LANGUAGES}
            listed = {n.strip() for n in labels.get(LANGUAGES_LABEL, "python,bash").split(",")}
            self._languages = {name: "" if name in listed else
                               f"the image {self.image!r} does not carry it (build the full variant: "
                               "OLMORL_IMAGE_VARIANT=full scripts/build-image.sh, or set sandbox.docker_image)"
                               for name in LANGUAGES}
        return self._languages

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "image": self.image, "runtime": self.runtime or "default",
                **({"gvisor": True} if self.gvisor else {})}

    @property
    def uid_separation(self) -> bool:
        return True  # the harness is the container's root, programs the slot's claimed program uid

    @property
    def claims_uids(self) -> bool:
        return True  # whoever runs the server: under runc (no user namespace) a program's uid is a host uid

    async def prepare(self) -> None:
        if self._api is None:  # made once here: the slots then share it from their threads
            self._api = await asyncio.to_thread(_api)
        if self.runtime:
            runtimes = (await asyncio.to_thread(self.api.info)).get("Runtimes") or {}
            path = str((runtimes.get(self.runtime) or {}).get("path", ""))
            self.gvisor = "runsc" in os.path.basename(path) or "runsc" in self.runtime
        # gVisor lists no SysV IPC objects (/proc/sysvipc) nor message queues (/dev/mqueue), so the
        # cleaner could not find them: there a program may not make them at all
        bpf = seccomp_filter(ipc=not self.gvisor)
        self._seccomp = ["--seccomp-hex", bpf.hex()] if bpf is not None else []
        await asyncio.to_thread(self.languages)  # read the image's label once, off the event loop
        removed = await asyncio.to_thread(self._remove_orphans)
        if removed:
            log.warning("removed %d sandbox container(s) left by servers that are gone", removed)

    def _remove_orphans(self) -> int:
        removed = 0
        for info in leftover_containers(self.api):
            owner = (info.get("Labels") or {}).get(OWNER_LABEL, "")
            if owner != self.owner and owner_gone(owner):
                remove_container(self.api, info["Id"])
                removed += 1
        return removed

    async def close(self) -> None:
        if self._api is None:
            return
        def sweep() -> None:
            for info in leftover_containers(self.api, self.owner):
                remove_container(self.api, info["Id"])
        try:
            await asyncio.to_thread(sweep)
        except Exception as exc:
            log.warning("could not remove this pool's sandbox containers: %s", exc)
        finally:
            self._api.close()
            self._api = None

    def _create(self, slot: int, uids: SlotUids) -> tuple[str, Any]:
        from docker.types import LogConfig, Ulimit

        limits = self.limits
        # tmpfs pages count too; a compiler may need more than the program
        memory_mb = max(limits.memory_mb, limits.compile_memory_mb) + limits.scratch_mb + ZYGOTE_MEMORY_MB
        memory_mb += GVISOR_MEMORY_MB if self.gvisor else 0
        memory = f"{memory_mb}m"
        processes = limits.max_processes + 4
        ulimits = [Ulimit(name="core", soft=0, hard=0)]
        if self.gvisor:
            pids = GVISOR_HOST_PIDS
            ulimits.append(Ulimit(name="nproc", soft=processes, hard=processes))
        else:  # runc: RLIMIT_NPROC would count the harness's host uid 0 too; the cgroup does it
            pids = processes
        api = self.api
        host_config = api.create_host_config(
            network_mode="none",
            read_only=True,
            # exec: compiled programs run from the scratch dir (docker's tmpfs default is noexec)
            tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={limits.scratch_mb}m,mode=0777"},
            binds={path: {"bind": inside_site_dir(i), "mode": "ro"} for i, path in enumerate(self.site_dirs)},
            ipc_mode="none",
            mem_limit=memory,
            memswap_limit=memory,
            pids_limit=pids,
            nano_cpus=int(CPUS_PER_SLOT * 1e9),
            cap_drop=["ALL"],
            cap_add=[cap.removeprefix("CAP_") for cap in HARNESS_CAPS],
            security_opt=["no-new-privileges"],
            ulimits=ulimits,
            log_config=LogConfig(type=LogConfig.types.NONE),
            auto_remove=True,
            init=False,  # the harness is PID 1 (whatever the engine's default-init says)
            runtime=self.runtime,
        )
        command = [self.python, "-X", "utf8", "-I", "-B", "-c", _BOOT.format(size=len(self._harness)),
                   "--pidns", "--scratch", "/tmp", "--program-ids", f"{uids.program}:{uids.program}", *self._seccomp,
                   *self.harness_args()]
        created = api.create_container(
            self.image, command=command, user=HARNESS_USER, hostname="sandbox", working_dir="/tmp",
            # not detached + stdin_open: docker-py sets StdinOnce (stdin closes when we disconnect)
            stdin_open=True, tty=False, network_disabled=True, environment=dict(HARNESS_ENV),
            labels={LABEL: "1", OWNER_LABEL: self.owner, SLOT_LABEL: str(slot)},
            name=f"olmorl-sandbox-{os.getpid()}-{slot}-{secrets.token_hex(4)}",  # unique across pools
            host_config=host_config,
        )
        container = created["Id"]
        try:
            attached = api.attach_socket(container, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            api.start(container)
        except BaseException:
            remove_container(api, container)
            raise
        return container, attached

    async def open(self, slot: int, uids: SlotUids | None) -> Channel:
        from docker.errors import DockerException

        from requests import RequestException

        if uids is None:
            raise ValueError("a docker slot runs its programs as a claimed uid: claim_uids() first")
        try:
            container, attached = await asyncio.to_thread(self._create, slot, uids)
        except (DockerException, RequestException, OSError) as exc:
            raise SandboxUnavailable(f"docker sandbox container did not start: {exc}") from exc
        channel = DockerChannel(self, container, attached)
        try:
            await channel.connect()
        except BaseException:
            await channel.close()
            raise
        return channel
