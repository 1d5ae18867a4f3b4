"""`olmorl-rewards verify FILE --server URL` scores through the client and gives the same output and
summary as scoring in-process."""

from __future__ import annotations

import json
import subprocess
import sys

from olmorl.rewards.service._local import free_port

ROWS = [
    {"response": "The answer is $\\boxed{\\frac{1}{2}}$.", "ground_truth": "0.5", "verifier": "math", "label": True},
    {"response": "#### 17", "ground_truth": "18", "verifier": "gsm8k", "label": False},
    {"response": "<answer>Paris</answer>", "ground_truth": ["paris", "Paris, France"], "verifier": "string_match",
     "label": True},
    {"response": "x", "ground_truth": "x", "verifier": "no_such_verifier", "label": False},
    {"response": "<answer>2</answer>", "ground_truth": ["2", "2"], "dataset": ["math", "string_match"]},
    *({"response": f"\\boxed{{{i}}}", "ground_truth": str(i if i % 3 else i + 1), "verifier": "math"}
      for i in range(40)),
]


def run_verify(data, out, *extra: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "olmorl.rewards", "verify", str(data), "--output", str(out),
                           "--batch-size", "16", *extra], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return proc


def summary_without_timing(stdout: str) -> list[str]:
    """The summary table minus its title line, which carries the elapsed time."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    return [line for line in lines if "rows/s" not in line]


def test_server_scoring_matches_in_process(reward_server, tmp_path):
    url = reward_server(workers=1)
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    local = run_verify(data, tmp_path / "local.jsonl", "--workers", "1")
    remote = run_verify(data, tmp_path / "remote.jsonl", "--server", url)

    local_rows = (tmp_path / "local.jsonl").read_text().splitlines()
    remote_rows = (tmp_path / "remote.jsonl").read_text().splitlines()
    assert len(local_rows) == len(ROWS) and local_rows == remote_rows
    statuses = [json.loads(line)["status"] for line in remote_rows]
    assert statuses[:5] == ["ok", "ok", "ok", "invalid", "ok"] and json.loads(remote_rows[4])["reward"] == 2.0
    assert summary_without_timing(remote.stdout) == summary_without_timing(local.stdout)
    assert "rows/s" in remote.stdout and "│ all" in remote.stdout


def test_a_dead_server_exits_non_zero_with_one_line_and_no_table(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS[:4]))
    dead = f"http://127.0.0.1:{free_port()}"
    proc = subprocess.run([sys.executable, "-m", "olmorl.rewards", "verify", str(data), "--server", dead],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 1 and "accuracy" not in proc.stdout and "│" not in proc.stdout
    assert proc.stderr.splitlines()[-1] == ("olmorl-rewards verify: error: nothing scored: reward server unavailable "
                                            "after 6 attempts: ConnectError (All connection attempts failed) on "
                                            f"POST {dead}/v1/verify")
