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
import re
import logging
from dataclasses import dataclass, field
from typing import Any

from olmorl.sandbox._backends import BACKENDS, Backend, BwrapBackend, SandboxLimits, SandboxUnavailable
from olmorl.sandbox._channel import Channel
from olmorl.sandbox._connection import wall_backstop
from olmorl.sandbox._fair_queue import FairQueue
from olmorl.sandbox._uid_claim import UidClaim
from olmorl.sandbox._languages import Language, LanguageUnavailable, job_fields, language
from olmorl.sandbox._wire import TAMPER_KINDS

log = logging.getLogger("olmorl.sandbox")
_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
# A Python program's load (running its top level: imports) before a code test's clock starts. Each test
# runs the program afresh; `import numpy` / `import sympy` cost 0.1-0.5 s there, more under load.
PROGRAM_LOAD_S = 3.0


@dataclass
class TestRun:
    """What happened to one test, as the sandbox's test process judged it (see `_harness`)."""

    index: int
    status: str = "error"  # passed | failed | error | timeout
    message: str = ""
    stdout: str = ""  # all of it for a run without expected output, else an excerpt
    stdout_truncated: bool = False
    stderr: str = ""
    runtime_s: float = 0.0
    timed_out: bool = False
    exit_code: int | None = None
    signal: int | None = None
    tamper: list[str] = field(default_factory=list)  # how the program tripped the boundary (`TAMPER_KINDS`)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> TestRun:
        status = record.get("status")
        if status not in ("passed", "failed", "error", "timeout"):
            raise ValueError(f"unknown test status {status!r}")
        return cls(
            index=int(record["i"]),
            status=status,
            message=str(record.get("message") or ""),
            stdout=str(record.get("stdout", "")),
            stdout_truncated=bool(record.get("stdout_truncated")),
            stderr=str(record.get("stderr", "")),
            runtime_s=float(record.get("runtime", 0.0)),
            timed_out=bool(record.get("timed_out")),
            exit_code=record.get("exit") if isinstance(record.get("exit"), int) else None,
            signal=record.get("signal") if isinstance(record.get("signal"), int) else None,
            tamper=[kind for kind in record.get("tamper") or () if kind in TAMPER_KINDS],
        )


@dataclass(frozen=True)
class TestInput:
    """One test. Exactly one kind: `code` (Python run against the program's objects), `call` (call
    that function with `args`, compare with `expected`), or neither (stdio: run the program on
    `stdin`; compare with `expected_stdout` if given, else just report the output)."""

    code: str | None = None
    stdin: str | None = None
    call: str | None = None
    args: Any = None
    expected: Any = None
    expected_stdout: str | None = None
    entry: str | None = None  # for `code`: the name that always comes from the program (HumanEval's entry_point)

    def wire(self) -> dict[str, Any]:
        return {"code": self.code, "stdin": self.stdin, "call": self.call, "args": self.args,
                "expected": self.expected, "expected_stdout": self.expected_stdout, "entry": self.entry}


class _Slot:
    def __init__(self, backend: Backend, index: int) -> None:
        self.backend = backend
        self.index = index
        self.channel: Channel | None = None
        self.jobs = 0
        self.claim: UidClaim | None = None  # its host uids, held from the pool's start to its stop (restarts keep them)

    @property
    def alive(self) -> bool:
        return self.channel is not None and self.channel.alive

    async def start(self) -> None:
        if self.alive:
            return
        await self.kill()
        channel = await self.backend.open(self.index, self.claim.uids if self.claim is not None else None)
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

    async def run(self, job: dict[str, Any], tests: list[dict[str, Any]],
                  budget_s: float) -> tuple[list[TestRun], str | None]:
        await self.start()
        channel = self.channel
        assert channel is not None
        self.jobs += 1
        runs: list[TestRun] = []  # the build step's record first (a compiled language's), then the tests'
        try:
            # One deadline for the whole job, not a `wait_for` per line: each of those was a task and a timer of
            # its own, ~15 us of the server's CPU a line.
            async with asyncio.timeout(budget_s):
                await self._exchange(channel, job, tests, runs)
            if channel.worn():
                log.info("%s sandbox slot %d recycled (worn)", self.backend.name, self.index)
                await self.kill()
            return runs, None
        except asyncio.TimeoutError:
            reason = f"the sandbox overran the program's budget of {budget_s:.1f} s and was killed"
        except (EOFError, ConnectionError):
            await asyncio.sleep(0.01)
            reason = "the sandbox process died during the run (killed by the program?)"
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            reason = f"the sandbox broke the protocol ({type(exc).__name__}: {str(exc)[:200]}) and was replaced"
        tail = channel.stderr_tail.decode(errors="replace").strip()[-500:]  # the zygote's own stderr
        log.warning("%s sandbox slot %d replaced: %s%s", self.backend.name, self.index, reason,
                    f"; zygote stderr: {tail}" if tail else "")
        await self.kill()
        return runs, reason

    @staticmethod
    async def _exchange(channel: Channel, job: dict[str, Any], tests: list[dict[str, Any]],
                        runs: list[TestRun]) -> None:
        """Send the job, and append each record to `runs` as it comes, until the job's end line."""
        # Length-prefixed frames: the job process reads the header alone, the test process the
        # tests. ASCII-only JSON: no raw control bytes reach the zygote's stdin (docker's attach
        # would read ctrl-p ctrl-q as "detach").
        for part in (job, tests):
            data = json.dumps(part, ensure_ascii=True).encode()
            channel.write(b"%d\n" % len(data) + data)
        await channel.drain()
        build: TestRun | None = None
        tested = 0
        while True:
            line = await channel.reader.readline()
            if not line:
                raise EOFError
            record = json.loads(line)
            if not isinstance(record, dict) or record.get("job") != job["id"]:
                raise ValueError("a record of another job")
            if record.get("end"):
                built = build is None or build.status == "passed"
                if tested != (len(tests) if built else 0) or ("build" in job and build is None):
                    raise ValueError("the job ended early")
                return
            run = TestRun.from_record(record)
            if "build" in job and build is None:
                if run.index != -1:
                    raise ValueError("a test record before the build's")
                build = run
            elif run.index != tested:
                raise ValueError("a record out of order")
            else:
                tested += 1
            runs.append(run)


class SandboxPool:
    """Runs programs against tests in warm sandboxes. `start()` before use, `stop()` after."""

    def __init__(self, backend: str = "auto", *, allow_insecure: bool = False, slots: int = 1,
                 limits: SandboxLimits | None = None, python: str | None = None,
                 docker_image: str | None = None, docker_runtime: str | None = None,
                 site_dirs: tuple[str, ...] = (), preload: tuple[str, ...] = ()) -> None:
        self.limits = limits or SandboxLimits()
        self.backend = _pick_backend(backend, allow_insecure, python, self.limits, docker_image=docker_image,
                                     docker_runtime=docker_runtime, site_dirs=tuple(site_dirs))
        self.backend.preload = _checked_modules(preload)
        self.slot_count = max(1, slots)
        self._slots: list[_Slot] = [_Slot(self.backend, i) for i in range(self.slot_count)]
        self._free: FairQueue[_Slot] | None = None
        self._jobs = 0
        self.restarts = 0

    @property
    def insecure(self) -> bool:
        return not self.backend.secure

    async def start(self) -> None:
        self._free = FairQueue(self.limits.slots_per_owner)
        try:
            for slot in self._slots:  # every slot's uids before any starts: too few free is a clear start error
                slot.claim = self.backend.claim_uids()
            await self.backend.prepare()
            await asyncio.gather(*(slot.start() for slot in self._slots))
        except BaseException:
            await self.stop()
            raise
        for slot in self._slots:
            self._free.free.append(slot)
        if self.insecure:
            log.warning("code sandbox backend %r is INSECURE: programs run without namespaces or seccomp; "
                        "use it only for trusted code on a development machine", self.backend.name)
        log.info("code sandbox ready: backend=%s slots=%d", self.backend.name, self.slot_count)

    async def stop(self) -> None:
        await asyncio.gather(*(slot.kill() for slot in self._slots))
        for slot in self._slots:  # nothing runs as the slots' uids any more
            claim, slot.claim = slot.claim, None
            if claim is not None:
                claim.release()
        await self.backend.close()

    async def run(self, program: str, tests: list[TestInput], timeout_s: float | None = None,
                  memory_mb: int | None = None, *, float_tolerance: float | None = None,
                  compare: str = "whitespace", owner: object = None, language: str = "python",
                  compile_timeout_s: float | None = None) -> tuple[list[TestRun], str | None]:
        """Run `program` once per test, each in a fresh process. Returns one TestRun per test that
        reported, plus the reason when the sandbox itself failed (missing tests then never ran).
        Runs of different `owner`s (requests) take free slots in turn (see `FairQueue`).
        `compare`: how stdout is compared (see `_wire.stdout_matches`). A program in another
        `language` runs against stdin/stdout tests only; a compiled one's build comes first, as the
        TestRun with index -1 (no test runs when it failed). Raises UnknownLanguage, or
        LanguageUnavailable when this sandbox lacks the toolchain."""
        if self._free is None:
            raise RuntimeError("sandbox pool is not started")
        lang = self.language(language)
        if lang.name != "python" and any(t.code is not None or t.call is not None for t in tests):
            raise ValueError(f"a {lang.name} program runs against stdin/stdout tests only")
        timeout = timeout_s or self.limits.test_timeout_s
        memory = memory_mb if memory_mb and memory_mb > 0 else self.limits.memory_mb
        self._jobs += 1
        memory_bytes = min(memory, self.limits.memory_mb) << 20
        job = {
            "id": self._jobs,
            "program": program,
            "timeout": timeout,
            "memory_bytes": memory_bytes,
            "file_bytes": self.limits.file_mb << 20,
            "open_files": self.limits.open_files,
            "max_output": self.limits.max_output_bytes,
            "output_budget": self.limits.max_item_output_bytes,
            "excerpt": self.limits.excerpt_bytes,
            "tolerance": float_tolerance,
            "compare": compare,
        }
        # A test's limit is CPU time; it ends by its wall-clock backstop at the latest (`TestClock`).
        per_test = wall_backstop(timeout)
        if lang.name == "python" and any(t.code is not None or t.call is not None for t in tests):
            job["load_timeout"] = PROGRAM_LOAD_S
            per_test += wall_backstop(timeout + PROGRAM_LOAD_S)
        # The job's own deadline only catches a sandbox that stopped answering; a test that waited for a CPU may run
        # past its backstop (`TestClock` does not count the wait), so the deadline allows twice it.
        budget = len(tests) * (2 * per_test + 0.5) + 5.0
        if lang.name != "python":
            compile_timeout = min(compile_timeout_s or self.limits.compile_timeout_s, self.limits.compile_timeout_s)
            job.update(job_fields(lang, program, memory_bytes=memory_bytes, compile_timeout_s=compile_timeout,
                                  compile_memory_bytes=self.limits.compile_memory_mb << 20))
            budget += wall_backstop(compile_timeout) + 1.0 if lang.compiled else 0.0
        slot = await self._free.get(owner)
        try:
            runs, failure = await slot.run(job, [t.wire() for t in tests], budget)
            if failure is not None:
                self.restarts += 1
            return runs, failure
        finally:
            self._free.put(slot, owner)

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
            "slot_uids": [[slot.claim.uids.harness, slot.claim.uids.program] for slot in self._slots if slot.claim],
            "languages": sorted(name for name, missing in self.backend.languages().items() if not missing),
            **self.backend.describe(),
        }


def _checked_modules(names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    for name in names:
        if not _MODULE_NAME.fullmatch(name):
            raise SandboxUnavailable(f"sandbox.preload_modules: {name!r} is not a module name")
    return tuple(names)


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
