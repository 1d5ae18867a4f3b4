"""`olmorl-train` as a user meets it (real subprocesses): bad config and a wrong model path are one line and exit
status 2."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from olmorl.rewards._local import free_port

TRAIN = [sys.executable, "-m", "olmorl.trainer._cli"]


@pytest.mark.parametrize(("flags", "message"), [
    (["--learning-rate", "abc"], "learning_rate: expected a number, not 'abc'"),
    (["--total-steps", "-5"], "total_steps must be >= 1, not -5"),
    (["--reward-timeout-s", "0"], "reward_timeout_s must be > 0, not 0.0"),
    (["--adam-betas", "[0.9]"], "adam_betas: expected a list of 2, not [0.9]"),
    (["--zero-stage", "7"], "zero_stage must be 0, 1, 2 or 3, not 7"),
    (["--resume", "maybe"], "resume: expected a boolean, not 'maybe'"),
])
def test_a_bad_value_is_refused_naming_the_field(flags, message, tmp_path):
    proc = subprocess.run([*TRAIN, "--model", str(tmp_path / "no-model"), "--train-files", "[rows.jsonl]", *flags],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert (proc.returncode, proc.stderr.strip()) == (2, f"olmorl-train: bad config: {message}"), proc.stderr[-2000:]


@pytest.mark.parametrize("case", ["no-directory", "not-a-model", "hub-offline", "hub-unreachable"])
def test_a_model_that_is_not_there_is_one_line(case, tmp_path):
    """It used to be a traceback, or 101 lines of retries against an unreachable hub over 50 s."""
    (tmp_path / "empty").mkdir()
    model, env = {"no-directory": (str(tmp_path / "models" / "mine"), {}),
                  "not-a-model": (str(tmp_path / "empty"), {}),
                  "hub-offline": ("no-such-org/no-such-model", {"HF_HUB_OFFLINE": "1"}),
                  "hub-unreachable": ("no-such-org/no-such-model",
                                      {"HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"})}[case]
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), **env}  # an empty cache
    env.pop("HF_HUB_OFFLINE", None) if case == "hub-unreachable" else None
    started = time.monotonic()
    proc = subprocess.run([*TRAIN, "--model", model, "--train-files", "[rows.jsonl]"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("olmorl-train: model: ")
    assert model in proc.stderr and time.monotonic() - started < 30
    expected = {"no-directory": "no such directory", "not-a-model": "without a config.json",
                "hub-offline": "HF_HUB_OFFLINE is set", "hub-unreachable": "cannot be reached"}[case]
    assert expected in proc.stderr
