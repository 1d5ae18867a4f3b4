"""`olmorl-train --config run.yaml [--field-name value ...]`: the async GRPO trainer.
`olmorl-train filter ...`: offline difficulty filtering. `olmorl-train plot OUTPUT_DIR`: metric curves as PNG.
`olmorl-train export CHECKPOINT OUT`: a LoRA checkpoint merged into a Hugging Face model directory."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys

import typing

from olmorl import __version__
from olmorl.trainer._config import (
    TrainConfig,
    add_config_flags,
    field_comments,
    field_sections,
    load_config,
    overrides_from_args,
)
from olmorl.trainer._device import resolve_device
from olmorl.trainer._model_source import ModelNotFound, check_model

SUBCOMMANDS = """subcommands:
  filter     offline difficulty filter: keep prompts whose pass rate is in range (olmorl-train filter --help)
  plot       PNG curves of a run's metrics.jsonl (olmorl-train plot --help)
  export     merge a LoRA checkpoint's adapter into a Hugging Face model directory (olmorl-train export --help)

settings: every config field is a flag (--learning-rate 3e-4, --train-files [a.jsonl,b.parquet]; values are
YAML) and a key of the --config file; `olmorl-train --help-config` lists them all with type, default and
meaning, grouped in sections."""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "filter":  # `olmorl-train filter ...`: offline difficulty filtering
        from olmorl.trainer._filter import main as filter_main

        return filter_main(argv[1:])
    if argv and argv[0] == "export":  # `olmorl-train export CHECKPOINT OUT`: a LoRA adapter merged into its base
        from olmorl.trainer._export import main as export_main

        return export_main(argv[1:])
    if argv and argv[0] == "plot":  # `olmorl-train plot OUTPUT_DIR`: curves from metrics.jsonl
        from olmorl.trainer._plot import main as plot_main

        return plot_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="olmorl-train", usage="%(prog)s [--config FILE] [--FIELD VALUE ...] | filter ... | plot ... | export ...",
        description="Async GRPO (OlmoRL defaults) with rewards from an olmorl reward server.",
        epilog=SUBCOMMANDS, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="YAML file of config fields")
    parser.add_argument("--help-config", action="store_true",
                        help="list every config field (type, default, meaning) by section and exit")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_config_flags(parser)
    args = parser.parse_args(argv)
    if args.help_config:
        print(config_help())
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per reward request is noise
    try:
        config = resolve_device(load_config(args.config, overrides_from_args(args)))
    except (ValueError, OSError) as exc:
        print(f"olmorl-train: bad config: {exc}", file=sys.stderr)
        return 2
    if not config.model or not config.train_files:
        print("olmorl-train: `model` and `train_files` are required", file=sys.stderr)
        return 2
    try:
        check_model(config.model)
    except ModelNotFound as exc:
        print(f"olmorl-train: {exc}", file=sys.stderr)
        return 2
    return train(config)


def train(config: TrainConfig) -> int:
    """Run the trainer; Ctrl-C ends it with one line and exit status 130, no traceback."""
    # SIGTERM unwinds like Ctrl-C, so the embedded reward server and the engine thread are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    launched = config.learner_backend == "deepspeed" and not config.ray_learner_ranks  # ranks started by torchrun
    if launched:
        from olmorl.trainer._scaleout import is_follower_rank, run_follower
        from olmorl.trainer.learners._deepspeed import leave_process_group

        if is_follower_rank():  # ranks > 0 train their shares when rank 0 (the loop) says so
            run_follower(config)
            leave_process_group()
            return 0
    try:
        from olmorl.trainer._loop import Trainer

        trainer = Trainer(config)
    except KeyboardInterrupt:
        print("olmorl-train: interrupted (Ctrl-C) while loading the model and data", flush=True)
        return 130
    try:
        trainer.run()
    except KeyboardInterrupt:
        return 130  # run() printed the line that says so
    finally:
        if hasattr(trainer.learner, "close"):  # releases the follower ranks
            trainer.learner.close()
    if launched:
        leave_process_group()
    return 0


def config_help() -> str:
    """Every TrainConfig field as `--flag  type  default  meaning`, under the sections of _config.py."""
    hints = typing.get_type_hints(TrainConfig)
    defaults = TrainConfig().to_dict()
    comments = field_comments()
    lines = ["Every field is a flag (--field-name VALUE, parsed as YAML) and a key of the --config file."]
    for section, names in field_sections().items():
        lines.append(f"\n{section}:")
        for name in names:
            kind = str(hints[name]).replace("typing.", "").replace("<class '", "").replace("'>", "")
            flag = "--" + name.replace("_", "-")
            lines.append(f"  {flag:28s} {kind:20s} {json.dumps(defaults[name]):14s} {comments[name]}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
