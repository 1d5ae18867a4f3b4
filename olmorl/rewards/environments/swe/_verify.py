"""Verify of a `swe` session: the agent's change, applied to a fresh container, under the hidden tests.

The container the agent used is not trusted with the verdict: the agent's processes ran there, and it may
hold anything the agent wrote outside the repository. So verify (1) kills every process the agent left
running (counted in `details.agent_processes`), (2) reads the agent's working directory back as a tar (root,
through the image's own read-only `tar`) and compares it with the image's snapshot of it: that comparison,
filtered (`_changes`: test files and test-framework configuration or plugins are dropped and reported), is
the agent's change, (3) applies only that change to a FRESH container of the task's image, where no agent
process ever ran and no file outside the repository was touched (its repository root's), (4) writes the hidden
tests there, opens the repository's directories to new files and pins what is there (`_writable`: a file
replaced during the run scores 0), and runs them. Test ids (FAIL_TO_PASS / PASS_TO_PASS) run through `_runner.py`: the tests as
TEST_USER, which owns nothing, under a root parent that prints the result; it also checks that the test
framework's result machinery was not replaced during the run. A task with a command runs it as TEST_USER
(exit 0 passes); Harbor's test.sh runs as root, or as the task's [verifier] user, and writes the reward to
/logs/verifier/reward.txt or reward.json, which counts only when test.sh vouches for it (`_run_harbor`). No run
reads bytecode from the repository: Python's bytecode cache is an empty directory of root's (`_no_bytecode`).
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Any, Literal

from olmorl.rewards.engine._registry import InvalidInput, Score
from olmorl.rewards.environments.swe._changes import Change, Entry, agent_change, \
    change_archive, read_entries, snapshot_entries
from olmorl.rewards.environments.swe._tasks import HARBOR_LOGS_DIR, HARBOR_TESTS_DIR, TaskSpec
from olmorl.rewards.environments.swe._writable import open_repository, replaced
from olmorl.sandbox._containers import AGENT_USER, ROOT_USER, SNAPSHOT_DIR, TEST_USER, TMP_MB, ExecResult, TaskContainer
from olmorl.sandbox._wire import REPLACED_FILE, RESULT_FORGING, TASK_TAMPER_REASONS

RUNNER = Path(__file__).with_name("_runner.py")
OUTPUT_TAIL = 2000  # characters of the test run's output kept in details
SNAPSHOTS_KEPT = 32  # images whose snapshot entries are kept (read once per image)
SCRATCH_BYTES = (2 * TMP_MB) << 20  # /tests or /logs/verifier (a TMP_MB tmpfs) as a tar: headers come on top

RewardMode = Literal["pass_fail", "fraction"]
_snapshots: OrderedDict[str, dict[str, Entry]] = OrderedDict()
# counts the agent's processes (its uid's; one `ls`, not a process per pid) and kills every process but PID 1
_KILL = (f"n=$(ls -nd /proc/[0-9]* 2>/dev/null | awk '$3 == {AGENT_USER.split(':')[0]}' | wc -l); "
         'kill -KILL -1 2>/dev/null; echo "$n"')


async def verify_task(agent: TaskContainer, fresh: asyncio.Future[TaskContainer], spec: TaskSpec, image: str,
                      mode: RewardMode, timeout_s: float, max_tree_bytes: int) -> Score:
    """The verdict on the agent's container `agent` (a container of `image`), in `fresh`: a container of the same
    image that nobody used (the caller starts it, and removes it afterwards)."""
    killed = await agent.exec(["sh", "-c", _KILL], timeout_s=10.0, workdir="/")
    change = await _agent_change(agent, spec, image, max_tree_bytes)
    container = await fresh
    nonce = secrets.token_hex(16)
    root = container.workdir.strip("/")
    files = {f"{(spec.hidden_dest or container.workdir).strip('/')}/{path}": data
             for path, data in spec.hidden_files.items()}
    runner_dir = f"tmp/.olmorl-verify-{secrets.token_hex(8)}"  # not the nonce: argv is readable by all
    if spec.fail_to_pass:
        files[f"{runner_dir}/runner.py"] = RUNNER.read_bytes()
    await container.extract(change_archive(change, files, root), "/",
                            remove=[f"{root}/{path}" for path in change.remove] + sorted(files))
    # the runner keeps its bytecode in its own directory; a command or test.sh gets a directory of root's
    bytecode = None if spec.fail_to_pass else await _bytecode_dir(container)
    pins = None
    if spec.layout == "olmorl" or spec.verifier_user is not None:  # the tests' uid may add files to the repository
        pins = await open_repository(container, ("/" + runner_dir,) if bytecode is None else (bytecode,))
    if spec.fail_to_pass:
        score = await _run_ids(container, spec, mode, timeout_s, f"/{runner_dir}/runner.py", nonce)
    else:
        assert bytecode is not None
        score = await _run_command(container, spec, timeout_s, bytecode)
    reward, tamper = score.reward, Counter(reason for reason in change.dropped.values() if reason in TASK_TAMPER_REASONS)
    tamper.update(score.details.pop("tamper", {}))
    details = {**score.details, "dropped_paths": change.dropped,
               "agent_processes": int(killed.stdout.split()[-1]) if killed.stdout.split() else 0}
    gone = await replaced(container, pins) if pins is not None else []
    if gone:  # a rename over a file of root's: only a runtime that does not enforce the sticky bit allows it
        reward, tamper[REPLACED_FILE] = 0.0, len(gone)
        details.update(reason=f"files the tests started with were replaced during the run: {', '.join(gone[:10])}",
                       replaced_files=gone[:100])
    if tamper:
        details["tamper"] = dict(tamper)
    return Score(reward, details)


async def _agent_change(agent: TaskContainer, spec: TaskSpec, image: str, max_tree_bytes: int) -> Change:
    tree = read_entries(await agent.read_tree(agent.workdir, max_bytes=max_tree_bytes))
    snapshot = _snapshots.get(image)
    if snapshot is None:  # the image's own copy, on its read-only root: the agent cannot have changed it
        snapshot = snapshot_entries(await agent.read_tree(SNAPSHOT_DIR, max_bytes=max_tree_bytes))
        _snapshots[image] = snapshot
        while len(_snapshots) > SNAPSHOTS_KEPT:
            _snapshots.popitem(last=False)
    _snapshots.move_to_end(image)
    return agent_change(snapshot, tree, set(spec.hidden_files) if spec.hidden_dest is None else set())


def _count(results: dict[str, str], ids: tuple[str, ...]) -> dict[str, int]:
    return {"passed": sum(results.get(i) == "passed" for i in ids), "total": len(ids)}


async def _run_ids(container: TaskContainer, spec: TaskSpec, mode: RewardMode, timeout_s: float, runner: str,
                   nonce: str) -> Score:
    ids = tuple(dict.fromkeys(spec.fail_to_pass + spec.pass_to_pass))
    # the runner starts as root and runs the tests in a child that drops to TEST_USER (see _runner.py)
    run = await container.exec(["python3", "-I", "-B", runner, TEST_USER, spec.framework, container.workdir, *ids],
                               timeout_s=timeout_s, stdin=f"{nonce}\n".encode())
    lines = [line for line in run.stdout.splitlines() if line.startswith(nonce)]
    tail = (run.stdout + run.stderr)[-OUTPUT_TAIL:]
    reply = json.loads(lines[0][len(nonce):]) if lines else {}
    changed: list[str] = list(reply.get("changed", []))
    results, why = reply.get("tests"), None
    if results is None:  # the run died (a test called os._exit, the time ran out ...): nothing passed
        why = (f"the hidden tests ran past {timeout_s:g} s" if run.timed_out else
               f"the hidden test run ended without results ({_ending(reply.get('exit'), run.exit_code)})"
               + (": out of memory (the container's memory limit)" if run.oom_kills else ""))
        results = {i: "error" for i in ids}
    if len(lines) > 1:  # the runner prints one; the test process never holds the nonce
        changed.append("a second result line")
    f2p, p2p = _count(results, spec.fail_to_pass), _count(results, spec.pass_to_pass)
    all_p2p = p2p["passed"] == p2p["total"]
    if mode == "fraction":  # FAIL_TO_PASS fixed, only while nothing that passed before broke
        reward = f2p["passed"] / f2p["total"] if all_p2p else 0.0
    else:
        reward = float(f2p["passed"] == f2p["total"] and all_p2p)
    details: dict[str, Any] = {"tests": results, "fail_to_pass": f2p, "pass_to_pass": p2p, "reward_mode": mode,
                               "reward_components": {"fail_to_pass": f2p["passed"] / f2p["total"],
                                                     "pass_to_pass": p2p["passed"] / p2p["total"] if p2p["total"]
                                                     else 1.0},
                               "output_tail": tail, "test_processes_left": reply.get("processes_left", 0)}
    if why:
        details["reason"] = why
    if changed:  # the tests ran with their result machinery replaced: no result of that run counts
        details.update(reason="the test framework's result machinery changed during the run: "
                              + ", ".join(changed[:10]), forged=changed, tamper={RESULT_FORGING: 1})
        reward = 0.0
    return Score(reward, details)


def ending(run: ExecResult) -> Literal["exit", "timeout", "oom"]:
    """How a command or test.sh run ended, from what was observed and never from the status number: `timeout`
    when our limit stopped it (`timed_out`: the run reached the limit and `timeout` ended it), `oom` when it
    failed and the container's memory cgroup counted an OOM kill during it, else `exit`: the status is its exit
    code. `docker exec` reports a kill by signal N as 128 + N, the same as the script's own `exit 128+N`, and no
    process of ours waits for test.sh, so a kill nobody observed (code under test that kills it) is that exit:
    a non-zero one, which earns nothing."""
    if run.timed_out:
        return "timeout"
    if run.exit_code and run.oom_kills:
        return "oom"
    return "exit"


def _ending(status: object, exec_status: int) -> str:
    """How the test process ended: the runner waited for it, so its status tells a signal (negative) from an exit;
    with no runner reply, only the exec's status, where a kill by signal N reads as 128 + N."""
    if isinstance(status, int):
        return f"the test process was killed by signal {-status}" if status < 0 else f"the test process exited {status}"
    return f"the runner ended with status {exec_status}"


async def _run_command(container: TaskContainer, spec: TaskSpec, timeout_s: float, bytecode: str) -> Score:
    assert spec.test_command is not None
    if spec.layout == "harbor":
        return await _run_harbor(container, spec, timeout_s, bytecode)
    # as TEST_USER, like test ids: a later step of the command reads the hidden tests as the task has them
    run = await container.exec([*_no_bytecode(bytecode), "bash", "-c", spec.test_command],
                               timeout_s=timeout_s, user=TEST_USER)
    ended = ending(run)
    details: dict[str, Any] = {"exit_code": run.exit_code, "ended": ended,
                               "output_tail": (run.stdout + run.stderr)[-OUTPUT_TAIL:]}
    if ended == "timeout":
        details["reason"] = f"the hidden tests ran past {timeout_s:g} s"
    elif ended == "oom":
        details["reason"] = f"the tests ended with status {run.exit_code}: out of memory (the container's memory limit)"
    passed = float(run.exit_code == 0)
    return Score(passed, {**details, "reward_components": {"tests": passed}})


async def _bytecode_dir(container: TaskContainer) -> str:
    """A new empty directory of root's, the only place a command's or test.sh's Python reads and writes bytecode
    (`_no_bytecode`); pinned with the repository, so a runtime that lets a uid rename its own directory over it
    (gVisor: see `_writable`) cannot have a forged `.pyc` read unseen."""
    prefix = f"/tmp/.olmorl-pycache-{secrets.token_hex(8)}"
    made = await container.exec(["mkdir", "-m", "0755", prefix], timeout_s=10, workdir="/")
    if made.exit_code != 0:
        raise RuntimeError(f"preparing the verdict container for the tests failed: {made.stderr.strip()[-500:]}")
    return prefix


def _no_bytecode(prefix: str) -> list[str]:
    """The `env` prefix of a test run whose Python reads and writes bytecode only in `prefix`: never a `.pyc` that
    code under test wrote beside a source, whose recorded mtime and size match it."""
    return ["env", "PYTHONDONTWRITEBYTECODE=1", f"PYTHONPYCACHEPREFIX={prefix}"]


async def _reward_dir(container: TaskContainer, user: str | None) -> None:
    """/logs/verifier, where test.sh writes the reward: root's, or the verifier user's when the task names one
    (Harbor runs test.sh as that user, so the directory must take its writes)."""
    script = f'mkdir -p {HARBOR_LOGS_DIR}' + (' && chown "$1" ' + HARBOR_LOGS_DIR if user else '')
    made = await container.exec(["sh", "-c", script, "sh", user or ""], timeout_s=10, workdir="/")
    if made.exit_code != 0:
        raise InvalidInput(f"the verifier user {user!r} of the Harbor task does not exist in its image: "
                           f"{made.stderr.strip()[-300:]}")


async def _run_harbor(container: TaskContainer, spec: TaskSpec, timeout_s: float, bytecode: str) -> Score:
    """Harbor's test.sh, as root (it may install or start things) or as the task's [verifier] user, and the reward
    it wrote. As root, the code it tests runs as root too, so nothing here is a permission boundary against that
    code; as a user, /tests, the image's files and this module's checks are out of its reach (the reward
    directory is not: test.sh writes there as that same user). What verify does in either case:
    bash runs test.sh's text from its own memory (`bash -c`: rewriting the file during the run changes
    nothing); a reward counts only when test.sh ended by itself with status 0 (code that killed it, or made a
    `set -e` script stop before its own write, leaves a reward nobody vouches for); every process left is
    killed before the reward is read; the reward file must be a regular file; and a hidden test file changed
    during the run is tamper."""
    script = spec.hidden_files["test.sh"].decode("utf-8", "replace")
    # where test.sh writes the reward (a fresh container: nothing the agent wrote is there)
    await _reward_dir(container, spec.verifier_user)
    run = await container.exec([*_no_bytecode(bytecode), "bash", "-c", script, f"{HARBOR_TESTS_DIR}/test.sh"],
                               timeout_s=timeout_s, user=spec.verifier_user or ROOT_USER,
                               env=dict(spec.verifier_env))
    await container.kill_processes()  # nothing the tests started may write after this
    logs, tests = await asyncio.gather(container.read_tree(HARBOR_LOGS_DIR, max_bytes=SCRATCH_BYTES),
                                       container.read_tree(HARBOR_TESTS_DIR, max_bytes=SCRATCH_BYTES))
    details: dict[str, Any] = {"exit_code": run.exit_code, "ended": ending(run),
                               "output_tail": (run.stdout + run.stderr)[-OUTPUT_TAIL:]}
    reward, extra, forged = _harbor_reward(read_entries(logs))
    after = read_entries(tests)
    changed = sorted(path for path, data in spec.hidden_files.items()
                     if (entry := after.get(path)) is None or entry.kind != "file" or entry.data != data)
    tamper: dict[str, int] = {}
    if changed:
        tamper["test_file"] = len(changed)
        details["changed_test_files"] = changed
    if forged:
        tamper[RESULT_FORGING] = 1
    why = _distrust(run, timeout_s, changed, forged, reward)
    if why:
        details["reason"] = why
        if reward:
            details["reward_written"] = reward
    if tamper:
        details["tamper"] = tamper
    reward = 0.0 if why or reward is None else reward
    return Score(reward, {**details, **extra, "reward_components": {"tests": reward}})


def _distrust(run: ExecResult, timeout_s: float, changed: list[str], forged: str | None,
              reward: float | None) -> str | None:
    """Why the reward test.sh left does not count, or None. How it ended is what was observed (`ending`), never
    read from the status: an `exit 137` is an exit like any other non-zero one."""
    ended = ending(run)
    if ended == "timeout":
        return f"the hidden tests ran past {timeout_s:g} s"
    if ended == "oom":
        return f"tests/test.sh ended with status {run.exit_code}: out of memory (the container's memory limit)"
    if changed:
        return f"hidden test files changed during the run: {', '.join(changed[:10])}"
    if forged:
        return forged
    if reward is None:
        return f"tests/test.sh wrote no reward to {HARBOR_LOGS_DIR}/reward.txt or reward.json (exit {run.exit_code})"
    if reward and run.exit_code != 0:
        return f"tests/test.sh exited {run.exit_code}: a reward counts only when it exits 0"
    return None


def _harbor_reward(logs: dict[str, Entry]) -> tuple[float | None, dict[str, Any], str | None]:
    """The reward test.sh wrote: reward.txt (a number), else reward.json (`reward`; other keys to details);
    and why it is forged (a reward file that is not a regular file), or None."""
    for name in ("reward.txt", "reward.json"):
        entry = logs.get(name)
        if entry is not None and entry.kind != "file":
            return None, {}, f"{HARBOR_LOGS_DIR}/{name} is not a regular file ({entry.kind})"
    text, data = logs.get("reward.txt"), logs.get("reward.json")
    if text is not None:
        raw = (text.data or b"").decode("utf-8", "replace")
        try:
            return float(raw.strip()), {}, None
        except ValueError:
            return None, {"reward_file": raw[:200]}, None
    if data is None:
        return None, {}, None
    raw = (data.data or b"").decode("utf-8", "replace")
    try:
        parsed = json.loads(raw)
        return float(parsed["reward"]), {"rewards": parsed}, None
    except (ValueError, KeyError, TypeError):
        return None, {"reward_file": raw[:200]}, None
