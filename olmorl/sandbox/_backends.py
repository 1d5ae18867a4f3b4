"""How a sandbox slot's zygote is launched: bubblewrap (default) or plain rlimits (`process`, insecure).

Each slot gets its own unprivileged uid (when the server runs as root) and, where the kernel lets us,
its own memory+pids cgroup; the uid switch happens last in the pre-exec hook, after joining the cgroups.
"""

from __future__ import annotations

import os
import resource
import shutil
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from olmorl.sandbox._cgroup import SlotCgroup
from olmorl.sandbox._seccomp import seccomp_filter

HARNESS = Path(__file__).with_name("_harness.py")
SLOT_UID_BASE = 61000  # slot N runs as uid 61000+N: RLIMIT_NPROC and kill sweeps stay per slot
INSIDE_HARNESS = "/sandbox/harness.py"


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one program run; the zygote applies the per-test ones in every forked child."""

    test_timeout_s: float = 1.0
    memory_mb: int = 512
    max_processes: int = 64
    max_output_bytes: int = 1 << 20
    excerpt_bytes: int = 2048
    file_mb: int = 16
    open_files: int = 256
    scratch_mb: int = 64


@dataclass
class Launch:
    argv: list[str]
    cwd: str | None = None
    pass_fds: tuple[int, ...] = ()
    preexec: Callable[[], None] | None = None
    cleanup: list[Callable[[], None]] = field(default_factory=list)


def _dev_args() -> list[str]:
    """A minimal /dev (null, zero, urandom, ...) bound from the host when others may traverse the
    host's /dev; otherwise (a hardened host with /dev at 0700) an empty tmpfs /dev."""
    if os.stat("/dev").st_mode & 0o001:
        return ["--dev", "/dev"]
    return ["--tmpfs", "/dev"]


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def sandbox_python(configured: str | None) -> str:
    """The interpreter run inside the sandbox: configured, else Debian's /usr/bin/python3, else ours."""
    if configured:
        return configured
    if os.path.exists("/usr/bin/python3"):
        return "/usr/bin/python3"
    return sys.executable


def _preexec(uid: int | None, cgroup: SlotCgroup | None, limits: SandboxLimits) -> Callable[[], None]:
    nproc = limits.max_processes + 8

    def run() -> None:
        if cgroup is not None:
            cgroup.attach_self()
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if uid is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
    return run


class Backend:
    name: str = ""
    secure: bool = False

    def __init__(self, python: str | None, limits: SandboxLimits) -> None:
        self.python = sandbox_python(python)
        self.limits = limits
        self.root = os.geteuid() == 0

    def unavailable(self) -> str | None:
        """Why this backend cannot run here, or None."""
        return None

    def launch(self, slot: int) -> Launch:
        raise NotImplementedError

    def _slot_uid(self, slot: int) -> int | None:
        return SLOT_UID_BASE + slot if self.root else None


class BwrapBackend(Backend):
    name = "bwrap"
    secure = True

    def unavailable(self) -> str | None:
        if shutil.which("bwrap") is None:
            return "bubblewrap is not installed (scripts/install-system-deps.sh installs it)"
        return None

    def _python_binds(self) -> list[str]:
        if self.python.startswith("/usr/"):
            return []
        if os.path.realpath(self.python) != os.path.realpath(sys.executable):
            raise RuntimeError(f"sandbox python {self.python!r} is outside /usr; use an interpreter under /usr")
        prefix = sys.base_prefix
        site = sysconfig.get_paths()["purelib"]
        # Only the standard library is visible: installed packages (and olmorl itself) are masked.
        return ["--ro-bind", prefix, prefix, "--tmpfs", site]

    def launch(self, slot: int) -> Launch:
        limits = self.limits
        cgroup = SlotCgroup.create(slot, limits) if self.root else None
        argv = [
            "bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
            "--new-session", "--cap-drop", "ALL", "--clearenv", "--uid", "65534", "--gid", "65534",
            "--hostname", "sandbox",
            "--ro-bind", "/usr", "/usr",
            "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
            *self._python_binds(),
            "--proc", "/proc", *_dev_args(),
            "--size", str(limits.scratch_mb << 20), "--tmpfs", "/tmp",
        ]
        launch = Launch(argv=argv, preexec=_preexec(self._slot_uid(slot), cgroup, limits))
        # The harness goes in as data, so the slot uid never needs to read the server's files.
        harness_fd = _memfd("harness", HARNESS.read_bytes())
        argv += ["--ro-bind-data", str(harness_fd), INSIDE_HARNESS, "--remount-ro", "/", "--chdir", "/tmp"]
        fds = [harness_fd]
        bpf = seccomp_filter()
        if bpf is not None:
            seccomp_fd = _memfd("seccomp", bpf)
            argv += ["--seccomp", str(seccomp_fd)]
            fds.append(seccomp_fd)
        launch.pass_fds = tuple(fds)
        launch.cleanup += [lambda fd=fd: os.close(fd) for fd in fds]
        argv += ["--", self.python, "-X", "utf8", "-I", "-B", INSIDE_HARNESS, "--pidns", "--scratch", "/tmp"]
        if cgroup is not None:
            launch.cleanup.append(cgroup.destroy)
        return launch


class ProcessBackend(Backend):
    """rlimits (and a slot uid and cgroup when root) but no namespaces: the program sees the host."""

    name = "process"
    secure = False

    def launch(self, slot: int) -> Launch:
        uid = self._slot_uid(slot)
        cgroup = SlotCgroup.create(slot, self.limits) if self.root else None
        scratch = tempfile.mkdtemp(prefix=f"olmorl-sandbox-{slot}-")
        if uid is not None:
            os.chown(scratch, uid, uid)
        launch = Launch(
            argv=[self.python, "-X", "utf8", "-I", "-B", str(HARNESS), "--scratch", scratch],
            cwd=scratch,
            preexec=_preexec(uid, cgroup, self.limits),
        )
        launch.cleanup.append(lambda: shutil.rmtree(scratch, ignore_errors=True))
        if cgroup is not None:
            launch.cleanup.append(cgroup.destroy)
        return launch


BACKENDS: dict[str, type[Backend]] = {"bwrap": BwrapBackend, "process": ProcessBackend}
