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

from olmorl.trainer._trackers import TrackerRun, finish_trackers, start_trackers

if TYPE_CHECKING:
    from olmorl.trainer._config import TrainConfig


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
                    model=None, tokenizer=None, keep: int = 2) -> Path:
    """Write `state.pt` + `config.json` (+ the HF model) under checkpoints/step_N; readers never see half of it."""
    root = checkpoint_dir(output_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step_{step:07d}"
    tmp = root / f".tmp_step_{step:07d}_{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    torch.save(state, tmp / "state.pt")
    (tmp / "config.json").write_text(config_json)
    if model is not None:
        model.save_pretrained(str(tmp / "model"))
        if tokenizer is not None:
            tokenizer.save_pretrained(str(tmp / "model"))
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    for old in sorted(p for p in root.glob("step_*"))[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    return torch.load(Path(path) / "state.pt", weights_only=False)


class MetricsLog:
    """One JSON line per step, optional TensorBoard scalars and tracker runs (wandb, trackio), a console line."""

    def __init__(self, output_dir: str | Path, tensorboard: bool = True, trackers: Sequence[TrackerRun] = ()) -> None:
        self.trackers = list(trackers)
        self.path = Path(output_dir) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = self.path.open("a")
        self.writer = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self.writer = SummaryWriter(str(Path(output_dir) / "tensorboard"))
            except ImportError:  # tensorboard is in the [train] extra; without it, JSONL only
                self.writer = None
        try:
            from rich.console import Console

            self.console = Console(highlight=False)
        except ImportError:
            self.console = None

    @classmethod
    def from_config(cls, cfg: TrainConfig) -> MetricsLog:
        """The run's sinks; trackers named in `report_to` start here (ImportError when a package is missing)."""
        run_name = cfg.run_name or Path(cfg.output_dir).resolve().name
        config = cfg.to_dict()
        if config["reward_api_key"]:  # the config goes to a third-party service
            config["reward_api_key"] = "<redacted>"
        trackers = start_trackers(cfg.report_to, project=cfg.tracker_project, run_name=run_name, config=config,
                                  output_dir=cfg.output_dir)
        return cls(cfg.output_dir, cfg.tensorboard, trackers)

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
        if echo:
            keys = ("reward", "eval/accuracy", "eval/greedy_accuracy", "zero_std_frac", "gen_tokens_per_s",
                    "staleness_mean", "is_weight_max", "loss", "entropy", "step_s")
            parts = [f"{k}={metrics[k]:.3g}" for k in keys if isinstance(metrics.get(k), (int, float))]
            line = f"step {step:5d} " + " ".join(parts)
            print(line, flush=True) if self.console is None else self.console.print(line)

    def close(self) -> None:
        self.file.close()
        if self.writer is not None:
            self.writer.close()
        finish_trackers(self.trackers)
