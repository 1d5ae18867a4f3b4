"""What the throughput benchmarks measure: peak RSS and CPU seconds of a process and all its descendants (the
reward server and its worker processes), sampled from /proc; and the baselines a server is compared with, the
verifier called in a loop in one process and in two."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
import time
import zlib
from concurrent.futures import ProcessPoolExecutor

from olmorl.sandbox._memory import descendants

_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def tree_cpu(root_pid: int, *, include_root: bool = True) -> tuple[float, int]:
    """CPU seconds and page faults so far of a process tree: every live process under `root_pid` (and
    `root_pid` itself unless `include_root` is False), each with the children it reaped. A sandbox's
    zygote reaps every program process, so short-lived processes count too (unlike `TreeMonitor`)."""
    cpu, faults = 0, 0
    pids = descendants(root_pid) | ({root_pid} if include_root else set())
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
        faults += int(fields[7]) + int(fields[8])  # minflt, cminflt
    return cpu / _TICKS, faults


def own_cpu(pid: int) -> float:
    """CPU seconds so far of the process `pid` itself: not its children, reaped or alive."""
    found = _cpu_and_rss(pid)
    return found[0] if found is not None else 0.0


SLOT_PARTS = ("zygote", "program processes", "test process")


def slot_cpu(root_pid: int) -> dict[str, tuple[float, int]]:
    """`tree_cpu` of the sandbox slots under `root_pid`, split by part: each zygote's own CPU seconds and page
    faults, the program processes (and cleaners) it reaped, and its test process (its first child, forked at
    start). A zygote is a Python process whose parent is not one (bwrap's init, or a container's)."""
    procs = {}
    for pid in descendants(root_pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                text = f.read()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[1].split()
        procs[pid] = (text[text.index("(") + 1:text.rindex(")")].startswith("python"), int(fields[1]),
                      [int(x) for x in fields[11:15]], [int(fields[7]), int(fields[8])])
    parts = {name: [0, 0] for name in SLOT_PARTS}
    for pid, (python, parent, times, faults) in procs.items():
        if not python or procs.get(parent, (False,))[0]:
            continue
        children = [child for child, found in procs.items() if found[1] == pid and found[0]]
        found = [("zygote", times[0] + times[1], faults[0]), ("program processes", times[2] + times[3], faults[1])]
        if children:
            tester = procs[min(children)]
            found.append(("test process", tester[2][0] + tester[2][1], tester[3][0]))
        for name, ticks, count in found:
            parts[name][0] += ticks
            parts[name][1] += count
    return {name: (ticks / _TICKS, count) for name, (ticks, count) in parts.items()}


def _tree(root_pid: int) -> list[int]:
    return [root_pid, *descendants(root_pid)]


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

    def cpu_now(self) -> float:
        """`cpu_s` sampled now, not at the last 0.1 s tick: for timing one request."""
        self._last_cpu.update({pid: cpu for pid, (cpu, _) in self._sample().items()})
        return self.cpu_s

    @property
    def cpu_s(self) -> float:
        return sum(cpu - self._start_cpu.get(pid, 0.0) for pid, cpu in self._last_cpu.items())


# -- the verifier called in a loop: the baseline the server is measured against ----------------------------------
def score_in_loop(verifier: str, items: list[dict], start_at: float = 0.0) -> tuple[float, float, list[float]]:
    """Wall seconds, CPU seconds and per-item seconds of `verifier` scoring `items` in a loop in this process,
    warmed up as a pool worker is (no queueing, no transport). Starts at wall-clock time `start_at`, so two
    processes can start together."""
    from olmorl.rewards.engine._registry import load_verifiers
    from olmorl.rewards._settings import Settings

    scorer = load_verifiers()[verifier](Settings())
    scorer.warm_up()
    while time.time() < start_at:
        time.sleep(0.001)
    latencies = []
    start, cpu = time.perf_counter(), time.process_time()
    for item in items:
        t0 = time.perf_counter()
        scorer.score(scorer.make_task(item["response"], item["ground_truth"], item.get("options", {}), None))
        latencies.append(time.perf_counter() - t0)
    return time.perf_counter() - start, time.process_time() - cpu, latencies


def one_loop(verifier: str, items: list[dict]) -> tuple[float, float, list[float]]:
    """`score_in_loop` in a new interpreter: every pass scores the same items, and none finds them in a cache an
    earlier pass filled (the math verifier caches normalized answers and parsed references)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as fresh:
        return fresh.submit(score_in_loop, verifier, items).result()


def two_loops(verifier: str, items: list[dict]) -> float:
    """Items/s of two fresh processes scoring half the items each at the same time, with nothing between them:
    what this machine gives two workers of pure verifier work. The halves split by ground truth, as the server
    places items, so each process has the cache hits of its references."""
    halves: list[list[dict]] = [[], []]
    for item in items:
        halves[zlib.crc32(json.dumps(item["ground_truth"]).encode()) % 2].append(item)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as fresh:
        start_at = time.time() + 10  # both interpreters have imported and warmed up by then
        runs = [fresh.submit(score_in_loop, verifier, half, start_at) for half in halves]
        return len(items) / max(run.result()[0] for run in runs)
