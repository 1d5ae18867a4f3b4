"""Experiment trackers (`report_to`): real wandb (offline mode) and real trackio (local SQLite) runs fed by
`MetricsLog`, read back from what they wrote to disk; a tracker whose package is missing fails at start.
The packages come with the `tracking` extra, which scripts/test installs."""

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from olmorl.trainer._checkpoint import MetricsLog
from olmorl.trainer._config import TrainConfig

STEPS = {1: {"loss": 0.5, "reward": 0.25}, 2: {"loss": 0.375, "reward": 0.5}, 3: {"loss": 0.25, "reward": 0.75}}


def _log_three_steps(tracker: str, tmp_path: Path, env: dict[str, str]) -> None:
    """Run MetricsLog in a fresh interpreter: the trackers read their directories from the environment at import."""
    script = textwrap.dedent(f"""
        from olmorl.trainer._checkpoint import MetricsLog
        from olmorl.trainer._config import TrainConfig

        cfg = TrainConfig(output_dir={str(tmp_path / "run")!r}, report_to=({tracker!r},), run_name="r1",
                          tracker_project="olmorl-test", tensorboard=False, top_k=7, reward_api_key="s3cret")
        log = MetricsLog.from_config(cfg)
        for step, metrics in {STEPS!r}.items():
            log.write(step, {{**metrics, "verifier": "math"}}, echo=False)  # the string is not a tracker scalar
        log.close()
    """)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (tmp_path / "run" / "metrics.jsonl").read_text().count("\n") == 3


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    import os

    return {**os.environ, "HOME": str(tmp_path / "home"), **extra}


def _wandb_records(path: Path):
    """The protobuf records of a .wandb file (LevelDB log framing: 32 KiB blocks, 7-byte chunk headers)."""
    from wandb.proto.wandb_internal_pb2 import Record

    data, block, pos, payload = path.read_bytes(), 32768, 7, b""
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        length, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        payload += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a full record, or the last chunk of one
            record = Record()
            record.ParseFromString(payload)
            yield record
            payload = b""
        elif kind == 0:
            break


def test_wandb_offline_run_holds_every_logged_step_and_the_config(tmp_path):
    _log_three_steps("wandb", tmp_path, _env(tmp_path, WANDB_MODE="offline", WANDB_DIR=str(tmp_path / "wb"),
                                             WANDB_SILENT="true"))
    (run_file,) = (tmp_path / "wb").glob("wandb/offline-run-*/run-*.wandb")
    history, run = {}, None
    for record in _wandb_records(run_file):
        kind = record.WhichOneof("record_type")
        if kind == "history":
            items = {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item}
            history[items.pop("_step")] = {k: v for k, v in items.items() if not k.startswith("_")}
        elif kind == "run":
            run = record.run
    assert history == STEPS
    assert (run.project, run.display_name) == ("olmorl-test", "r1")
    config = {i.key: json.loads(i.value_json) for i in run.config.update}
    assert config["top_k"] == 7 and config["report_to"] == ["wandb"] and config["reward_api_key"] == "<redacted>"


def test_trackio_local_database_holds_every_logged_step_and_the_config(tmp_path):
    _log_three_steps("trackio", tmp_path, _env(tmp_path, TRACKIO_DIR=str(tmp_path / "tr")))
    with sqlite3.connect(tmp_path / "tr" / "olmorl-test.db") as db:
        rows = db.execute("SELECT step, metrics FROM metrics WHERE run_name = 'r1' ORDER BY step").fetchall()
        (config,) = db.execute("SELECT config FROM configs WHERE run_name = 'r1'").fetchone()
    assert {step: json.loads(m) for step, m in rows} == STEPS
    assert json.loads(config)["top_k"] == 7
    assert json.loads(config)["reward_api_key"] == "<redacted>"  # the bearer token never leaves the machine


@pytest.mark.parametrize("tracker", ["wandb", "trackio"])
def test_a_missing_tracker_package_stops_the_run_at_start(tracker, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, tracker, None)  # what `import` sees when the package is not installed
    cfg = TrainConfig(output_dir=str(tmp_path / "run"), report_to=(tracker,), tensorboard=False)
    with pytest.raises(ImportError, match=rf"pip install 'olmorl\[tracking\]'.*pip install {tracker}"):
        MetricsLog.from_config(cfg)
    assert not (tmp_path / "run" / "metrics.jsonl").exists()  # nothing was started


def test_report_to_names_only_known_trackers():
    with pytest.raises(ValueError, match="unknown tracker"):
        TrainConfig(report_to=("mlflow",))
