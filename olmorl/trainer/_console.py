"""The training console: on a terminal, a progress bar (step/total, elapsed, ETA) under one line per step;
elsewhere (a log file, a pipe), one plain unwrapped line per step. Both end with a line naming the last step
and checkpoint, whether the run finished, was interrupted or failed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO, Any

# metric -> label in the step line, in this order
LINE_KEYS = {"reward": "reward", "eval/accuracy": "eval/accuracy", "eval/greedy_accuracy": "eval/greedy_accuracy",
             "zero_std_frac": "zero_std_frac", "gen_tokens_per_s": "gen_tokens_per_s",
             "staleness_mean": "staleness_mean", "is_weight_max": "is_weight_max", "loss": "loss",
             "entropy": "entropy", "learning_rate": "lr", "step_s": "step_s"}


def step_line(step: int, total: int, metrics: dict[str, Any]) -> str:
    parts = [f"{label}={metrics[key]:.3g}" for key, label in LINE_KEYS.items()
             if isinstance(metrics.get(key), (int, float)) and not isinstance(metrics.get(key), bool)]
    return f"step {step}/{total} " + " ".join(parts)


def stop_reason(exc: BaseException | None) -> str:
    if exc is None:
        return "finished"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    if isinstance(exc, SystemExit):
        return "stopped by SIGTERM" if exc.code == 143 else f"exited ({exc.code})"
    return f"failed: {type(exc).__name__}: {exc}"


class StepConsole:
    def __init__(self, total_steps: int, start_step: int = 0, stream: IO[str] | None = None) -> None:
        self.total = total_steps
        self.stream = stream or sys.stdout
        self.progress = None
        if self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            from rich.progress import TimeRemainingColumn

            self.progress = Progress(TextColumn("step"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                     TextColumn("ETA"), TimeRemainingColumn(),
                                     console=Console(file=self.stream, highlight=False))
            self.task = self.progress.add_task("train", total=total_steps, completed=start_step)
            self.progress.start()

    def step(self, step: int, metrics: dict[str, Any], echo: bool = True) -> None:
        line = step_line(step, self.total, metrics)
        if self.progress is None:
            if echo:
                print(line, file=self.stream, flush=True)
            return
        self.progress.update(self.task, completed=step)
        if echo:
            self.progress.console.print(line, soft_wrap=True)  # the terminal wraps; rich does not cut it up

    def stopped(self, step: int, checkpoint: Path | None, exc: BaseException | None = None) -> None:
        """The last line of a run: why it stopped, at which step, and where its latest checkpoint is."""
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
        where = f"last checkpoint: {checkpoint}" if checkpoint is not None else "no checkpoint"
        print(f"olmorl-train: {stop_reason(exc)} at step {step}/{self.total}; {where}", file=self.stream, flush=True)
