"""A slot's zygote: how it is started (`Launch`, which a backend builds) and how it is reached (`Channel`).

A channel carries the zygote's reply lines, its control input, and `close()`, which kills everything it
ran and releases what it held (the launch's cleanup steps: fds, scratch dirs, the slot's cgroup).
"""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass, field
from typing import Callable

from olmorl.sandbox._cgroup import SlotCgroup

LINE_LIMIT = 32 << 20  # one test record from the zygote: output cap + frames, JSON-escaped


@dataclass
class Launch:
    argv: list[str]
    cwd: str | None = None
    pass_fds: tuple[int, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # bwrap's own stays empty (it shows in /proc/1/environ)
    preexec: Callable[[], None] | None = None
    cleanup: list[Callable[[], None]] = field(default_factory=list)
    scratch: str | None = None  # a host directory the sandbox writes to (None: a tmpfs inside it)
    cgroup: SlotCgroup | None = None


class Channel:
    """A running zygote: `reader` yields its reply lines, `write` + `drain` feed it jobs."""

    reader: asyncio.StreamReader
    stderr_tail: bytes = b""

    @property
    def alive(self) -> bool:
        raise NotImplementedError

    def worn(self) -> bool:
        """True when the zygote should be replaced before its next job (checked after each job)."""
        return False

    def write(self, data: bytes) -> None:
        raise NotImplementedError

    async def drain(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        """Kill the zygote and everything it started; release the slot's resources. Idempotent."""
        raise NotImplementedError


class SubprocessChannel(Channel):
    """A zygote launched as a local process (bwrap or plain), talking over its stdin/stdout pipes."""

    def __init__(self, proc: asyncio.subprocess.Process, launch: Launch) -> None:
        self.proc = proc
        self.launch: Launch | None = launch
        assert proc.stdout is not None
        self.reader = proc.stdout
        self.stderr_tail = b""
        self._stderr_task: asyncio.Task[None] | None = asyncio.ensure_future(self._drain_stderr())

    @classmethod
    async def spawn(cls, launch: Launch) -> SubprocessChannel:
        try:
            proc = await asyncio.create_subprocess_exec(
                *launch.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=launch.cwd, env=launch.env, pass_fds=launch.pass_fds,
                preexec_fn=launch.preexec, start_new_session=True, limit=LINE_LIMIT,
            )
        except BaseException:
            for step in launch.cleanup:
                step()
            raise
        return cls(proc, launch)

    async def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(1 << 16):
            self.stderr_tail = (self.stderr_tail + chunk)[-4096:]

    @property
    def alive(self) -> bool:
        return self.launch is not None and self.proc.returncode is None

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    async def drain(self) -> None:
        assert self.proc.stdin is not None
        await self.proc.stdin.drain()

    async def close(self) -> None:
        launch, self.launch = self.launch, None
        if launch is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # bwrap is pid 1 of the namespace: all inside die too
        except ProcessLookupError:
            pass
        await self.proc.wait()
        if self._stderr_task is not None:
            self._stderr_task.cancel()
            self._stderr_task = None
        for step in launch.cleanup:
            await asyncio.to_thread(step)
