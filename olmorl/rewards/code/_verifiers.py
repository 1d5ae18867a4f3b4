"""The `code` and `code_stdio` verifiers (open-instruct names): run the response's Python program
against the item's tests in the sandbox, reward the pass rate (or all-or-nothing / thresholded)."""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from olmorl.rewards.engine._registry import InvalidInput, ItemError, Score, Task, Verifier, current_request, register
from olmorl.rewards._settings import SandboxSettings, Settings
from olmorl.rewards.code._grading import Compare, grade, reward
from olmorl.rewards.code._languages import compile_details, compile_error, extract_source, split_build
from olmorl.rewards.code._tests import TestSuite, parse_ground_truth
from olmorl.sandbox import LanguageUnavailable, SandboxLimits, SandboxPool, SandboxUnavailable, UnknownLanguage
from olmorl.sandbox import language as sandbox_language

log = logging.getLogger("olmorl.rewards")
_MAX_DETAIL_TESTS = 100
_EXTRACT_IN_THREAD = 1 << 16  # longer responses are extracted off the event loop


def extract_program(response: str, language: str = "python") -> str:
    """The last fenced block in `language` (```python, ```cpp ...; or untagged) after removing <think>
    blocks; else the whole text."""
    return extract_source(response, sandbox_language(language))


class CodeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    scoring: Literal["pass_rate", "all", "threshold"] | None = Field(
        default=None, description="pass_rate (partial credit), all (1 only if every test passes), or "
                                  "threshold (pass rate, zeroed below `threshold`). Default from settings.")
    threshold: float | None = Field(default=None, ge=0.0, le=1.0, description="cut-off for `threshold` scoring")
    timeout_s: float | None = Field(default=None, gt=0.0, description="wall-clock limit per test")
    float_tolerance: float | None = Field(default=None, ge=0.0,
                                          description="compare numbers (and stdout number tokens) within this")
    memory_mb: int | None = Field(default=None, gt=0, description="lower the per-program memory ceiling")
    language: str = Field(default="python", description="the program's language: python, c, cpp, java, "
                                                        "javascript, go, rust or bash (others: stdio tests only)")
    compile_timeout_s: float | None = Field(default=None, gt=0.0,
                                            description="wall-clock limit of the one compile step")
    compare: Compare = Field(default="whitespace", description="stdout comparison: whitespace (trailing "
                                                               "whitespace and blank lines ignored), tokens "
                                                               "(any whitespace run equal), or exact")


_GROUND_TRUTH = (
    str | list[str] | list[dict[str, Any]] | dict[str, Any]
)


class _Pools:
    """One sandbox pool per server, shared by both verifiers (reference-counted)."""

    def __init__(self) -> None:
        self.pool: SandboxPool | None = None
        self.users = 0
        self.lock = asyncio.Lock()

    async def acquire(self, settings: SandboxSettings) -> SandboxPool:
        async with self.lock:
            if self.pool is None:
                pool = make_pool(settings)
                await pool.start()
                self.pool = pool
            self.users += 1
            return self.pool

    async def release(self) -> None:
        async with self.lock:
            self.users -= 1
            if self.users <= 0 and self.pool is not None:
                await self.pool.stop()
                self.pool, self.users = None, 0


DOCKER_RUN_FLAGS = "--security-opt seccomp=unconfined --security-opt systempaths=unconfined"


def container_hint() -> str:
    """Inside a container, the `docker run` flags that let bubblewrap create its namespaces."""
    in_container = os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv") or "container" in os.environ
    return (f". In a container, start it with `docker run {DOCKER_RUN_FLAGS} ...` so bubblewrap can create its "
            "namespaces") if in_container else ""


def make_pool(settings: SandboxSettings) -> SandboxPool:
    limits = SandboxLimits(
        test_timeout_s=settings.test_timeout_s, memory_mb=settings.memory_mb,
        max_processes=settings.max_processes, max_output_bytes=settings.max_output_bytes,
        scratch_mb=settings.scratch_mb, slots_per_owner=settings.slots_per_request,
        compile_timeout_s=settings.compile_timeout_s, compile_memory_mb=settings.compile_memory_mb,
    )
    return SandboxPool(settings.backend, allow_insecure=settings.allow_insecure,
                       slots=settings.parallelism, limits=limits, python=settings.python,
                       docker_image=settings.docker_image, docker_runtime=settings.docker_runtime,
                       site_dirs=tuple(settings.site_dirs), preload=tuple(settings.preload_modules))


_shared: dict[int, _Pools] = {}


class SandboxVerifier(Verifier):
    """A verifier that runs programs in the server's one sandbox pool (shared by every such verifier): it
    starts and stops with the server, and reports the pool in /readyz."""

    runs_in = "loop"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.pool: SandboxPool | None = None
        self.unavailable: str | None = None
        self._pools = _shared.setdefault(id(settings), _Pools())

    async def start(self) -> None:
        # A host without a usable sandbox still serves every other verifier; code items then get
        # status `error` naming the reason, and /readyz shows it.
        try:
            self.pool = await self._pools.acquire(self.settings.sandbox)
        except SandboxUnavailable as exc:
            self.unavailable = str(exc) + container_hint()
            log.error("code verifiers disabled: %s", self.unavailable)

    async def stop(self) -> None:
        if self.pool is not None:
            self.pool = None
            await self._pools.release()

    def readiness(self) -> dict[str, Any] | None:
        if self.pool is not None:
            return {"ready": True, **self.pool.readiness()}
        return {"ready": False, "started": False, "unavailable": self.unavailable}

    def notes(self) -> list[str]:
        sandbox = self.settings.sandbox
        if self.pool is not None and self.pool.insecure or (self.pool is None and sandbox.backend == "process"):
            return ["INSECURE sandbox backend 'process': programs run with rlimits only (no namespaces, "
                    "no seccomp). Enabled by sandbox.allow_insecure; use only for trusted code."]
        return []

    def unavailable_error(self) -> ItemError:
        return ItemError("error", f"code sandbox unavailable: {self.unavailable or 'not started'}",
                         {"reason": "sandbox_unavailable"})

    def deadline_s(self, task: Task) -> None:
        # The sandbox pool bounds each run from the moment a slot is free (per-test limits plus a
        # run budget), so an item queued behind others is never cut short for waiting.
        return None


class _CodeVerifierBase(SandboxVerifier):
    ground_truth_type = _GROUND_TRUTH
    options_model = CodeOptions
    stdio_only = False

    def _timeout(self, task: Task) -> float:
        asked = task.options.timeout_s or self.settings.sandbox.test_timeout_s
        return min(asked, self.settings.sandbox.max_test_timeout_s)

    def make_task(self, response: str, ground_truth: Any, options: dict[str, Any], prompt: Any) -> Task:
        task = super().make_task(response, ground_truth, options, prompt)
        opts: CodeOptions = task.options
        try:
            lang = sandbox_language(opts.language)
        except UnknownLanguage as exc:
            raise InvalidInput(f"options.language: {exc}") from None
        suite = parse_ground_truth(task.ground_truth, stdio_only=self.stdio_only or lang.name != "python")
        return Task(response=task.response, ground_truth=suite, options=task.options, prompt=task.prompt)

    async def score_async(self, task: Task) -> Score:
        if self.pool is None:
            raise self.unavailable_error()
        suite: TestSuite = task.ground_truth
        opts: CodeOptions = task.options
        lang = sandbox_language(opts.language)
        if len(task.response) > _EXTRACT_IN_THREAD:
            program = await asyncio.to_thread(extract_source, task.response, lang)
        else:
            program = extract_source(task.response, lang)
        try:
            runs, failure = await self.pool.run(program, [t.input for t in suite.tests], self._timeout(task),
                                                opts.memory_mb, float_tolerance=opts.float_tolerance,
                                                compare=opts.compare, owner=current_request.get(),
                                                language=lang.name, compile_timeout_s=opts.compile_timeout_s)
        except LanguageUnavailable as exc:
            raise ItemError("error", str(exc), {"reason": "language_unavailable", "language": lang.name}) from None
        in_sandbox_s = sum(run.runtime_s for run in runs)  # its time, not the time it waited for a slot
        build, runs = split_build(runs)
        compile_timeout = min(opts.compile_timeout_s or self.settings.sandbox.compile_timeout_s,
                              self.settings.sandbox.compile_timeout_s)
        error = compile_error(build, compile_timeout)
        by_index = {run.index: run for run in runs}
        records = [grade(test, by_index.get(i), failure if error is None else "not run: the program did not compile")
                   for i, test in enumerate(suite.tests)]
        statuses = [r["status"] for r in records]
        scoring = opts.scoring or self.settings.sandbox.scoring
        threshold = opts.threshold if opts.threshold is not None else self.settings.sandbox.pass_threshold
        passed = statuses.count("passed")
        details: dict[str, Any] = {
            "format": suite.format,
            "passed": passed,
            "total": len(statuses),
            "pass_rate": passed / len(statuses) if statuses else 0.0,
            "scoring": scoring,
            "counts": {s: statuses.count(s) for s in ("passed", "failed", "error", "timeout") if s in statuses},
            "tests": [dict(r, test=t.label) for r, t in zip(records[:_MAX_DETAIL_TESTS], suite.tests)],
            "backend": self.pool.backend.name,
            "language": lang.name,
            **compile_details(build, error),
        }
        if failure:
            details["sandbox"] = failure
        tamper = Counter(kind for run in runs for kind in run.tamper)
        if tamper:  # the program probed the sandbox's boundary (counted in /metrics too)
            details["tamper"] = dict(tamper)
        if error is not None:  # the program's fault: status ok, reward 0, and no test ran
            details["counts"] = {"not_run": len(statuses)}
            return Score(0.0, details, elapsed_s=in_sandbox_s)
        return Score(reward(statuses, scoring, threshold), details, elapsed_s=in_sandbox_s)


@register
class CodeVerifier(_CodeVerifierBase):
    name = "code"
    description = ("Runs the response's Python program (last ```python block) against assert strings, "
                   "stdin/stdout pairs, {fn_name, inputs, outputs} or a HumanEval check(candidate), in a "
                   "sandbox; reward = pass rate (or all / threshold). Option `language` runs C, C++, Java, "
                   "JavaScript, Go, Rust or bash programs against stdin/stdout pairs.")


@register
class CodeStdioVerifier(_CodeVerifierBase):
    name = "code_stdio"
    stdio_only = True
    description = "Runs the response's program (option `language`: python, c, cpp, java, javascript, go, " \
                  "rust, bash; compiled once) on each stdin and compares its stdout (trailing whitespace " \
                  "normalized, or tokens / exact; optional float tolerance), in a sandbox."

