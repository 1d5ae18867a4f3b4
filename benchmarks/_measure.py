"""What the throughput benchmarks measure about a server: peak RSS and CPU seconds of a process and
all its descendants (the reward server and its worker processes), sampled from /proc."""

from __future__ import annotations

import os
import threading
import time

_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _tree(root_pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    pids, stack = [], [root_pid]
    while stack:
        pid = stack.pop()
        pids.append(pid)
        stack.extend(children.get(pid, []))
    return pids


def _cpu_and_rss(pid: int) -> tuple[float, int] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/statm") as f:
            rss = int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS, rss


class TreeMonitor(threading.Thread):
    """Samples a process tree every 0.1 s: `peak_rss` bytes, and `cpu_s`, the CPU seconds the tree
    used since start (a worker replaced between two samples loses at most one interval)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak_rss, self.running = pid, 0, True
        self._start_cpu = {pid: cpu for pid, (cpu, _) in self._sample().items()}
        self._last_cpu: dict[int, float] = {}

    def _sample(self) -> dict[int, tuple[float, int]]:
        samples = {}
        for pid in _tree(self.pid):
            found = _cpu_and_rss(pid)
            if found is not None:
                samples[pid] = found
        return samples

    def run(self) -> None:
        while self.running:
            samples = self._sample()
            self.peak_rss = max(self.peak_rss, sum(rss for _, rss in samples.values()))
            self._last_cpu.update({pid: cpu for pid, (cpu, _) in samples.items()})
            time.sleep(0.1)

    def stop(self) -> None:
        self.running = False
        self.join()
        self._last_cpu.update({pid: cpu for pid, (cpu, _) in self._sample().items()})

    @property
    def cpu_s(self) -> float:
        return sum(cpu - self._start_cpu.get(pid, 0.0) for pid, cpu in self._last_cpu.items())
