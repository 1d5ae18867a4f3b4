"""Server settings: one object, from CLI flags and OLMORL_* environment variables.

Verifier families with settings of their own (judge, sandbox) get a nested section with its own
prefix, so `OLMORL_JUDGE_BASE_URL` fills `settings.judge.base_url`.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from olmorl.rewards._token_count import tokenizer_file


class JudgeSettings(BaseSettings):
    """LM-judge endpoints (any OpenAI-compatible server). Items can never pick the URL or model."""

    model_config = SettingsConfigDict(env_prefix="OLMORL_JUDGE_", extra="ignore", env_parse_none_str="none")

    base_url: str | None = None  # one URL, or several separated by commas (load-balanced)
    model: str | None = None  # model name sent to the endpoint
    api_key: str | None = None  # bearer token for the endpoint
    temperature: float | None = 0.0  # sampling temperature of the judge; None: not sent (o-series judges)
    max_tokens: int = 1024  # completion budget of the judge
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"  # hosted reasoning judges want max_completion_tokens
    requests_per_minute: float | None = None  # per endpoint; None: unlimited
    tokens_per_minute: float | None = None  # per endpoint (prompt estimate + max_tokens, settled by usage); None: unlimited
    concurrency: int = 32  # judge calls in flight at once, over all endpoints
    timeout_s: float = 60.0  # per-call timeout
    max_retries: int = 4  # retries on 429/5xx/timeouts/connection errors
    score_min: int = 1  # judge scale, mapped to reward 0
    score_max: int = 10  # judge scale, mapped to reward 1
    reward_mapping: Literal["scaled", "over_max"] = "scaled"  # scaled: (score-min)/(max-min); over_max: score/max (open-instruct's ÷10)
    max_input_chars: int = 24_000  # longer question/response/reference are truncated (documented rule)
    cache_size: int = 100_000  # in-memory cache entries
    cache_path: str | None = None  # optional SQLite file for a persistent cache
    retry_backoff_s: float = 0.5  # first retry delay; doubles per retry, with jitter
    retry_backoff_max_s: float = 60.0  # cap on one retry delay, a server's Retry-After included
    health_interval_s: float = 15.0  # how often /readyz's judge state is refreshed (GET /models)
    item_deadline_s: float = 1800.0  # hard limit per judge item, queueing and retries included


class SandboxSettings(BaseSettings):
    """Isolation for model-written code."""

    model_config = SettingsConfigDict(env_prefix="OLMORL_SANDBOX_", extra="ignore", env_parse_none_str="none")

    backend: Literal["auto", "bwrap", "docker", "process"] = "auto"  # auto: bwrap if usable, else refuse
    allow_insecure: bool = False  # permit the rlimits-only `process` backend
    test_timeout_s: float = 1.0  # CPU-time limit per test (a wall-clock backstop at 3x + 1 s)
    memory_mb: int = 512  # address-space / cgroup memory ceiling per program
    max_processes: int = 64  # processes + threads per program
    max_output_bytes: int = 1 << 20  # stdout/stderr kept per test; the rest is discarded
    parallelism: int = Field(default_factory=lambda: os.cpu_count() or 1)  # programs run at once
    pass_threshold: float = 0.0  # default `threshold` scoring cut-off (Olmo 3 used 0.99)
    scoring: Literal["pass_rate", "all", "threshold"] = "pass_rate"  # default scoring mode of code items
    python: str | None = None  # interpreter run inside the sandbox; default Debian's /usr/bin/python3
    scratch_mb: int = 64  # size of the sandbox's writable /tmp (tmpfs)
    max_test_timeout_s: float = 30.0  # ceiling on an item's `timeout_s` option
    slots_per_request: int = 0  # sandbox slots one request may hold at once (0: all); turns are fair either way
    docker_image: str = "olmorl-base:bookworm"  # image of the docker backend (scripts/build-base-image.sh)
    docker_runtime: str | None = None  # OCI runtime of those containers, e.g. `runsc` (gVisor) for a paranoid mode
    compile_timeout_s: float = 20.0  # CPU-time limit of a compiled program's one build step, as a test's (and ceiling of the option)
    compile_memory_mb: int = 1024  # memory ceiling of that build step (compilers need more than programs)
    site_dirs: list[str] = Field(default_factory=list)  # extra read-only Python package dirs on the sandbox's sys.path
    # modules each slot imports once, so programs start with them loaded (e.g. ["numpy", "sympy"]: a sympy
    # import then costs ~10 ms instead of ~0.5 s, a slot ~50 MB more; docs/sandbox.md measures both)
    preload_modules: list[str] = Field(default_factory=list)


class SqlSettings(BaseSettings):
    """Text-to-SQL (`sql` verifier): where named databases live and how long a query may run."""

    model_config = SettingsConfigDict(env_prefix="OLMORL_SQL_", extra="ignore", env_parse_none_str="none")

    data_dir: str | None = None  # directory of SQLite files that items name in ground_truth.database; unset: none
    query_timeout_s: float = Field(default=5.0, gt=0)  # wall-clock limit of each query (reference, candidate)
    max_rows: int = Field(default=10_000, ge=1)  # a query returning more rows is an error for that query
    max_database_mb: int = Field(default=32, ge=1)  # a larger database file is refused (it travels to the sandbox on stdin)


class SweSettings(BaseSettings):
    """The `swe` environment: one container per session, built from a task directory (docs/environments-swe.md)."""

    model_config = SettingsConfigDict(env_prefix="OLMORL_SWE_", extra="ignore", env_parse_none_str="none")

    task_root: str | None = None  # directory of task dirs that sessions name by relative path; unset: swe sessions are refused
    base_image: str = "olmorl-base:bookworm"  # image a task without a Dockerfile starts from (scripts/build-base-image.sh)
    runtime: str | None = None  # OCI runtime of task containers, e.g. `runsc` (gVisor)
    cpus: float = Field(default=1.0, gt=0)  # CPUs per task container (a task's own request is capped by this)
    memory_mb: int = Field(default=2048, ge=64)  # memory of a task container's processes (the tmpfs disk comes on top)
    pids: int = Field(default=256, ge=16)  # processes + threads per task container
    disk_mb: int = Field(default=1024, ge=16)  # writable workdir of a task container (tmpfs: the root is read-only)
    bash_timeout_s: float = Field(default=20.0, gt=0)  # wall-clock limit of one bash / run_tests call
    verify_timeout_s: float = Field(default=120.0, gt=0)  # wall-clock limit of the hidden tests (also capped by sessions.call_timeout_s)
    build_timeout_s: float = Field(default=600.0, gt=0)  # limit of one image build (builds are cached by content hash)
    warm_containers: int = Field(default=0, ge=0)  # containers kept started per recently opened task (0: none); each holds the task's workdir copy
    warm_tasks: int = Field(default=8, ge=1)  # tasks kept warm at once; opening another lets the least recent one's containers go
    warm_max_starting: int = Field(default=2, ge=1)  # warm containers starting at once in the background


class SessionSettings(BaseSettings):
    """Stateful tool sessions (`/v1/sessions`)."""

    model_config = SettingsConfigDict(env_prefix="OLMORL_SESSIONS_", extra="ignore", env_parse_none_str="none")

    max_sessions: int = 1024  # open sessions at once; past it POST /v1/sessions gets 503 + Retry-After
    max_sandboxed: int = 64  # open sessions that hold a sandboxed interpreter (a process each)
    idle_ttl_s: float = 600.0  # a session unused this long is closed; later calls get 404 "expired"
    call_timeout_s: float = 30.0  # wall-clock limit of one tool call (setup and verify included)
    memory_mb: int = 512  # memory ceiling of one session's sandbox (address space; cgroup as root)
    cpu_s: int = 120  # CPU seconds one session's sandbox may use in all; past it the interpreter is killed
    max_processes: int = 16  # processes + threads of one session's sandbox
    max_output_chars: int = 8192  # tool output kept per call; the rest is cut with a marker
    max_calls: int = 256  # tool calls per session; later ones are `invalid`
    # replies of open/tool/verify/close calls kept by Idempotency-Key (newest, all sessions): a client's retry of a
    # call whose reply it lost gets the kept reply instead of running the call again; 0: not kept
    idempotent_replies: int = Field(default=4096, ge=0)
    retry_after_s: int = 1  # Retry-After of the 503 sent when max_sessions is reached
    state_dir: str | None = None  # records of live sandboxes, swept at start; default <tmp>/olmorl-sessions
    # Idle sessions (no call running) may hold this much measured memory in all; past it the longest idle
    # are closed (later calls get 404 "evicted"). None: idle_memory_fraction of the machine's memory.
    idle_memory_mb: int | None = Field(default=None, ge=1)
    idle_memory_fraction: float = Field(default=0.25, gt=0, le=1)  # of MemTotal, or of the server's cgroup limit if lower
    reap_interval_s: float = Field(default=5.0, gt=0)  # how often sessions are checked for the TTL and the memory budget
    # Python interpreters started ahead of demand, so opening a python session takes one ready (0: none, each
    # session starts its own). Each waits in its own sandbox (an idle interpreter and its waiter, about 6.2 MiB PSS) with its own slot.
    warm_interpreters: int = Field(default=2, ge=0)
    warm_max_starting: int = Field(default=1, ge=1)  # warm interpreters started at once in the background


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="OLMORL_", extra="ignore")

    host: str = "127.0.0.1"  # bind address; the container sets 0.0.0.0
    port: int = 8000  # bind port
    api_key: str | None = None  # if set, every /v1 route needs `Authorization: Bearer <key>`
    allow_unauthenticated_remote: bool = False  # serve on a non-loopback host with no api_key (it runs code)
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1)  # verification worker processes
    item_timeout_s: float = 5.0  # hard wall-clock limit per pool item; the worker is killed past it
    worker_memory_mb: int = 2048  # address-space ceiling of each worker process
    worker_max_tasks: int = 500  # recycle a worker after this many chunks of items (bounds leaks)
    chunk_target_s: float = 0.025  # pool items travel in chunks of about this much measured work
    chunk_max_items: int = 256  # and of at most this many items
    worker_nice: int = 5  # workers' niceness, so the event loop (health checks, I/O verifiers) wins the CPU
    max_items_per_request: int = 4096  # larger batches get 413
    keep_alive_s: int = Field(default=75, ge=1)  # idle HTTP connections stay open this long: a trainer's next step reuses them
    max_body_bytes: int = 64 * 1024 * 1024  # larger request bodies get 413, on every route (chunked ones too)
    max_json_depth: int = Field(default=100, ge=1, le=500)  # JSON bodies nesting deeper get 422, on every route
    max_response_chars: int = 1_000_000  # longer responses are `invalid` (protects the workers)
    max_ground_truth_chars: int = 4_000_000  # larger ground truths (as JSON text) are `invalid`; code tests run to MBs
    # the policy's Hugging Face tokenizer (its tokenizer.json, or the directory holding it): /openrlhf/get_reward
    # counts each completion's tokens with it for the overlong and length verifiers (OpenRLHF sends text); unset: no counts;
    # needs the `tokenizer` extra (pip install 'olmorl[server,tokenizer]')
    tokenizer: str | None = None
    math_judge_fallback: bool = False  # default of the math verifiers' `judge_fallback` option (the LM judge decides a symbolic 0)
    plugins: list[str] = Field(default_factory=list)  # extra modules that register verifiers
    log_level: str = "info"  # uvicorn/olmorl log level
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    sessions: SessionSettings = Field(default_factory=SessionSettings)
    sql: SqlSettings = Field(default_factory=SqlSettings)
    swe: SweSettings = Field(default_factory=SweSettings)

    @field_validator("tokenizer")
    @classmethod
    def _tokenizer_exists(cls, value: str | None) -> str | None:
        if value is not None:  # a wrong path fails at start-up, not as every sample's `invalid`
            tokenizer_file(value)
        return value

    def summary(self) -> dict[str, object]:
        """The resolved settings with secrets masked, for the start-up log."""
        data = self.model_dump()
        for section in (data, data["judge"]):
            if section.get("api_key"):
                section["api_key"] = "***"
        return data
