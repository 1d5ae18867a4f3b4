"""Task directories of the `swe` environment: olmorl's own layout (`swe.toml`) and Harbor's (`task.toml`),
both loaded into one `TaskSpec`.

olmorl layout (docs/environments-swe.md):

    swe.toml          workdir, setup commands, the hidden tests' FAIL_TO_PASS / PASS_TO_PASS ids or command
    instruction.md    what the agent is asked
    repo/ | repo.tar.gz   the repository snapshot, copied to the working directory
    environment/Dockerfile   optional: the image recipe (its build context is environment/)
    hidden/           hidden test files, laid over the working directory at verify time only

Harbor layout: task.toml, instruction.md, environment/Dockerfile (the repository is whatever the
Dockerfile puts in its WORKDIR), tests/ (copied to /tests at verify time; `bash /tests/test.sh` writes
the reward to /logs/verifier/reward.txt or reward.json), solution/ (never used).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from olmorl.rewards.engine._registry import InvalidInput
from olmorl.rewards.environments.swe._writable import FIND_CHECK
from olmorl.sandbox._task_images import ARCHIVES, ImageRecipe

HARBOR_TESTS_DIR = "/tests"
HARBOR_LOGS_DIR = "/logs/verifier"
MAX_TEST_FILES_BYTES = 16 << 20  # hidden tests travel into the container at each verify
MAX_TEST_SH_BYTES = 120 << 10  # one argument of an exec (the kernel's limit: 128 KiB)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_USER = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}|[0-9]{1,10}")  # a user name or uid, as `docker exec -u` takes it


@dataclass(frozen=True)
class TaskSpec:
    name: str
    layout: Literal["olmorl", "harbor"]
    instruction: str
    recipe: ImageRecipe
    hidden_files: dict[str, bytes]  # relative path -> content, written under `hidden_dest` at verify
    hidden_dest: str | None  # None: the working directory
    framework: Literal["unittest", "pytest"] = "unittest"  # what the test ids are
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()
    test_command: str | None = None  # run instead of test ids: exit 0 passes (Harbor: the reward file decides)
    visible_test_command: str | None = None  # what `run_tests` runs; None: the task has no visible tests
    verify_timeout_s: float | None = None  # the task's own limit (Harbor [verifier] timeout_sec)
    verifier_user: str | None = None  # Harbor [verifier] user: test.sh runs as it (None: root, Harbor's default)
    verifier_env: tuple[tuple[str, str], ...] = ()  # Harbor [verifier] env: test.sh's variables, as written
    cpus: float | None = None  # the task's own requests (Harbor [environment]); the server caps them
    memory_mb: int | None = None
    disk_mb: int | None = None


def resolve(task_root: str | None, relative: str) -> Path:
    """The task directory `relative` names under `task_root`; never a path outside it."""
    if not task_root:
        raise InvalidInput("this server serves no swe tasks: set swe.task_root (OLMORL_SWE_TASK_ROOT)")
    root = Path(task_root).resolve()
    path = (root / relative).resolve()
    if not path.is_relative_to(root) or path == root:
        raise InvalidInput(f"task path {relative!r} is not a directory under the server's swe.task_root")
    if not path.is_dir():
        raise InvalidInput(f"no task directory {relative!r} under the server's swe.task_root")
    return path


def load_task(path: Path, base_image: str) -> TaskSpec:
    """Load a task directory of either layout; InvalidInput names what is wrong with it."""
    if (path / "swe.toml").is_file():
        return _load_olmorl(path, base_image)
    if (path / "task.toml").is_file():
        return _load_harbor(path)
    raise InvalidInput(f"task {path.name!r} has neither swe.toml (olmorl layout) nor task.toml (Harbor layout)")


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path.parent.name}/{path.name}: {exc}") from None


def _instruction(path: Path) -> str:
    file = path / "instruction.md"
    if not file.is_file():
        raise InvalidInput(f"task {path.name!r} has no instruction.md")
    return file.read_text().strip()


def _hidden_files(tests: Path) -> dict[str, bytes]:
    files = {p.relative_to(tests).as_posix(): p.read_bytes() for p in sorted(tests.rglob("*")) if p.is_file()}
    if sum(map(len, files.values())) > MAX_TEST_FILES_BYTES:
        raise InvalidInput(f"the hidden tests of {tests.parent.name!r} exceed {MAX_TEST_FILES_BYTES >> 20} MiB")
    return files


def _strings(section: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = section.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"{where}: `{key}` must be a list of strings")
    return tuple(value)


def _dockerfile(path: Path) -> tuple[str | None, Path | None]:
    environment = path / "environment"
    if (environment / "Dockerfile").is_file():
        return (environment / "Dockerfile").read_text(), environment
    if (environment / "docker-compose.yaml").is_file() or (environment / "docker-compose.yml").is_file():
        raise InvalidInput(f"task {path.name!r} defines its environment with docker-compose, which the swe "
                           "environment does not run (one container per session)")
    return None, None


def _load_olmorl(path: Path, base_image: str) -> TaskSpec:
    config = _toml(path / "swe.toml")
    where = f"{path.name}/swe.toml"
    tests = config.get("tests") or {}
    if not isinstance(tests, dict):
        raise InvalidInput(f"{where}: [tests] must be a table")
    repo = next((path / name for name in ("repo", *(f"repo{ext}" for ext in ARCHIVES)) if (path / name).exists()),
                None)
    if repo is None:
        raise InvalidInput(f"task {path.name!r} has no repository snapshot (repo/ or repo.tar.gz)")
    dockerfile, context = _dockerfile(path)
    fail_to_pass = _strings(tests, "fail_to_pass", where)
    command = tests.get("command")
    if not fail_to_pass and not command:
        raise InvalidInput(f"{where}: [tests] needs `fail_to_pass` ids or a `command`")
    framework = tests.get("framework", "unittest")
    if framework not in ("unittest", "pytest"):
        raise InvalidInput(f"{where}: test framework {framework!r} is not supported (unittest or pytest ids; "
                           "use `command` for others)")
    hidden = path / "hidden"
    return TaskSpec(
        name=path.name, layout="olmorl", instruction=_instruction(path),
        recipe=ImageRecipe(base_image=base_image, dockerfile=dockerfile, context=context,
                           setup=_strings(config, "setup", where), repo=repo,
                           workdir=str(config.get("workdir", "/workspace")), checks=(FIND_CHECK,)),
        hidden_files=_hidden_files(hidden) if hidden.is_dir() else {}, hidden_dest=None,
        framework=framework, fail_to_pass=fail_to_pass, pass_to_pass=_strings(tests, "pass_to_pass", where),
        test_command=str(command) if command else None,
        visible_test_command=str(tests["visible"]) if tests.get("visible") else None)


def _memory_mb(environment: dict[str, Any]) -> int | None:
    if "memory_mb" in environment:
        return int(environment["memory_mb"])
    text = str(environment.get("memory", "")).strip().upper()  # newer schema: "2G", "512M"
    units = {"G": 1024, "M": 1, "K": 1 / 1024}
    if text and text[-1] in units and text[:-1].replace(".", "", 1).isdigit():
        return int(float(text[:-1]) * units[text[-1]])
    return None


def _verifier_user(verifier: dict[str, Any], task: str) -> str | None:
    """Harbor's [verifier] `user` (a name or a uid), or None where the task names none."""
    user = verifier.get("user")
    if user is None:
        return None
    text = str(user) if isinstance(user, int) and not isinstance(user, bool) and user >= 0 else user
    if not isinstance(text, str) or not _USER.fullmatch(text):
        raise InvalidInput(f"{task}/task.toml: [verifier] user must be a user name or a uid, not {user!r}")
    return None if text in ("root", "0") else text


def _verifier_env(verifier: dict[str, Any], task: str) -> tuple[tuple[str, str], ...]:
    """Harbor's [verifier] `env`: variable names and their values as written. A value is never expanded from
    the server's environment (`${VAR}` stays text): nothing of the server reaches a task."""
    env = verifier.get("env", {})
    if not isinstance(env, dict):
        raise InvalidInput(f"{task}/task.toml: [verifier] env must be a table of NAME = value")
    pairs = []
    for name, value in env.items():
        if not _ENV_NAME.fullmatch(name):
            raise InvalidInput(f"{task}/task.toml: [verifier] env name {name!r} is not a variable name")
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (int, float)):
            value = str(value)
        if not isinstance(value, str) or "\0" in value:
            raise InvalidInput(f"{task}/task.toml: [verifier] env {name} must be a string or a number, not {value!r}")
        pairs.append((name, value))
    return tuple(pairs)


def _load_harbor(path: Path) -> TaskSpec:
    config = _toml(path / "task.toml")
    dockerfile, context = _dockerfile(path)
    if dockerfile is None:
        raise InvalidInput(f"Harbor task {path.name!r} has no environment/Dockerfile")
    tests = path / "tests"
    if not (tests / "test.sh").is_file():
        raise InvalidInput(f"Harbor task {path.name!r} has no tests/test.sh")
    if (tests / "test.sh").stat().st_size > MAX_TEST_SH_BYTES:  # verify hands its text to `bash -c`
        raise InvalidInput(f"tests/test.sh of {path.name!r} is over {MAX_TEST_SH_BYTES >> 10} KiB")
    environment = config.get("environment") or {}
    verifier = config.get("verifier") or {}
    storage = environment.get("storage_mb")
    user = _verifier_user(verifier, path.name)  # test.sh as a user: verify pins the repository (`_writable`)
    return TaskSpec(
        name=path.name, layout="harbor", instruction=_instruction(path),
        recipe=ImageRecipe(base_image="", dockerfile=dockerfile, context=context,
                           checks=(FIND_CHECK,) if user is not None else ()),
        hidden_files=_hidden_files(tests), hidden_dest=HARBOR_TESTS_DIR,
        test_command=f"bash {HARBOR_TESTS_DIR}/test.sh",
        verify_timeout_s=float(verifier["timeout_sec"]) if "timeout_sec" in verifier else None,
        verifier_user=user, verifier_env=_verifier_env(verifier, path.name),
        cpus=float(environment["cpus"]) if "cpus" in environment else None,
        memory_mb=_memory_mb(environment), disk_mb=int(storage) if storage else None)
