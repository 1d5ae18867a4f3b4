"""A pool of warm sandboxes: one zygote per slot, one program (all its tests) per slot at a time.

The zygote forks a child per test, so a test costs a fork (~1 ms) instead of a fresh sandbox and
interpreter (~8-30 ms). Programs run in parallel up to the number of slots. A slot whose zygote dies,
hangs or overruns the program's deadline is killed whole (process group, pid namespace, cgroup) and
restarted before its next use. How a zygote is launched and reached (bwrap, docker, process) is the
backend's business (`Backend.open` returns a `Channel`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from olmorl.sandbox._backends import BACKENDS, Backend, BwrapBackend, Channel, SandboxLimits, SandboxUnavailable
from olmorl.sandbox._languages import Language, LanguageUnavailable, job_fields, language

log = logging.getLogger("olmorl.sandbox")


@dataclass
class TestRun:
    """What happened to one test, as the zygote saw it. `frames` come from the child: untrusted."""

    index: int
    frames: list[dict[str, Any]] = field(default_factory=list)
    stdout: str = ""
    stdout_truncated: bool = False
    stderr: str = ""
    runtime_s: float = 0.0
    timed_out: bool = False
    exit_code: int | None = None
    signal: int | None = None
    sandbox_error: str | None = None  # the sandbox itself failed (died, overran); not the program's fault alone

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> TestRun:
        frames = record.get("frames")
        return cls(
            index=int(record["i"]),
            frames=[f for f in frames if isinstance(f, dict)] if isinstance(frames, list) else [],
            stdout=str(record.get("stdout", "")),
            stdout_truncated=bool(record.get("stdout_truncated")),
            stderr=str(record.get("stderr", "")),
            runtime_s=float(record.get("runtime", 0.0)),
            timed_out=bool(record.get("timed_out")),
            exit_code=record.get("exit") if isinstance(record.get("exit"), int) else None,
            signal=record.get("signal") if isinstance(record.get("signal"), int) else None,
        )


@dataclass(frozen=True)
class TestInput:
    """One test for the zygote: `code` runs after the program (None: stdio test, output compared)."""

    code: str | None = None
    stdin: str | None = None
    args: Any = None


class _Slot:
    def __init__(self, backend: Backend, index: int) -> None:
        self.backend = backend
        self.index = index
        self.channel: Channel | None = None
        self.jobs = 0

    @property
    def alive(self) -> bool:
        return self.channel is not None and self.channel.alive

    async def start(self) -> None:
        if self.alive:
            return
        await self.kill()
        channel = await self.backend.open(self.index)
        self.channel = channel
        try:
            line = await asyncio.wait_for(channel.reader.readline(), timeout=30)
        except (asyncio.TimeoutError, ValueError, ConnectionError):
            line = b""
        if not line.startswith(b'{"ready"'):
            await asyncio.sleep(0.05)
            tail = channel.stderr_tail.decode(errors="replace").strip()
            await self.kill()
            raise SandboxUnavailable(f"{self.backend.name} sandbox did not start: {tail or 'no output'}")

    async def kill(self) -> None:
        channel, self.channel = self.channel, None
        if channel is not None:
            await channel.close()

    async def run(self, job: dict[str, Any], budget_s: float) -> tuple[list[TestRun], str | None]:
        await self.start()
        channel = self.channel
        assert channel is not None
        self.jobs += 1
        runs: list[TestRun] = []
        deadline = time.monotonic() + budget_s
        try:
            # ASCII-only JSON: no raw control bytes reach the zygote's stdin (docker's attach would
            # read ctrl-p ctrl-q as "detach").
            channel.write(json.dumps(job, ensure_ascii=True).encode() + b"\n")
            await channel.drain()
            while True:
                line = await asyncio.wait_for(channel.reader.readline(), max(deadline - time.monotonic(), 0.001))
                if not line:
                    raise EOFError
                record = json.loads(line)
                if record.get("end"):
                    if channel.worn():
                        log.info("%s sandbox slot %d recycled (worn)", self.backend.name, self.index)
                        await self.kill()
                    return runs, None
                runs.append(TestRun.from_record(record))
        except asyncio.TimeoutError:
            reason = f"the sandbox overran the program's budget of {budget_s:.1f} s and was killed"
        except (EOFError, ConnectionError, ValueError, KeyError):
            await asyncio.sleep(0.01)
            reason = "the sandbox process died during the run (killed by the program?)"
        tail = channel.stderr_tail.decode(errors="replace").strip()[-500:]  # the zygote's own stderr
        log.warning("%s sandbox slot %d replaced: %s%s", self.backend.name, self.index, reason,
                    f"; zygote stderr: {tail}" if tail else "")
        await self.kill()
        return runs, reason


class SandboxPool:
    """Runs programs against tests in warm sandboxes. `start()` before use, `stop()` after."""

    def __init__(self, backend: str = "auto", *, allow_insecure: bool = False, slots: int = 1,
                 limits: SandboxLimits | None = None, python: str | None = None,
                 docker_image: str | None = None, docker_runtime: str | None = None,
                 site_dirs: tuple[str, ...] = ()) -> None:
        self.limits = limits or SandboxLimits()
        self.backend = _pick_backend(backend, allow_insecure, python, self.limits, docker_image=docker_image,
                                     docker_runtime=docker_runtime, site_dirs=tuple(site_dirs))
        self.slot_count = max(1, slots)
        self._slots: list[_Slot] = [_Slot(self.backend, i) for i in range(self.slot_count)]
        self._free: asyncio.Queue[_Slot] | None = None
        self.restarts = 0

    @property
    def insecure(self) -> bool:
        return not self.backend.secure

    async def start(self) -> None:
        self._free = asyncio.Queue()
        await self.backend.prepare()
        try:
            await asyncio.gather(*(slot.start() for slot in self._slots))
        except BaseException:
            await self.stop()
            raise
        for slot in self._slots:
            self._free.put_nowait(slot)
        if self.insecure:
            log.warning("code sandbox backend %r is INSECURE: programs run without namespaces or seccomp; "
                        "use it only for trusted code on a development machine", self.backend.name)
        log.info("code sandbox ready: backend=%s slots=%d", self.backend.name, self.slot_count)

    async def stop(self) -> None:
        await asyncio.gather(*(slot.kill() for slot in self._slots))
        await self.backend.close()

    async def run(self, program: str, tests: list[TestInput], timeout_s: float | None = None,
                  memory_mb: int | None = None, *, language: str = "python",
                  compile_timeout_s: float | None = None) -> tuple[list[TestRun], str | None]:
        """Run `program` once per test, each in a fresh fork. Returns one TestRun per test that
        reported, plus the reason when the sandbox itself failed (missing tests then never ran).
        A compiled language's build comes first as the TestRun with index -1 (no tests run when it
        failed). Raises UnknownLanguage, or LanguageUnavailable when this sandbox lacks the toolchain."""
        if self._free is None:
            raise RuntimeError("sandbox pool is not started")
        lang = self.language(language)
        timeout = timeout_s or self.limits.test_timeout_s
        memory = memory_mb if memory_mb and memory_mb > 0 else self.limits.memory_mb
        job = {
            "program": program,
            "tests": [{"code": t.code, "stdin": t.stdin, "args": t.args} for t in tests],
            "timeout": timeout,
            "memory_bytes": min(memory, self.limits.memory_mb) << 20,
            "file_bytes": self.limits.file_mb << 20,
            "open_files": self.limits.open_files,
            "max_output": self.limits.max_output_bytes,
            "excerpt": self.limits.excerpt_bytes,
        }
        budget = len(tests) * (timeout + 0.5) + 5.0
        if lang.name != "python":
            compile_timeout = min(compile_timeout_s or self.limits.compile_timeout_s, self.limits.compile_timeout_s)
            job.update(job_fields(lang, program, memory_bytes=job["memory_bytes"], compile_timeout_s=compile_timeout,
                                  compile_memory_bytes=self.limits.compile_memory_mb << 20))
            budget += compile_timeout + 1.0 if lang.compiled else 0.0
        slot = await self._free.get()
        try:
            runs, failure = await slot.run(job, budget)
            if failure is not None:
                self.restarts += 1
            return runs, failure
        finally:
            self._free.put_nowait(slot)

    def language(self, name: str) -> Language:
        """The language `name` as this pool's sandbox runs it; UnknownLanguage or LanguageUnavailable."""
        lang = language(name)
        missing = self.backend.languages().get(lang.name)
        if missing:
            raise LanguageUnavailable(f"language {lang.name!r} is not available in the {self.backend.name} "
                                      f"sandbox: {missing}")
        return lang

    def readiness(self) -> dict[str, Any]:
        return {
            "backend": self.backend.name,
            "secure": self.backend.secure,
            "slots": self.slot_count,
            "alive": sum(slot.alive for slot in self._slots),
            "restarts": self.restarts,
            "languages": sorted(name for name, missing in self.backend.languages().items() if not missing),
            **self.backend.describe(),
        }


def _pick_backend(name: str, allow_insecure: bool, python: str | None, limits: SandboxLimits, *,
                  docker_image: str | None = None, docker_runtime: str | None = None,
                  site_dirs: tuple[str, ...] = ()) -> Backend:
    if name == "auto":
        bwrap = BwrapBackend(python, limits, site_dirs=site_dirs)
        reason = bwrap.unavailable()
        if reason is None:
            return bwrap
        if not allow_insecure:
            raise SandboxUnavailable(f"no secure sandbox: {reason}. Set sandbox.allow_insecure=true "
                                     "(OLMORL_SANDBOX_ALLOW_INSECURE=1) to run code with rlimits only.")
        name = "process"
    if name == "docker":
        from olmorl.sandbox._docker import DockerBackend

        backend: Backend = DockerBackend(python, limits, image=docker_image, runtime=docker_runtime,
                                         site_dirs=site_dirs)
    elif name in BACKENDS:
        backend = BACKENDS[name](python, limits, site_dirs=site_dirs)
    else:
        raise SandboxUnavailable(f"unknown sandbox backend {name!r}; use auto, bwrap, docker or process")
    if not backend.secure and not allow_insecure:
        raise SandboxUnavailable(f"sandbox backend {name!r} is insecure; it runs only with "
                                 "sandbox.allow_insecure=true (OLMORL_SANDBOX_ALLOW_INSECURE=1)")
    reason = backend.unavailable()
    if reason is not None:
        raise SandboxUnavailable(reason)
    return backend
