"""A session's persistent Python interpreter: its own long-lived sandbox, launched like a code-test
zygote (same backend: bwrap namespaces + seccomp, claimed slot uid, cgroup, rlimits, private scratch) but
running `_interpreter.py`, which keeps one namespace across calls.

Each live interpreter leaves a small record in a state directory; a server that starts after a crash
sweeps the records of dead servers (kills what they left running, removes scratch and cgroups).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

from olmorl.sandbox._backends import Backend, BwrapBackend, ProcessBackend
from olmorl.sandbox._channel import SubprocessChannel
from olmorl.sandbox._memory import process_tree_bytes
from olmorl.sandbox._uid_claim import UidClaim

INTERPRETER = Path(__file__).with_name("_interpreter.py")
SESSION_SLOT_BASE = 1000  # session sandboxes' slot numbers (in cgroup and scratch names) above the code-test pool's


class InterpreterFailed(RuntimeError):
    """The interpreter died (a limit killed it, the code ended it) or overran its call: it is gone."""


@dataclass(frozen=True)
class CellOutput:
    stdout: str
    stderr: str
    error: str | None  # the formatted exception the cell raised, if it did
    dropped_bytes: int  # output beyond the in-sandbox cap, never sent


@dataclass(frozen=True)
class InterpreterLimits:
    memory_mb: int = 512
    cpu_s: int = 120  # over the interpreter's whole life
    file_mb: int = 16
    open_files: int = 256


class Interpreter:
    """`await start()`, then `await run(code, timeout_s)` any number of times, then `await close()`."""

    def __init__(self, backend: Backend, slot: int, limits: InterpreterLimits, state_dir: Path) -> None:
        if not isinstance(backend, (BwrapBackend, ProcessBackend)):
            raise InterpreterFailed(f"python sessions need the bwrap or process sandbox backend, not {backend.name!r}")
        self.backend = backend
        self.slot = SESSION_SLOT_BASE + slot
        self.limits = limits
        self.state_dir = state_dir
        self.channel: SubprocessChannel | None = None
        self.record: Path | None = None
        self.claim: UidClaim | None = None  # its host uid, held from start to close

    @property
    def alive(self) -> bool:
        return self.channel is not None and self.channel.alive

    def memory_bytes(self, children: dict[int, list[int]] | None = None) -> int:
        """The sandbox's real memory now: its cgroup's charge, else its process tree's PSS (`children`: a
        `children_map()` to walk it with); 0 once it is closed. Reads /proc or the cgroup only, so it may run in
        a thread while the loop uses the interpreter."""
        channel = self.channel
        launch = channel.launch if channel is not None else None
        if channel is None or launch is None:
            return 0
        measured = launch.cgroup.memory_bytes() if launch.cgroup is not None else None
        return measured if measured is not None else process_tree_bytes(channel.proc.pid, children)

    async def start(self, timeout_s: float = 30.0) -> None:
        self.claim = self.backend.claim_uids()  # (a failed start is closed by the caller: that releases it)
        launch = self.backend.launch(self.slot, self.claim.uids if self.claim is not None else None, INTERPRETER)
        channel = self.channel = await SubprocessChannel.spawn(launch)
        self.record = _write_record(self.state_dir, channel.proc.pid, launch.scratch,
                                    launch.cgroup.dirs if launch.cgroup else [])
        limits = {"memory_bytes": self.limits.memory_mb << 20, "cpu_s": self.limits.cpu_s,
                  "file_bytes": self.limits.file_mb << 20, "open_files": self.limits.open_files}
        try:
            channel.write(json.dumps(limits).encode() + b"\n")
            await channel.drain()
            line = await asyncio.wait_for(channel.reader.readline(), timeout_s)
        except (asyncio.TimeoutError, ConnectionError, ValueError):
            line = b""
        if not line.startswith(b'{"ready"'):
            await asyncio.sleep(0.05)
            tail = channel.stderr_tail.decode(errors="replace").strip()[-500:]
            await self.close()
            raise InterpreterFailed(f"the {self.backend.name} sandbox did not start: {tail or 'no output'}")

    async def run(self, code: str, max_output_chars: int) -> CellOutput:
        """Run one cell. The caller bounds the time (and calls `close` when it gives up)."""
        channel = self.channel
        if channel is None or not channel.alive:
            raise InterpreterFailed("the interpreter is not running")
        try:
            channel.write(json.dumps({"code": code, "max_output": max_output_chars}, ensure_ascii=True).encode()
                          + b"\n")
            await channel.drain()
            line = await channel.reader.readline()
            reply = json.loads(line) if line else None
        except (ConnectionError, ValueError):
            reply = None
        if not isinstance(reply, dict) and self.channel is None:
            raise InterpreterFailed("the interpreter was stopped during the call (the session was closed)")
        if not isinstance(reply, dict) or "ended" in reply:
            await asyncio.sleep(0.02)  # let the exit status arrive
            code_ = channel.proc.returncode
            await self.close()
            how = _how_it_ended(reply.get("ended") if isinstance(reply, dict) else None, code_)
            raise InterpreterFailed(f"the interpreter died ({how}); limits: {self.limits.memory_mb} MiB memory, "
                                    f"{self.limits.cpu_s} CPU seconds per session")
        error = reply.get("error")
        return CellOutput(stdout=str(reply.get("stdout", "")), stderr=str(reply.get("stderr", "")),
                          error=str(error) if error is not None else None,
                          dropped_bytes=int(reply.get("dropped") or 0))

    async def close(self) -> None:
        """Kill the sandbox and everything in it; remove its scratch, cgroup and record. Idempotent."""
        channel, self.channel = self.channel, None
        if channel is not None:
            await channel.close()
        record, self.record = self.record, None
        if record is not None:
            record.unlink(missing_ok=True)
        claim, self.claim = self.claim, None
        if claim is not None:  # the sandbox is gone: nothing runs as its uid
            claim.release()


def _how_it_ended(ended: object, sandbox_status: int | None) -> str:
    """From the waiter's line (`_interpreter.report_end`: the wait status), else from the sandbox's exit status,
    where bwrap reports a kill by signal N as 128 + N, the same as an exit with that status."""
    if isinstance(ended, dict) and isinstance(ended.get("signal"), int):
        signum = ended["signal"]
        return f"killed by {signal.Signals(signum).name}" if signum in signal.valid_signals() else f"killed by signal {signum}"
    if isinstance(ended, dict) and isinstance(ended.get("exit"), int):
        return f"the code ended it with exit status {ended['exit']}"
    if sandbox_status is not None and sandbox_status < 0:  # the sandbox process itself was killed
        return f"the sandbox was killed by signal {-sandbox_status}"
    return f"the sandbox ended with status {sandbox_status}"


def _write_record(state_dir: Path, pid: int, scratch: str | None, cgroups: list[Path]) -> Path:
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / f"{os.getpid()}-{pid}.json"
    path.write_text(json.dumps({"server_pid": os.getpid(), "pid": pid, "started": _start_ticks(pid),
                                "scratch": scratch, "cgroups": [str(p) for p in cgroups]}))
    return path


def _start_ticks(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat: tells a live process from a later one that reuses its pid."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def sweep_leftovers(state_dir: Path) -> int:
    """Clean up after servers that died without closing their sessions; returns how many sandboxes."""
    swept = 0
    for path in sorted(state_dir.glob("*.json")) if state_dir.is_dir() else []:
        try:
            record = json.loads(path.read_text())
            server_pid, pid = int(record["server_pid"]), int(record["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)
            continue
        if server_pid != os.getpid() and _start_ticks(server_pid) is not None:
            continue  # another live server owns it
        if record.get("started") is not None and _start_ticks(pid) == record["started"]:
            try:
                os.killpg(pid, signal.SIGKILL)  # the sandbox leads its own process group
            except OSError:
                pass
        for cgroup in record.get("cgroups") or []:
            _kill_cgroup(Path(cgroup))
        scratch = record.get("scratch")
        if isinstance(scratch, str):  # the sandbox's own directory: the scratch, or the home holding it
            home = next((p for p in (scratch, os.path.dirname(scratch))
                         if os.path.basename(p).startswith("olmorl-sandbox-")), None)
            if home is not None:
                shutil.rmtree(home, ignore_errors=True)
        path.unlink(missing_ok=True)
        swept += 1
    return swept


def _kill_cgroup(path: Path) -> None:
    from olmorl.sandbox._cgroup import SlotCgroup

    if path.is_dir():
        SlotCgroup([path]).destroy()
