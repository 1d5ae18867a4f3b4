"""How a sandbox slot's zygote is launched: bubblewrap (default), plain rlimits (`process`, insecure)
or a warm container (`docker`, in `_docker.py`).

Each slot gets its own unprivileged uids (when the server runs as root: one for the harness, another
for the programs, see `_userns`; claimed host-wide before it starts, see `_uid_claim`) and, where the
kernel lets us, its own memory+pids cgroup; the uid
switch happens last in the pre-exec hook, after joining the cgroups. A backend says how to start a slot
(a `Launch`); the started zygote is reached through a `Channel` (both in `_channel`).
"""

from __future__ import annotations

import os
import resource
import shutil
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from olmorl.sandbox._cgroup import SlotCgroup
from olmorl.sandbox._channel import Channel, Launch, SubprocessChannel
from olmorl.sandbox._languages import HARNESS_ENV, HOST_ETC_PATHS, SANDBOX_ENV, host_languages
from olmorl.sandbox._seccomp import seccomp_filter
from olmorl.sandbox._uid_claim import HOST_UIDS, SlotUids, UidClaim, UidClaimFailed, UidClaims
from olmorl.sandbox._userns import HARNESS_CAPS, INSIDE_HARNESS_ID, INSIDE_PROGRAM_ID, drop_to, slot_user_namespace

# The harness, sent into the sandbox as one file: these parts concatenated (standard library only).
HARNESS_PARTS = tuple(Path(__file__).with_name(name) for name in (
    "_wire.py", "_program.py", "_proxy.py", "_connection.py", "_test_code.py", "_judge.py", "_command.py",
    "_cleanup.py", "_tester.py", "_harness.py"))
INSIDE_HARNESS = "/sandbox/harness.py"
# The interpreter runs the harness file through compile(), not as its script: a script's syntax tree
# stays allocated until the script returns, and the zygote never returns (measured: 12.1 -> 7.2 MB of
# anonymous memory with the trim in its main(), which every fork maps and every program process's exit
# tears down). The harness's options follow its path in sys.argv, where it looks them up; `__file__` is set
# as a script's would be (a session's interpreter tells its own traceback frames from a cell's by it).
HARNESS_LOADER = ("import sys\n__file__ = sys.argv[1]\nwith open(__file__, 'rb') as f:\n"
                  "    code = compile(f.read(), __file__, 'exec')\ndel f\nexec(code)\n")


class SandboxUnavailable(RuntimeError):
    """No usable isolation backend (or an insecure one that was not allowed)."""


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one program run; the zygote applies the per-test ones in every forked child."""

    test_timeout_s: float = 1.0
    memory_mb: int = 512
    max_processes: int = 64
    max_output_bytes: int = 1 << 20  # stdout kept per test
    max_item_output_bytes: int = 16 << 20  # stdout kept over all tests of a run (what comes back)
    excerpt_bytes: int = 2048
    file_mb: int = 16
    open_files: int = 256
    scratch_mb: int = 64
    slots_per_owner: int = 0  # slots one request may hold at once (0: no bound; fair turns either way)
    compile_timeout_s: float = 20.0  # CPU-time limit of a program's one compile step (other languages), as a test's
    compile_memory_mb: int = 1024  # memory ceiling of that step (compilers need more than the program)


def _dev_args() -> list[str]:
    """A minimal /dev (null, zero, urandom, ...) bound from the host when others may traverse the
    host's /dev; otherwise (a hardened host with /dev at 0700) an empty tmpfs /dev."""
    if os.stat("/dev").st_mode & 0o001:
        return ["--dev", "/dev"]
    return ["--tmpfs", "/dev"]


def harness_source() -> bytes:
    return b"\n".join(part.read_bytes() for part in HARNESS_PARTS)


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
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))  # per uid: the harness's and the program's
            drop_to(uid, uid)
    return run


class Backend:
    name: str = ""
    secure: bool = False
    preload: tuple[str, ...] = ()  # modules the zygote imports once, so programs fork with them loaded
    uid_claims: UidClaims = HOST_UIDS  # where its slots claim their uids (a test gives a pool a range of its own)

    def __init__(self, python: str | None, limits: SandboxLimits, *, site_dirs: tuple[str, ...] = ()) -> None:
        self.python = sandbox_python(python)
        self.limits = limits
        self.root = os.geteuid() == 0
        self.site_dirs = _checked_site_dirs(site_dirs)
        self._languages: dict[str, str] | None = None

    def languages(self) -> dict[str, str]:
        """Every language of the table: "" when this sandbox can run it, else why not."""
        if self._languages is None:
            self._languages = host_languages()
        return self._languages

    def unavailable(self) -> str | None:
        """Why this backend cannot run here, or None."""
        return None

    def claim_uids(self) -> UidClaim | None:
        """A host-wide claim on a uid pair for one slot, to hold while the slot lives and release after its
        last process is gone; None where every slot runs as the server's own uid (a server that is not root).
        SandboxUnavailable when no pair is free: never a uid another live slot has."""
        if not self.claims_uids:
            return None
        try:
            return self.uid_claims.claim()
        except UidClaimFailed as exc:
            raise SandboxUnavailable(str(exc)) from exc

    @property
    def claims_uids(self) -> bool:
        """Whether its slots run as host uids of their own (as root; else as the server's uid)."""
        return self.root

    def launch(self, slot: int, uids: SlotUids | None, script: Path | None = None) -> Launch:
        """How to start `script` (default: the harness, whose zygote runs tests; a session's interpreter)
        in slot `slot`, as the slot's claimed `uids` (see `claim_uids`)."""
        raise NotImplementedError

    async def open(self, slot: int, uids: SlotUids | None) -> Channel:
        """Start slot `slot`'s zygote; it answers `{"ready": ...}` on its reader first."""
        return await SubprocessChannel.spawn(self.launch(slot, uids))

    async def prepare(self) -> None:
        """Once, before the pool's first slot starts."""

    async def close(self) -> None:
        """Once, after the pool's last slot stopped."""

    def describe(self) -> dict[str, object]:
        """Backend facts for /readyz (beyond name and `secure`)."""
        return {"uid_separation": self.uid_separation}

    @property
    def uid_separation(self) -> bool:
        """Whether programs run as a uid that owns no harness process (see `_userns`)."""
        return False

    def harness_args(self) -> list[str]:
        """The harness's arguments every backend passes alike: extra package dirs, preloaded modules."""
        args = [arg for i in range(len(self.site_dirs)) for arg in ("--site-dir", inside_site_dir(i))]
        return args + (["--preload", ",".join(self.preload)] if self.preload else [])

    def _slot_uid(self, uids: SlotUids | None) -> int | None:
        """The host uid the slot's harness runs as (None: the server's own, when it is not root)."""
        if not self.root:
            return None
        if uids is None:
            raise ValueError("a root server's slot runs as claimed uids: claim_uids() first")
        return uids.harness


def _checked_site_dirs(dirs: tuple[str, ...]) -> tuple[str, ...]:
    for path in dirs:
        if not os.path.isabs(path) or not os.path.isdir(path):
            raise SandboxUnavailable(f"sandbox.site_dirs: {path!r} is not an absolute path to a directory")
    return tuple(dirs)


def inside_site_dir(index: int) -> str:
    """Where the `index`-th extra package dir appears inside the sandbox (added to sys.path there)."""
    return f"/sandbox/site/{index}"


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

    separate_uids = True  # False: one uid for harness and program even as root (the benchmark's baseline)

    @property
    def uid_separation(self) -> bool:
        return self.root and self.separate_uids

    def _identity_args(self, uids: SlotUids | None, harness: bool) -> tuple[list[str], list[int]]:
        """bwrap's user-namespace arguments and the fds they name: for the harness of a root server, the
        slot's two-uid namespace and the harness's capabilities; otherwise (no root, or a script that is
        the program itself, such as a session's interpreter: nothing inside holds a verdict) bwrap's own
        one-uid namespace, with no capabilities."""
        if not (self.uid_separation and harness):
            return ["--unshare-user", "--disable-userns", "--cap-drop", "ALL", "--uid", "65534", "--gid", "65534"], []
        assert uids is not None  # uid_separation: a root server, whose slots claim their uids
        userns = slot_user_namespace(uids)
        caps = [arg for cap in HARNESS_CAPS for arg in ("--cap-add", cap)]
        # (bwrap's --disable-userns needs its own namespace: the filter refuses new namespaces instead)
        return ["--userns", str(userns), "--cap-drop", "ALL", *caps,
                "--uid", str(INSIDE_HARNESS_ID), "--gid", str(INSIDE_HARNESS_ID)], [userns]

    def launch(self, slot: int, uids: SlotUids | None, script: Path | None = None) -> Launch:
        limits = self.limits
        harness_uid = self._slot_uid(uids)
        identity, fds = self._identity_args(uids, harness=script is None)
        cgroup = SlotCgroup.create(slot, limits) if self.root else None
        env = SANDBOX_ENV if script else HARNESS_ENV  # (a session's script is the program itself)
        argv = [
            "bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            *identity, "--die-with-parent", "--new-session", "--clearenv", "--hostname", "sandbox",
            "--ro-bind", "/usr", "/usr",
            # directories bwrap makes for the binds below are 0700 otherwise: the program's uid must see in
            *(arg for path in ("/etc", "/sandbox", "/sandbox/site") for arg in ("--perms", "0755", "--dir", path)),
            "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
            *self._python_binds(),
            *(arg for path in HOST_ETC_PATHS for arg in ("--ro-bind-try", path, path)),
            *(arg for i, path in enumerate(self.site_dirs) for arg in ("--ro-bind", path, inside_site_dir(i))),
            *(arg for name, value in env.items() for arg in ("--setenv", name, value)),
            "--proc", "/proc", *_dev_args(),
            # /dev itself read-only; shared memory a sized tmpfs, wiped after every test like /tmp, and the
            # slot's POSIX message queues listed at /dev/mqueue so they can be removed too
            "--perms", "0777", "--size", str(limits.scratch_mb << 20), "--tmpfs", "/dev/shm",
            "--mqueue", "/dev/mqueue", "--remount-ro", "/dev",
            "--perms", "0777", "--size", str(limits.scratch_mb << 20), "--tmpfs", "/tmp",
        ]
        launch = Launch(argv=argv, preexec=_preexec(harness_uid, cgroup, limits), cgroup=cgroup)
        # The harness goes in as data, so the slot uid never needs to read the server's files.
        harness_fd = _memfd("harness", script.read_bytes() if script else harness_source())
        argv += ["--ro-bind-data", str(harness_fd), INSIDE_HARNESS, "--remount-ro", "/", "--chdir", "/tmp"]
        fds.append(harness_fd)
        bpf = seccomp_filter()
        if bpf is not None:
            seccomp_fd = _memfd("seccomp", bpf)
            argv += ["--seccomp", str(seccomp_fd)]
            fds.append(seccomp_fd)
        launch.pass_fds = tuple(fds)
        launch.cleanup += [partial(os.close, fd) for fd in fds]
        program_ids = ["--program-ids", f"{INSIDE_PROGRAM_ID}:{INSIDE_PROGRAM_ID}"] if self.uid_separation and not script else []
        argv += ["--", self.python, "-X", "utf8", "-I", "-B", "-c", HARNESS_LOADER, INSIDE_HARNESS, "--pidns",
                 "--scratch", "/tmp", *program_ids, *self.harness_args()]
        if cgroup is not None:
            launch.cleanup.append(cgroup.destroy)
        return launch


class ProcessBackend(Backend):
    """rlimits (and a slot uid and cgroup when root) but no namespaces: the program sees the host."""

    name = "process"
    secure = False

    def launch(self, slot: int, uids: SlotUids | None, script: Path | None = None) -> Launch:
        uid = self._slot_uid(uids)
        cgroup = SlotCgroup.create(slot, self.limits) if self.root else None
        home = tempfile.mkdtemp(prefix=f"olmorl-sandbox-{slot}-")
        scratch = os.path.join(home, "scratch")
        os.mkdir(scratch)
        harness = os.path.join(home, "harness.py")
        Path(harness).write_bytes(script.read_bytes() if script else harness_source())
        os.chmod(home, 0o755)
        if uid is not None:
            os.chown(scratch, uid, uid)
        launch = Launch(
            argv=[self.python, "-X", "utf8", "-I", "-B", "-c", HARNESS_LOADER, harness, "--scratch", scratch,
                  *(arg for path in self.site_dirs for arg in ("--site-dir", path)),
                  *(["--preload", ",".join(self.preload)] if self.preload else [])],
            cwd=scratch, env=dict(SANDBOX_ENV if script else HARNESS_ENV, HOME=scratch),
            preexec=_preexec(uid, cgroup, self.limits),
            scratch=scratch,
            cgroup=cgroup,
        )
        launch.cleanup.append(lambda: shutil.rmtree(home, ignore_errors=True))
        if cgroup is not None:
            launch.cleanup.append(cgroup.destroy)
        return launch


BACKENDS: dict[str, type[Backend]] = {"bwrap": BwrapBackend, "process": ProcessBackend}
