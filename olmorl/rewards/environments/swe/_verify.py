"""Verify of a `swe` session: the hidden tests, run in the session's container.

Order matters: first every process the agent left running is killed (nothing can rewrite files
during the run), then the hidden test files are written from the task directory over whatever the
agent left at those paths (deleted or edited tests come back as the task has them), then the tests
run. Test ids (FAIL_TO_PASS / PASS_TO_PASS) run through `_runner.py`; a task with a command runs it
(exit 0 passes; Harbor: test.sh writes the reward to /logs/verifier/reward.txt or reward.json).
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any, Literal

from olmorl.rewards.engine._registry import Score
from olmorl.rewards.environments.swe._tasks import HARBOR_LOGS_DIR, TaskSpec
from olmorl.sandbox._containers import TaskContainer

RUNNER = Path(__file__).with_name("_runner.py")
OUTPUT_TAIL = 2000  # characters of the test run's output kept in details

RewardMode = Literal["pass_fail", "fraction"]


async def verify_task(container: TaskContainer, spec: TaskSpec, mode: RewardMode, timeout_s: float) -> Score:
    await container.kill_processes()
    if spec.hidden_files:
        await container.write_files(spec.hidden_files, spec.hidden_dest or container.workdir)
    if spec.fail_to_pass:
        return await _run_ids(container, spec, mode, timeout_s)
    return await _run_command(container, spec, timeout_s)


def _count(results: dict[str, str], ids: tuple[str, ...]) -> dict[str, int]:
    return {"passed": sum(results.get(i) == "passed" for i in ids), "total": len(ids)}


async def _run_ids(container: TaskContainer, spec: TaskSpec, mode: RewardMode, timeout_s: float) -> Score:
    ids = tuple(dict.fromkeys(spec.fail_to_pass + spec.pass_to_pass))
    nonce = secrets.token_hex(16)
    runner_dir = f"/tmp/.olmorl-verify-{nonce}"  # new each time: nothing the agent put there sits beside the runner
    await container.write_files({"runner.py": RUNNER.read_bytes()}, runner_dir)
    run = await container.exec(["python3", "-I", "-B", f"{runner_dir}/runner.py", spec.framework, container.workdir,
                                *ids],
                               timeout_s=timeout_s, stdin=f"{nonce}\n".encode())
    lines = [line for line in run.stdout.splitlines() if line.startswith(nonce)]
    tail = (run.stdout + run.stderr)[-OUTPUT_TAIL:]
    if not lines:  # the run died (a test called os._exit, the time ran out ...): nothing passed
        why = (f"the hidden tests ran past {timeout_s:g} s" if run.timed_out else
               f"the hidden test run ended without results (exit {run.exit_code})")
        results = {i: "error" for i in ids}
    else:
        results, why = json.loads(lines[-1][len(nonce):]), None
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
                               "output_tail": tail}
    if why:
        details["reason"] = why
    return Score(reward, details)


async def _run_command(container: TaskContainer, spec: TaskSpec, timeout_s: float) -> Score:
    assert spec.test_command is not None
    harbor = spec.layout == "harbor"
    if harbor:  # a reward the agent wrote in advance must not count
        await container.exec(["sh", "-c", f"rm -rf {HARBOR_LOGS_DIR} && mkdir -p {HARBOR_LOGS_DIR}"], timeout_s=10)
    run = await container.exec(["bash", "-c", spec.test_command], timeout_s=timeout_s)
    details: dict[str, Any] = {"exit_code": run.exit_code, "output_tail": (run.stdout + run.stderr)[-OUTPUT_TAIL:]}
    if run.timed_out:
        details["reason"] = f"the hidden tests ran past {timeout_s:g} s"
    if not harbor:
        passed = float(run.exit_code == 0)
        return Score(passed, {**details, "reward_components": {"tests": passed}})
    reward, extra = await _harbor_reward(container)
    if reward is None:
        details["reason"] = details.get("reason") or \
            f"tests/test.sh wrote no reward to {HARBOR_LOGS_DIR}/reward.txt or reward.json (exit {run.exit_code})"
        return Score(0.0, {**details, "reward_components": {"tests": 0.0}})
    return Score(reward, {**details, **extra, "reward_components": {"tests": reward}})


async def _harbor_reward(container: TaskContainer) -> tuple[float | None, dict[str, Any]]:
    """The reward test.sh wrote: reward.txt (a number), else reward.json (`reward`; other keys to details)."""
    text = await container.exec(["cat", f"{HARBOR_LOGS_DIR}/reward.txt"], timeout_s=10, max_output=4096)
    if text.exit_code == 0:
        try:
            return float(text.stdout.strip()), {}
        except ValueError:
            return None, {"reward_file": text.stdout[:200]}
    data = await container.exec(["cat", f"{HARBOR_LOGS_DIR}/reward.json"], timeout_s=10, max_output=65536)
    if data.exit_code != 0:
        return None, {}
    try:
        parsed = json.loads(data.stdout)
        return float(parsed["reward"]), {"rewards": parsed}
    except (ValueError, KeyError, TypeError):
        return None, {"reward_file": data.stdout[:200]}
