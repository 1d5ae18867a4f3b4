"""Checkpoints written atomically (a temporary directory renamed into place), and metrics sinks."""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import torch

from olmorl.trainer._console import StepConsole
from olmorl.trainer._trackers import TrackerRun, finish_trackers, start_trackers

if TYPE_CHECKING:
    from olmorl.trainer._config import TrainConfig


LEARNER_FILES = "learner"  # a checkpoint's sub-directory for the learner's own files


def rng_states() -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_states(states: dict[str, Any]) -> None:
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])


def checkpoint_dir(output_dir: str | Path) -> Path:
    return Path(output_dir) / "checkpoints"


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    done = sorted(p for p in checkpoint_dir(output_dir).glob("step_*") if (p / "state.pt").exists())
    return done[-1] if done else None


def save_checkpoint(output_dir: str | Path, step: int, state: dict[str, Any], config_json: str,
                    model=None, tokenizer=None, keep: int = 2, weights: dict[str, torch.Tensor] | None = None) -> Path:
    """Write `state.pt` + `config.json` (+ the HF model, with `weights` where the model's own are partitioned)
    under checkpoints/step_N; readers never see half of it. A learner's `files` (DeepSpeed's per-rank
    checkpoint) are written as files under learner/, not into state.pt."""
    root = checkpoint_dir(output_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step_{step:07d}"
    tmp = root / f".tmp_step_{step:07d}_{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    learner = state.get("learner")
    if isinstance(learner, dict) and isinstance(learner.get("files"), dict):
        for name, data in learner["files"].items():
            target = tmp / LEARNER_FILES / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        state = {**state, "learner": {**learner, "files": sorted(learner["files"])}}
    torch.save(state, tmp / "state.pt")
    (tmp / "config.json").write_text(config_json)
    if model is not None:
        model.save_pretrained(str(tmp / "model"), state_dict=weights)
        if tokenizer is not None:
            tokenizer.save_pretrained(str(tmp / "model"))
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    for old in sorted(p for p in root.glob("step_*"))[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    state = torch.load(Path(path) / "state.pt", weights_only=False)
    learner = state.get("learner")
    if isinstance(learner, dict) and isinstance(learner.get("files"), list):
        learner["files"] = {name: (Path(path) / LEARNER_FILES / name).read_bytes() for name in learner["files"]}
    return state


class MetricsLog:
    """One JSON line per step, optional TensorBoard scalars and tracker runs (wandb, trackio), the console.

    `resumed_step`: the step of the checkpoint the run resumed from; records past it (written after that
    checkpoint by the interrupted run) are dropped, so every step appears once. None: a fresh run, which
    starts a fresh file."""

    def __init__(self, output_dir: str | Path, tensorboard: bool = True, trackers: Sequence[TrackerRun] = (),
                 console: StepConsole | None = None, resumed_step: int | None = None) -> None:
        self.trackers = list(trackers)
        self.console = console or StepConsole(total_steps=0)
        self.path = Path(output_dir) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        kept = _records_through(self.path, resumed_step) if resumed_step is not None else []
        self.file = self.path.open("w")
        self.file.writelines(kept)
        self.file.flush()
        self.writer = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self.writer = SummaryWriter(str(Path(output_dir) / "tensorboard"))
            except ImportError:  # tensorboard is in the [train] extra; without it, JSONL only
                self.writer = None

    @classmethod
    def from_config(cls, cfg: TrainConfig, resumed_step: int | None = None) -> MetricsLog:
        """The run's sinks; trackers named in `report_to` start here (ImportError when a package is missing)."""
        run_name = cfg.run_name or Path(cfg.output_dir).resolve().name
        config = cfg.to_dict()
        if config["reward_api_key"]:  # the config goes to a third-party service
            config["reward_api_key"] = "<redacted>"
        trackers = start_trackers(cfg.report_to, project=cfg.tracker_project, run_name=run_name, config=config,
                                  output_dir=cfg.output_dir)
        console = StepConsole(cfg.total_steps, start_step=resumed_step or 0)
        return cls(cfg.output_dir, cfg.tensorboard, trackers, console, resumed_step)

    def write(self, step: int, metrics: dict[str, Any], echo: bool = True) -> None:
        record = {"step": step, "time": time.time(), **metrics}
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        scalars = {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if self.writer is not None:
            for key, value in scalars.items():
                self.writer.add_scalar(key, value, step)
        for run in self.trackers:
            run.log(scalars, step=step)
        self.console.step(step, metrics, echo)

    def close(self) -> None:
        self.file.close()
        if self.writer is not None:
            self.writer.close()
        finish_trackers(self.trackers)


def _records_through(path: Path, step: int) -> list[str]:
    """The lines of an existing metrics.jsonl whose step is at most `step`."""
    if not path.exists():
        return []
    kept = []
    for line in path.read_text().splitlines(keepends=True):
        try:
            if json.loads(line).get("step", 0) <= step:
                kept.append(line if line.endswith("\n") else line + "\n")
        except ValueError:  # a line cut short by the crash that made this a resume
            continue
    return kept
