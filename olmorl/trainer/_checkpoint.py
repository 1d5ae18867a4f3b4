"""Checkpoints written atomically (a temporary directory renamed into place), and metrics sinks."""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch


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
    """One JSON line per step, optional TensorBoard scalars, and a compact console line."""

    def __init__(self, output_dir: str | Path, tensorboard: bool = True) -> None:
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

    def write(self, step: int, metrics: dict[str, Any], echo: bool = True) -> None:
        record = {"step": step, "time": time.time(), **metrics}
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        if self.writer is not None:
            for key, value in metrics.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    self.writer.add_scalar(key, value, step)
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
