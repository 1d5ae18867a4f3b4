"""`swe`: one software-engineering task, one container. The agent edits a repository through tools
(bash, read_file, write_file, str_replace, run_tests, submit), which run as an unprivileged uid; verify
applies the agent's change to a fresh container of the task's image and runs the hidden tests there
(`_verify`); the reward is pass/fail or the fraction of FAIL_TO_PASS fixed (option `reward`)."""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from olmorl.rewards.engine._registry import InvalidInput, Score, register
from olmorl.rewards.environments.swe._tasks import HARBOR_LOGS_DIR, HARBOR_TESTS_DIR, TaskSpec, load_task, resolve
from olmorl.rewards.environments.swe._verify import RewardMode, verify_task
from olmorl.rewards.environments.swe._warm import ContainerSpec, WarmContainers, start_container
from olmorl.rewards.sessions._environment import Environment, Step, Tool
from olmorl.sandbox._containers import AGENT_USER, ROOT_USER, ContainerLimits, ExecResult, TaskContainer
from olmorl.sandbox._task_images import ensure_image, image_workdir

log = logging.getLogger("olmorl.rewards")
MAX_EDIT_BYTES = 4 << 20  # str_replace reads the whole file


class SweTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="The task directory, relative to the server's swe.task_root (olmorl swe.toml "
                                  "or Harbor task.toml layout).")


class SweOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reward: RewardMode = Field(default="pass_fail", description="pass_fail: 1 when every FAIL_TO_PASS and "
                               "PASS_TO_PASS test passes; fraction: the share of FAIL_TO_PASS passing, 0 if any "
                               "PASS_TO_PASS fails. Tasks with a test command score their command either way.")


class Bash(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(description="A bash command line, run in the repository's container (no network). "
                                     "The working directory carries over between calls; variables do not.")
    # plain types, no null: verl's tool schema needs a `type` on every property
    timeout_s: float = Field(default=0, ge=0, description="Seconds before it is stopped; 0: the server's limit "
                                                          "(which also caps it).")


class ReadFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="File to read, relative to the repository root or absolute.")
    start_line: int = Field(default=1, ge=1, description="First line to show (1-based).")
    end_line: int = Field(default=0, ge=0, description="Last line to show (inclusive); 0: the end of the file.")


class WriteFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="File to create or overwrite, relative to the repository root or absolute.")
    content: str = Field(description="The whole new content of the file.")


class StrReplace(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="File to edit, relative to the repository root or absolute.")
    old_str: str = Field(min_length=1, description="Text to replace; it must occur exactly once in the file.")
    new_str: str = Field(description="The replacement text.")


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _shown(run: ExecResult) -> str:
    text = run.stdout + (run.stderr if not run.stderr or run.stderr.endswith("\n") else run.stderr + "\n")
    if not run.exit_code or run.timed_out:
        return text
    oom = " (out of memory: the container's memory limit killed a process)" if run.oom_kills else ""
    return text + f"[exit code {run.exit_code}{oom}]\n"


@register
class SweEnvironment(Environment):
    name = "swe"
    description = ("A software-engineering task: edit a repository in its own container (no network, CPU/memory/"
                   "pids/disk limits) until the hidden tests pass; verify runs them.")
    task_type = SweTask
    options_model = SweOptions
    tools = (
        Tool("bash", "Run a bash command in the repository's container and return its output and exit code.", Bash),
        Tool("read_file", "Read a text file (optionally a range of lines).", ReadFile),
        Tool("write_file", "Create or overwrite a file with the given content.", WriteFile),
        Tool("str_replace", "Replace the one occurrence of old_str in a file with new_str.", StrReplace),
        Tool("run_tests", "Run the task's visible tests and return their output.", NoArguments),
        Tool("submit", "Say the work is done; no more tool calls are taken after it.", NoArguments),
    )
    sandboxed = True  # each session holds a container: counted against sessions.max_sandboxed

    container: TaskContainer | None = None
    verdict: asyncio.Future[TaskContainer] | None = None  # the fresh container verify runs the hidden tests in
    spec: TaskSpec | None = None
    container_spec: ContainerSpec | None = None
    cwd: str = ""
    submitted = False
    warm: WarmContainers | None = None  # the server's warm containers (one server per process)

    @classmethod
    async def on_server_start(cls, settings: Any, metrics: Any) -> None:
        """Remove the task containers of a server that crashed (it cannot have closed them); keep containers
        warm when `swe.warm_containers` asks for it."""
        if not settings.swe.task_root:
            return
        cfg = settings.swe
        cls.warm = WarmContainers(cfg.warm_containers, cfg.warm_tasks, cfg.warm_max_starting, metrics)
        from olmorl.sandbox._containers import sweep_task_containers

        try:
            removed = await asyncio.to_thread(sweep_task_containers)
        except Exception as exc:  # no engine now: sessions will say so when opened
            log.warning("could not look for task containers left by a crashed server: %s", exc)
            return
        if removed:
            log.warning("removed %d swe task container(s) left by a server that did not stop cleanly", removed)

    async def setup(self) -> str | None:
        cfg = self.services.settings.swe
        path = resolve(cfg.task_root, self.task.path)
        self.spec = spec = await asyncio.to_thread(load_task, path, cfg.base_image)
        tag = await asyncio.to_thread(ensure_image, spec.recipe, cfg.build_timeout_s)
        workdir = spec.recipe.workdir or ""
        if not workdir:  # a Harbor task: where its Dockerfile put the repository
            workdir = await asyncio.to_thread(image_workdir, tag)
        limits = ContainerLimits(cpus=min(spec.cpus or cfg.cpus, cfg.cpus),
                                 memory_mb=min(spec.memory_mb or cfg.memory_mb, cfg.memory_mb), pids=cfg.pids,
                                 disk_mb=min(spec.disk_mb or cfg.disk_mb, cfg.disk_mb), runtime=cfg.runtime)
        scratch = (HARBOR_TESTS_DIR, HARBOR_LOGS_DIR.rsplit("/", 1)[0]) if spec.layout == "harbor" else ()
        self.container_spec = ContainerSpec(tag, limits, workdir, tuple(scratch))
        warm = type(self).warm or WarmContainers(0, 1, 1)
        self.container = await warm.open(self.container_spec)
        self.cwd = workdir
        self._marker = f"__olmorl_cwd_{secrets.token_hex(8)}__"
        return spec.instruction

    def _live(self) -> TaskContainer:
        if self.container is None:
            raise RuntimeError("the session's container is gone")
        return self.container

    async def step(self, tool: str, arguments: Any) -> Step:
        if self.submitted:
            return Step("", "invalid", "the work was submitted; call verify", done=True)
        limit = self.services.settings.sessions.max_output_chars
        if tool == "bash":
            return await self._bash(arguments.command, arguments.timeout_s, limit)
        if tool == "read_file":
            return await self._read(arguments, limit)
        if tool == "write_file":
            await self._write(arguments.path, arguments.content.encode())
            return Step(f"wrote {len(arguments.content)} characters to {arguments.path}\n")
        if tool == "str_replace":
            return await self._replace(arguments)
        if tool == "run_tests":
            assert self.spec is not None
            if self.spec.visible_test_command is None:
                raise InvalidInput("this task has no visible tests")
            return await self._bash(self.spec.visible_test_command, 0, limit, keep_cwd=False)
        self.submitted = True  # submit
        return Step("submitted; the episode is over: call verify\n", done=True)

    async def _bash(self, command: str, timeout_s: float, limit: int, keep_cwd: bool = True) -> Step:
        cap = self.services.settings.swe.bash_timeout_s
        timeout_s = min(timeout_s or cap, cap)
        container = self._live()
        # cd to the kept directory, run the command in this shell (so its `cd` counts), print where it ended
        script = 'cd "$1" 2>/dev/null || cd "$2"; trap \'printf "\\n%s%s\\n" "$3" "$PWD"\' EXIT; eval "$4"'
        start = self.cwd if keep_cwd else container.workdir
        run = await container.exec(["bash", "-c", script, "bash", start, container.workdir, self._marker, command],
                                   timeout_s=timeout_s, max_output=limit, user=AGENT_USER)
        head, found, where = run.stdout.rpartition("\n" + self._marker)
        stdout = run.stdout
        if found:
            stdout, self.cwd = head, (where.strip() or self.cwd) if keep_cwd else self.cwd
        shown = _shown(replace(run, stdout=stdout))
        if run.timed_out:
            return Step(shown, "timeout", f"the command ran past {timeout_s:g} s and was stopped")
        return Step(shown)

    async def _read(self, arguments: ReadFile, limit: int) -> Step:
        run = await self._live().exec(["cat", "--", arguments.path], timeout_s=10, max_output=MAX_EDIT_BYTES,
                                      user=AGENT_USER)
        if run.exit_code != 0:
            return Step("", "error", run.stderr.strip() or f"cat exited {run.exit_code}")
        lines = run.stdout.splitlines(keepends=True)
        return Step("".join(lines[arguments.start_line - 1:arguments.end_line or None]))

    async def _write(self, path: str, data: bytes) -> None:
        script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
        run = await self._live().exec(["sh", "-c", script, "sh", path], timeout_s=10, stdin=data, user=AGENT_USER)
        if run.exit_code != 0:
            raise InvalidInput(f"could not write {path}: {run.stderr.strip()}")

    async def _replace(self, arguments: StrReplace) -> Step:
        run = await self._live().exec(["cat", "--", arguments.path], timeout_s=10, max_output=MAX_EDIT_BYTES,
                                      user=AGENT_USER)
        if run.exit_code != 0:
            return Step("", "error", run.stderr.strip() or f"cat exited {run.exit_code}")
        if "bytes truncated]" in run.stdout or "\ufffd" in run.stdout:
            raise InvalidInput(f"{arguments.path} is over {MAX_EDIT_BYTES >> 20} MiB or not UTF-8 text: use bash")
        count = run.stdout.count(arguments.old_str)
        if count != 1:
            raise InvalidInput(f"old_str occurs {count} times in {arguments.path}; it must occur exactly once "
                               "(include more surrounding lines)")
        await self._write(arguments.path, run.stdout.replace(arguments.old_str, arguments.new_str).encode())
        return Step(f"replaced 1 occurrence in {arguments.path}\n")

    async def verify(self, response: str, messages: list[Any] | None) -> Score:
        assert self.spec is not None
        cfg = self.services.settings
        timeout_s = min(self.spec.verify_timeout_s or cfg.swe.verify_timeout_s, cfg.swe.verify_timeout_s,
                        cfg.sessions.call_timeout_s - 5)  # leave time to read the results
        mode: Literal["pass_fail", "fraction"] = self.options.reward
        assert self.container_spec is not None
        # started now, while the agent's change is read; not from the warm pool, whose refill would then compete
        # with the hidden tests for CPU (measured: docs/environments-swe.md, "What verify costs")
        # its repository is root's: the hidden tests' uid may read it, not change it
        self.verdict = asyncio.ensure_future(start_container(self.container_spec, owner=ROOT_USER))
        return await verify_task(self._live(), self.verdict, self.spec, self.container_spec.image, mode,
                                 max(timeout_s, 1.0), (cfg.swe.disk_mb + 64) << 20)

    @classmethod
    async def on_server_stop(cls) -> None:
        warm, cls.warm = cls.warm, None
        if warm is not None:
            await warm.close()

    async def close(self) -> None:
        container, self.container = self.container, None
        if container is not None:
            await container.close()
        verdict, self.verdict = self.verdict, None
        if verdict is not None:
            verdict.cancel()  # a start cancelled midway removes what it made (`start_task_container`)
            await asyncio.wait([verdict])
            if not verdict.cancelled() and verdict.exception() is None:
                await verdict.result().close()
