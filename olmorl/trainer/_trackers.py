"""Optional experiment trackers (`report_to`): Weights & Biases and Trackio, fed by `MetricsLog`.

Each named tracker gets `init(project=..., name=..., config=<resolved config>)` at start, `log(metrics,
step=step)` every logged step and `finish()` at close. A named tracker whose package is missing stops the run
at start with an ImportError naming the pip extra; it is never skipped silently.
"""

from __future__ import annotations

import importlib
import logging
import os
from typing import Any, Protocol

TRACKERS = ("wandb", "trackio")
log = logging.getLogger("olmorl.trainer")


class TrackerRun(Protocol):
    """What both `wandb.init` and `trackio.init` return."""

    def log(self, data: dict[str, Any], step: int | None = None) -> None: ...
    def finish(self) -> None: ...


def import_tracker(name: str):
    if name not in TRACKERS:
        raise ValueError(f"unknown tracker {name!r}; choose from {list(TRACKERS)}")
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"report_to names {name!r} but the {name} package is not installed; "
                          f"install it with `pip install 'olmorl[tracking]'` (or `pip install {name}`)") from exc


def start_trackers(names: tuple[str, ...] | list[str], *, project: str, run_name: str, config: dict[str, Any],
                   output_dir: str) -> list[TrackerRun]:
    """Start one run per tracker; every package is imported before any run starts (no half-started set)."""
    modules = [import_tracker(name) for name in names]
    runs: list[TrackerRun] = []
    try:
        for name, module in zip(names, modules):
            kwargs: dict[str, Any] = {"project": project, "name": run_name, "config": config}
            if name == "wandb" and not os.environ.get("WANDB_DIR"):
                kwargs["dir"] = output_dir  # wandb's files beside metrics.jsonl rather than in the working dir
            runs.append(module.init(**kwargs))
    except BaseException:
        finish_trackers(runs)
        raise
    return runs


def finish_trackers(runs: list[TrackerRun]) -> None:
    for run in runs:
        try:
            run.finish()
        except Exception:  # runs at shutdown, often while another error unwinds: say so, finish the others
            log.exception("a tracker run (%s) failed to finish", type(run).__module__)
