"""Per-slot memory and pids cgroups (cgroup v1, as root): a backstop under the per-test rlimits.

RLIMIT_NPROC counts per uid and RLIMIT_AS per process; a cgroup bounds the whole sandbox (every fork
and thread together) and lets us kill everything in it. Where cgroup v1 memory/pids are not writable
(non-root, cgroup v2 without delegated controllers) slots run without one and rely on rlimits.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from olmorl.sandbox._memory import cgroup_memory_bytes

if TYPE_CHECKING:
    from olmorl.sandbox._backends import SandboxLimits

_V1_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()


def _own_v1_paths() -> dict[str, str]:
    paths = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(","):
                paths[controller] = path
    except OSError:
        pass
    return paths


@dataclass
class SlotCgroup:
    dirs: list[Path]

    @classmethod
    def create(cls, slot: int, limits: SandboxLimits) -> SlotCgroup | None:
        own = _own_v1_paths()
        name = f"olmorl-{os.getpid()}-slot{slot}-{next(_counter)}"
        # The zygote and bwrap come on top of the program (or of its compiler, which may need more).
        memory_bytes = (max(limits.memory_mb, limits.compile_memory_mb) + 96) << 20
        settings = {
            "memory": {"memory.limit_in_bytes": str(memory_bytes), "memory.swappiness": "0"},
            "pids": {"pids.max": str(limits.max_processes + 4)},
        }
        dirs = []
        for controller, values in settings.items():
            if controller not in own or not (_V1_ROOT / controller / "cgroup.procs").exists():
                continue
            path = _V1_ROOT / controller / own[controller].lstrip("/") / name
            try:
                path.mkdir()
            except OSError:
                continue
            for key, value in values.items():
                try:
                    (path / key).write_text(value)
                except OSError:
                    pass
            dirs.append(path)
        return cls(dirs) if dirs else None

    def attach_self(self) -> None:
        """Called in the pre-exec hook of the launched process (still root)."""
        pid = str(os.getpid()).encode()
        for path in self.dirs:
            fd = os.open(path / "cgroup.procs", os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)

    def pids(self) -> set[int]:
        found: set[int] = set()
        for path in self.dirs:
            try:
                found.update(int(p) for p in (path / "cgroup.procs").read_text().split())
            except OSError:
                pass
        return found

    def memory_bytes(self) -> int | None:
        """What the memory cgroup is charged now (the sandbox's pages and tmpfs files); None without one."""
        return next((m for m in map(cgroup_memory_bytes, self.dirs) if m is not None), None)

    def kill_all(self) -> None:
        for _ in range(20):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.005)

    def destroy(self) -> None:
        self.kill_all()
        for path in self.dirs:
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
