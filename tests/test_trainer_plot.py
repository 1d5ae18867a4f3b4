"""`olmorl-train plot OUTPUT_DIR` (a real subprocess) draws metrics.jsonl as a PNG that opens."""

from __future__ import annotations

import json
import subprocess
import sys

from PIL import Image

from olmorl.trainer._plot import PANELS, read_metrics, series


def write_run(directory, steps: int = 12) -> None:
    records = [{"step": 0, "eval/accuracy": 0.25, "eval/greedy_accuracy": 0.5}]
    for step in range(1, steps + 1):
        record = {"step": step, "reward_trained": 0.5, "kl": 0.01 * step, "entropy": 1.0 - 0.02 * step,
                  "clip_low_frac": 0.01, "clip_high_frac": 0.02, "gen_tokens_per_s": 900.0 + step,
                  "staleness_mean": 0.5, "staleness_max": 1.0, "staleness_hist": {"0": 0.5, "1": 0.5}}
        if step % 3:  # steps that scored no new groups have no reward point
            record.update({"reward": 0.1 * step, "reward/math": 0.1 * step})
        records.append(record)
    records.append({"step": 12, "eval/accuracy": 0.6, "eval/greedy_accuracy": 0.7, "reward": 1.2})
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_series_skip_missing_points_and_take_prefixed_metrics(tmp_path):
    write_run(tmp_path)
    records = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in records] == list(range(13))  # step 12 once: the last record of it wins
    rewards = series(records, PANELS["reward"])
    assert set(rewards) == {"reward", "reward_trained", "reward/math"}
    assert rewards["reward"][0] == [1, 2, 4, 5, 7, 8, 10, 11, 12]  # no 0 where a step had no reward
    assert series(records, PANELS["held-out accuracy"])["eval/accuracy"] == ([0, 12], [0.25, 0.6])


def test_plot_command_writes_a_png(tmp_path):
    run = tmp_path / "run"
    write_run(run)
    proc = subprocess.run([sys.executable, "-m", "olmorl.trainer._cli", "plot", str(run)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(run / "metrics.png")
    with Image.open(run / "metrics.png") as image:
        assert image.format == "PNG" and image.size == (1200, 960)  # 2 x 3 panels at 100 dpi
        assert len(image.convert("L").getcolors(maxcolors=1 << 16) or []) > 10  # curves, not a blank page
    missing = subprocess.run([sys.executable, "-m", "olmorl.trainer._cli", "plot", str(tmp_path / "nope")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 1 and missing.stderr.startswith("olmorl-train plot: error: ")
    assert "metrics.jsonl: no such file" in missing.stderr and len(missing.stderr.splitlines()) == 1
