"""Real memory figures from /proc and cgroups: what a process tree uses, what the machine has.

A sandbox with a memory cgroup is measured by the cgroup (its processes' pages plus its tmpfs files);
without one (non-root, the `process` backend) by the proportional set size (PSS) of its process tree,
which splits shared pages between the processes that map them, so summing never counts one twice.
"""

from __future__ import annotations

import os
from pathlib import Path

_CGROUP_ROOT = Path("/sys/fs/cgroup")
_UNLIMITED = 1 << 62  # cgroup v1 writes "no limit" as a number near 2**63


def children_map() -> dict[int, list[int]]:
    """Parent pid -> the pids of its live children, from one pass over /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(pid: int, children: dict[int, list[int]] | None = None) -> set[int]:
    """Every live process under `pid`, however deep; `children` (a `children_map()`) saves the /proc pass when
    several trees are walked at once."""
    children = children_map() if children is None else children
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def pss_bytes(pid: int) -> int:
    """The process's proportional set size; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError):
        pass
    return 0


def process_tree_bytes(pid: int, children: dict[int, list[int]] | None = None) -> int:
    """PSS of `pid` and every process under it."""
    return sum(pss_bytes(p) for p in {pid} | descendants(pid, children))


def cgroup_memory_bytes(path: Path) -> int | None:
    """What a memory cgroup (v1 or v2) is charged now; None if `path` is not one (or is gone)."""
    for name in ("memory.usage_in_bytes", "memory.current"):
        try:
            return int((path / name).read_text())
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return None
    return None


def machine_memory_bytes() -> int:
    """The memory this server may use: MemTotal, or less where its cgroup (or one above it) is limited."""
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) << 10 for line in f if line.startswith("MemTotal:"))
    return min([total, *_cgroup_limits()])


def _cgroup_limits() -> list[int]:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    limits = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # cgroup v2
            base, name = _CGROUP_ROOT, "memory.max"
        elif "memory" in controllers.split(","):
            base, name = _CGROUP_ROOT / "memory", "memory.limit_in_bytes"
        else:
            continue
        here = Path(path)
        for folder in (here, *here.parents):  # a limit set on any ancestor bounds us too
            try:
                value = (base / str(folder).lstrip("/") / name).read_text().strip()
            except OSError:
                continue
            if value.isdigit() and int(value) < _UNLIMITED:
                limits.append(int(value))
    return limits
