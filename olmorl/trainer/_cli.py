"""`olmorl-train --config run.yaml [--field-name value ...]`: the async GRPO trainer."""

from __future__ import annotations

import argparse
import logging
import signal
import sys

from olmorl.trainer._config import add_config_flags, field_comments, load_config, overrides_from_args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "filter":  # `olmorl-train filter ...`: offline difficulty filtering
        from olmorl.trainer._filter import main as filter_main

        return filter_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="olmorl-train",
        description="Async GRPO (OlmoRL defaults) with rewards from an olmorl reward server. Every config field "
                    "is also a flag: --learning-rate 3e-4, --train-files [a.jsonl,b.parquet] (values are YAML).")
    parser.add_argument("--config", help="YAML file of config fields")
    parser.add_argument("--help-config", action="store_true", help="list the config fields and exit")
    add_config_flags(parser)
    args = parser.parse_args(argv)
    if args.help_config:
        for name, comment in field_comments().items():
            print(f"{name:24s} {comment}")
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per reward request is noise
    try:
        config = load_config(args.config, overrides_from_args(args))
    except (ValueError, OSError) as exc:
        print(f"olmorl-train: bad config: {exc}", file=sys.stderr)
        return 2
    if not config.model or not config.train_files:
        print("olmorl-train: `model` and `train_files` are required", file=sys.stderr)
        return 2
    from olmorl.trainer._loop import Trainer

    # SIGTERM unwinds like Ctrl-C, so the embedded reward server and the engine thread are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if config.learner_backend == "deepspeed":
        from olmorl.trainer._scaleout import is_follower_rank, run_follower

        if is_follower_rank():  # ranks > 0 train their shares when rank 0 (the loop) says so
            run_follower(config)
            return 0
    trainer = Trainer(config)
    try:
        trainer.run()
    finally:
        if hasattr(trainer.learner, "close"):  # releases the follower ranks
            trainer.learner.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
