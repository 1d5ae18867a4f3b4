"""Wire-compatible routes so existing clients can point at olmorl unchanged:

- SandboxFusion `POST /run_code` (verl's sandbox_fusion reward) and `GET /v1/ping`;
- open-instruct `POST /test_program`, `POST /test_program_stdio` and `GET /health`.

All of them run in the same sandbox pool as the `code` verifiers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, HTTPException
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field

from olmorl.rewards.engine._registry import InvalidInput, register_routes
from olmorl.rewards.code._grading import grade
from olmorl.rewards.code._tests import TestSuite, parse_ground_truth
from olmorl.rewards.code._languages import compile_error, split_build
from olmorl.sandbox import LanguageUnavailable, SandboxPool, TestInput, TestRun, UnknownLanguage

if TYPE_CHECKING:
    from olmorl.rewards.engine._engine import RewardEngine


class RunCodeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    code: str
    language: str
    compile_timeout: float = 10.0
    run_timeout: float = 10.0
    memory_limit_MB: int = -1
    stdin: str | None = None
    files: dict[str, str | None] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)


class CommandResult(BaseModel):
    status: Literal["Finished", "Error", "TimeLimitExceeded"]
    execution_time: float | None = None
    return_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None


class RunCodeResponse(BaseModel):
    status: Literal["Success", "Failed", "SandboxError"]
    message: str = ""
    compile_result: CommandResult | None = None
    run_result: CommandResult | None = None
    executor_pod_name: str | None = None
    files: dict[str, str] = Field(default_factory=dict)


class TestProgramRequest(BaseModel):
    program: str
    tests: Any
    max_execution_time: float = Field(default=1.0, gt=0)


class TestProgramResponse(BaseModel):
    results: list[int]
    runtimes: list[float]


def _command_result(run: TestRun) -> CommandResult:
    """One step's outcome as SandboxFusion reports it; the exit status is what the zygote's `waitpid` saw."""
    status: Literal["Finished", "Error", "TimeLimitExceeded"]
    if run.timed_out:
        status, code = "TimeLimitExceeded", None
    else:
        status = "Finished"
        code = run.exit_code if run.exit_code is not None else -(run.signal or 9)
    return CommandResult(status=status, execution_time=run.runtime_s, return_code=code,
                         stdout=run.stdout, stderr=run.stderr)


def _pool(engine: RewardEngine) -> SandboxPool:
    verifier = engine.verifiers.get("code")
    pool = getattr(verifier, "pool", None)
    if pool is None:
        reason = getattr(verifier, "unavailable", None) or "the code verifier is not loaded"
        raise HTTPException(503, f"code sandbox unavailable: {reason}")
    return pool


@register_routes
def build_code_routes(engine: RewardEngine) -> APIRouter:
    router = APIRouter(tags=["compatibility"])
    max_timeout = engine.settings.sandbox.max_test_timeout_s

    @router.post("/run_code", response_model=RunCodeResponse)
    async def run_code(request: RunCodeRequest) -> RunCodeResponse:
        """SandboxFusion's run_code: python, c, cpp, java, nodejs, go, rust, bash (and their aliases).
        `files`/`fetch_files` are not supported."""
        if request.files or request.fetch_files:
            return RunCodeResponse(status="SandboxError", message="files/fetch_files are not supported")
        pool = _pool(engine)
        timeout = min(max(request.run_timeout, 0.01), max_timeout)
        memory = request.memory_limit_MB if request.memory_limit_MB > 0 else None
        try:
            lang = pool.language(request.language)
            runs, failure = await pool.run(request.code, [TestInput(stdin=request.stdin or "")], timeout, memory,
                                           owner=object(), language=lang.name,
                                           compile_timeout_s=max(request.compile_timeout, 0.01))
        except (UnknownLanguage, LanguageUnavailable) as exc:
            return RunCodeResponse(status="SandboxError", message=str(exc))
        build, runs = split_build(runs)
        compile_result = None if build is None else _command_result(build)
        if build is not None and compile_error(build, request.compile_timeout) is not None:
            return RunCodeResponse(status="Failed", message="compilation failed", compile_result=compile_result)
        if not runs:
            return RunCodeResponse(status="SandboxError", message=failure or "the sandbox returned nothing",
                                   compile_result=compile_result)
        result = _command_result(runs[0])
        ok = result.status == "Finished" and result.return_code == 0
        return RunCodeResponse(status="Success" if ok else "Failed", compile_result=compile_result, run_result=result)

    @router.get("/v1/ping", response_class=PlainTextResponse)
    async def ping() -> str:
        return "pong"

    async def _test_program(request: TestProgramRequest, stdio: bool) -> TestProgramResponse:
        try:
            suite: TestSuite = parse_ground_truth(request.tests, stdio_only=stdio)
        except InvalidInput as exc:
            raise HTTPException(400, str(exc)) from None
        if not stdio and suite.format != "asserts":
            raise HTTPException(400, "tests must be a list of assert statements (use /test_program_stdio "
                                     "for stdin/stdout pairs)")
        timeout = min(request.max_execution_time, max_timeout)
        runs, failure = await _pool(engine).run(request.program, [t.input for t in suite.tests], timeout,
                                                owner=object())
        by_index = {run.index: run for run in runs}
        records = [grade(t, by_index.get(i), failure) for i, t in enumerate(suite.tests)]
        results = [int(r["status"] == "passed") for r in records]
        runtimes = [r["runtime_s"] if ok and r["runtime_s"] is not None else -1.0 for r, ok in zip(records, results)]
        return TestProgramResponse(results=results, runtimes=runtimes)

    @router.post("/test_program", response_model=TestProgramResponse)
    async def test_program(request: TestProgramRequest) -> TestProgramResponse:
        """open-instruct's code API: `tests` are assert statements; results are 0/1 per test."""
        return await _test_program(request, stdio=False)

    @router.post("/test_program_stdio", response_model=TestProgramResponse)
    async def test_program_stdio(request: TestProgramRequest) -> TestProgramResponse:
        """open-instruct's stdio code API: `tests` are {input, output} pairs."""
        return await _test_program(request, stdio=True)

    @router.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "healthy"}

    return router
