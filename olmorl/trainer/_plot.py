"""`olmorl-train plot OUTPUT_DIR`: PNG curves of a run's metrics.jsonl (matplotlib, in the `train` extra).

One figure, one panel per family of metrics: reward (per verifier too), held-out accuracy, KL and
entropy, clip fractions, tokens/s, staleness. A metric a run did not log is left out; a panel with
nothing to show is not drawn.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

# panel title -> metric names drawn in it (a trailing "/" takes every metric with that prefix)
PANELS: dict[str, tuple[str, ...]] = {
    "reward": ("reward", "reward_trained", "reward/"),
    "held-out accuracy": ("eval/accuracy", "eval/greedy_accuracy"),
    "KL and entropy": ("kl", "entropy"),
    "clip fractions": ("clip_low_frac", "clip_high_frac", "is_capped_frac"),
    "tokens/s": ("gen_tokens_per_s", "trained_tokens_per_s"),
    "staleness (steps)": ("staleness_mean", "staleness_max"),
}


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The records of metrics.jsonl; for a step logged twice (a run resumed before the fix), the last wins."""
    by_step: dict[int, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            if isinstance(record.get("step"), int):
                by_step[record["step"]] = record
    return [by_step[step] for step in sorted(by_step)]


def series(records: list[dict[str, Any]], names: tuple[str, ...]) -> dict[str, tuple[list[int], list[float]]]:
    """name -> (steps, values) for each metric of `names` the records hold (numbers only, NaN skipped)."""
    wanted = []
    for name in names:
        if name.endswith("/"):
            wanted += sorted({key for r in records for key in r if key.startswith(name)})
        else:
            wanted.append(name)
    found: dict[str, tuple[list[int], list[float]]] = {}
    for name in wanted:
        points = [(r["step"], float(r[name])) for r in records
                  if isinstance(r.get(name), (int, float)) and not isinstance(r.get(name), bool)
                  and math.isfinite(r[name])]
        if points:
            found[name] = ([s for s, _ in points], [v for _, v in points])
    return found


def plot_run(output_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write the curves of `output_dir/metrics.jsonl` to `out` (default `output_dir/metrics.png`)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    source = Path(output_dir) / "metrics.jsonl"
    if not source.is_file():
        raise FileNotFoundError(f"{source}: no such file (is {output_dir} an olmorl-train output_dir?)")
    records = read_metrics(source)
    panels = {title: found for title, names in PANELS.items() if (found := series(records, names))}
    if not panels:
        raise ValueError(f"{source}: no metric to plot ({len(records)} steps)")
    columns = 2 if len(panels) > 1 else 1
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(6 * columns, 3.2 * rows), squeeze=False)
    for ax, (title, found) in zip(axes.flat, panels.items()):
        for name, (steps, values) in found.items():
            ax.plot(steps, values, marker="o" if len(steps) < 30 else None, markersize=3, label=name)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    figure.suptitle(f"{Path(output_dir).resolve().name}: steps {records[0]['step']}-{records[-1]['step']}")
    figure.tight_layout()
    target = Path(out) if out is not None else Path(output_dir) / "metrics.png"
    figure.savefig(target, dpi=100)
    plt.close(figure)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="olmorl-train plot", description=__doc__.split("\n\n")[0])
    parser.add_argument("output_dir", help="the run's output_dir (holds metrics.jsonl)")
    parser.add_argument("--out", "-o", help="PNG to write (default: OUTPUT_DIR/metrics.png)")
    args = parser.parse_args(argv)
    try:
        target = plot_run(args.output_dir, args.out)
    except ImportError:
        print("olmorl-train plot: error: needs matplotlib (pip install 'olmorl[train]')", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"olmorl-train plot: error: {exc}", file=sys.stderr)
        return 1
    print(target)
    return 0
