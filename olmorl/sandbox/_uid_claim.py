"""Host-wide claims on sandbox uids: no two live slots on one host share a uid, whichever server or
pool they belong to.

A slot's uids are a pair (harness, program: see `_userns`). Before a slot starts it claims a free pair:
an exclusive `flock` on the pair's lock file in a directory only this user may write, held open for as
long as the slot lives. The kernel drops a flock when the last descriptor of its open file goes away,
so a claimant that dies in any way (SIGKILL included) frees its pairs at once: no stale claim, nothing
to clean up. Pairs are tried in order and the first free one is taken; when every pair of the range is
held the claim fails with `UidClaimFailed`, never a shared uid. A shared uid would share RLIMIT_NPROC
(one server's fork bomb starving another's programs) and every per-uid kill or signal.

A free lock is not enough: the kernel drops a dead claimant's flock at once, but its slots' processes may
outlive it (a docker slot's container belongs to the engine, not to the server; a bwrap sandbox dies with
its parent a moment later). So a pair is taken only when, with its lock held, no process on this host runs
as either of its uids (every uid of /proc/PID/status: real, effective, saved, filesystem); a pair still in
use is skipped, and tried again at the next claim. Nothing else can start a process as that pair's uids
while the lock is held, so the check cannot go stale. Scanning /proc costs ~3 ms per claim on a host with
a few hundred processes; the linear walk over lock files costs one open and one flock per pair held.
"""

from __future__ import annotations

import fcntl
import os
import stat
import tempfile
from dataclasses import dataclass

# systemd's uid table leaves 1879048192-2147483647 unused (no regular, system, dynamic, homed or container
# range), and /etc/subuid ranges start far below it: no real user's process ever has one of these uids.
UID_BASE = 2_000_000_000
UID_PAIRS = 4096  # slots that may live at once on one host, all servers together (pair k: BASE+2k, BASE+2k+1)
CLAIM_DIR = "/run/olmorl/uids"  # root's (0700); a host whose /run is not writable uses a private temp dir


class UidClaimFailed(RuntimeError):
    """No uid pair could be claimed: every pair of the range is held by a live slot on this host (or there is
    no directory to claim in)."""


@dataclass(frozen=True)
class SlotUids:
    """The host uids of one slot: its harness's and its programs'."""

    harness: int
    program: int


class UidClaim:
    """A held pair: this process's until `release()` or until the process ends."""

    def __init__(self, uids: SlotUids, fd: int) -> None:
        self.uids = uids
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Give the pair back (call it once nothing runs as these uids any more). Idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # the lock goes with the last descriptor of the open file


class UidClaims:
    """A range of `pairs` uid pairs from `base`, claimed through lock files in `directory` (None: CLAIM_DIR,
    or a private temp dir where /run is not writable). Every server on a host must use the same directory."""

    def __init__(self, directory: str | None = None, base: int = UID_BASE, pairs: int = UID_PAIRS) -> None:
        self.base, self.pairs = base, pairs
        self._requested = directory
        self.directory: str | None = None  # chosen at the first claim

    def pair(self, index: int) -> SlotUids:
        return SlotUids(harness=self.base + 2 * index, program=self.base + 2 * index + 1)

    def claim(self) -> UidClaim:
        """The first free pair that no process runs as, claimed; UidClaimFailed when there is none."""
        directory = self._directory()
        in_use: set[int] | None = None  # the host's process uids, read once the first lock is held
        for index in range(self.pairs):
            uids = self.pair(index)
            fd = os.open(os.path.join(directory, f"{uids.harness}.lock"),
                         os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                in_use = process_uids() if in_use is None else in_use
            except BlockingIOError:
                os.close(fd)
                continue
            except BaseException:
                os.close(fd)
                raise
            if uids.harness in in_use or uids.program in in_use:  # a dead claimant's slot still runs
                os.close(fd)
                continue
            return UidClaim(uids, fd)
        raise UidClaimFailed(f"all {self.pairs} sandbox uid pairs ({self.base}-{self.base + 2 * self.pairs - 1}) are "
                            f"held by live sandbox slots on this host, or still run processes of slots whose server "
                            f"is gone (claims in {directory}): stop a server or lower its sandbox parallelism or "
                            "session limits")

    def _directory(self) -> str:
        if self.directory is None:
            candidates = [self._requested] if self._requested else [CLAIM_DIR, _private_fallback()]
            errors = []
            for path in candidates:
                try:
                    self.directory = _owned_private_dir(path)
                    break
                except OSError as exc:
                    errors.append(f"{path}: {exc}")
            else:
                raise UidClaimFailed(f"no directory for sandbox uid claims: {'; '.join(errors)}")
        return self.directory


def process_uids() -> set[int]:
    """Every uid a process on this host runs as now (real, effective, saved and filesystem, from
    /proc/PID/status: a setuid process is not dumpable, and its /proc directory is root's whatever it runs as)."""
    uids: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as status:
                for line in status:
                    if line.startswith(b"Uid:"):
                        uids.update(int(field) for field in line.split()[1:])
                        break
        except (OSError, ValueError):  # gone meanwhile
            continue
    return uids


def _private_fallback() -> str:
    return os.path.join(tempfile.gettempdir(), f"olmorl-uids-{os.geteuid()}")


def _owned_private_dir(path: str) -> str:
    """`path`, made if missing (0700), refused unless it is a directory of this user that no one else may
    write: another user's lock files could hold every pair, or point a claim elsewhere."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.stat(path, follow_symlinks=False)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise PermissionError(f"not a directory owned by uid {os.geteuid()}")
    if info.st_mode & 0o022:
        os.chmod(path, 0o700)
    return path


HOST_UIDS = UidClaims()  # what every slot of this process claims from, unless a backend is given another
