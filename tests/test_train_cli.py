"""`olmorl-train` as a user meets it (real subprocesses): bad config and a wrong model path are one line and exit
status 2, Ctrl-C ends a run with its one line, and the embedded reward server never outlives the trainer."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from olmorl.rewards.service._local import free_port
from olmorl.sandbox._memory import descendants
from test_sessions import wait_for

TRAIN = [sys.executable, "-m", "olmorl.trainer._cli"]


def gone(pid: int) -> bool:
    """Exited (a zombie nobody has reaped yet counts: it holds no memory, port or sandbox)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """A tiny model and a few addition rows."""
    from olmorl.trainer._tiny import addition_rows, build_tiny_llama, write_jsonl

    root = tmp_path_factory.mktemp("tiny")
    build_tiny_llama(root / "model", hidden=64, layers=1)
    write_jsonl(addition_rows()[0][:200], root / "rows.jsonl")
    return root


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


def start_training(tiny: Path, out: Path) -> subprocess.Popen[str]:
    """A long run of the tiny model, in its own process group (a terminal's Ctrl-C reaches the whole group)."""
    return subprocess.Popen(
        [*TRAIN, "--model", str(tiny / "model"), "--train-files", f"[{tiny / 'rows.jsonl'}]", "--output-dir", str(out),
         "--total-steps", "1000", "--group-size", "2", "--prompts-per-step", "2", "--max-new-tokens", "8",
         "--filter-zero-std", "false", "--tensorboard", "false"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def reward_server_of(trainer: int) -> int | None:
    for pid in descendants(trainer):
        try:
            if b"olmorl.rewards\0serve" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:
            continue
    return None


def test_ctrl_c_mid_run_ends_with_its_one_line(tiny, tmp_path):
    proc = start_training(tiny, tmp_path / "run")
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("step 2/1000"):
            os.killpg(proc.pid, signal.SIGINT)
            break
    rest = proc.stdout.read()
    assert proc.wait(60) == 130, "".join(seen[-5:]) + rest
    assert "Traceback" not in rest and rest.strip().splitlines()[-1].startswith(
        "olmorl-train: interrupted (Ctrl-C) at step "), rest[-3000:]


def test_ctrl_c_while_the_reward_server_starts_stops_it_too(tiny, tmp_path):
    proc = start_training(tiny, tmp_path / "run")
    server = None
    try:
        assert wait_for(lambda: reward_server_of(proc.pid) is not None, 120)
        server = reward_server_of(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        output = proc.communicate(timeout=60)[0]
    finally:
        proc.kill()
        if server is not None and not gone(server):  # what the old code left running
            os.killpg(server, signal.SIGKILL)
    assert proc.returncode == 130 and "Traceback" not in output, output[-3000:]
    assert output.strip().splitlines()[-1] == "olmorl-train: interrupted (Ctrl-C) at step 0/1000; no checkpoint"
    assert gone(server)


def test_the_local_reward_server_dies_with_a_sigkilled_parent(tmp_path):
    """It ran in its own session with no parent-death signal: a SIGKILLed trainer left it running (~1 GB, its port,
    its sandbox slots). Started from a thread that ends first, it must live on while its parent does."""
    parent = textwrap.dedent(f"""
        import threading, time
        from olmorl.rewards.service._local import LocalRewardServer
        started = []
        starter = threading.Thread(target=lambda: started.append(
            LocalRewardServer(workers=1, log_path={str(tmp_path / 'server.log')!r}).start()))
        starter.start()
        starter.join()
        time.sleep(1.5)
        print(started[0].process.pid, started[0].port, flush=True)
        time.sleep(300)
    """)
    proc = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    server, port = map(int, proc.stdout.readline().split())
    family = {server} | descendants(server)  # the server and its worker processes
    try:
        assert port_open(port) and len(family) >= 2
        proc.kill()
        proc.wait()
        assert wait_for(lambda: all(map(gone, family)), 10), [p for p in family if not gone(p)]
        assert not port_open(port)
    finally:
        for pid in family:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
