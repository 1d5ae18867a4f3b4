"""Sync vs async GRPO on the same model, data and machine, with long-tail completion lengths.

Ablation in the style of the Olmo 3 report's table: static batching -> + continuous batching -> + async
(1 step, weights swapped only when the engine is drained) -> + inflight updates. Every row is the real
`olmorl-train` loop (engine, reward server over HTTP, learner); only the completion lengths are set by this
harness: each prompt's completions run to a length drawn from a log-normal (median 40, capped at
--max-len), EOS disabled, as with reasoning traces. Zero-std filtering is off so every row trains the same
number of samples. Reports generated tokens/s and seconds per trained sample over the steps after the first.

A second table runs the same long tail under a staleness bound `max_staleness` (AReaL eta) with each
`staleness_policy`: `drop` (too-stale groups are discarded) and `throttle` (rollouts start late enough that
none is), beside no bound, and reports the fraction of finished groups dropped, generated and trained tokens/s.

Usage: python benchmarks/trainer_async_ablation.py [--steps 6 --prompts 16 --group 8 --max-len 256]
       python benchmarks/trainer_async_ablation.py --only staleness [--eta 1]
"""

from __future__ import annotations

import argparse
import math
import random
import tempfile
import time
from pathlib import Path

import torch

from olmorl.rewards.service._local import LocalRewardServer
from olmorl.trainer import TrainConfig, Trainer
from olmorl.trainer._tiny import addition_rows, build_tiny_llama, fix_completion_lengths, write_jsonl

ROWS = [
    ("static batching, sync", dict(continuous_batching=False, async_steps=0, inflight_updates=True)),
    ("+ continuous batching", dict(continuous_batching=True, async_steps=0, inflight_updates=True)),
    ("+ async (1 step, drain to update)", dict(continuous_batching=True, async_steps=1, inflight_updates=False)),
    ("+ inflight updates", dict(continuous_batching=True, async_steps=1, inflight_updates=True)),
    ("+ engine in its own process", dict(continuous_batching=True, async_steps=1, inflight_updates=True,
                                         engine_process=True)),
]


def staleness_rows(eta: int) -> list[tuple[str, dict]]:
    inflight = dict(continuous_batching=True, async_steps=eta, inflight_updates=True)
    return [("no bound", inflight),
            (f"max_staleness {eta}, drop", {**inflight, "max_staleness": eta, "staleness_policy": "drop"}),
            (f"max_staleness {eta}, throttle", {**inflight, "max_staleness": eta, "staleness_policy": "throttle"})]


def long_tail_length(rng: random.Random, max_len: int) -> int:
    return max(4, min(max_len, int(math.exp(rng.gauss(math.log(40), 0.9)))))


def run(name: str, overrides: dict, base: dict, max_len: int) -> dict:
    cfg = TrainConfig(**{**base, **overrides})
    trainer = Trainer(cfg)
    rng = random.Random(1234)
    fix_completion_lengths(trainer, lambda _: long_tail_length(rng, max_len))
    start = time.perf_counter()
    history = trainer.run()
    wall = time.perf_counter() - start
    steady = history[1:]
    seconds = sum(h["step_s"] for h in steady)
    tokens = sum(h["gen_tokens_per_s"] * h["step_s"] for h in steady)
    samples = len(steady) * cfg.prompts_per_step * cfg.group_size
    dropped = sum(h["stale_dropped"] for h in history)
    trained = sum(h["groups_trained"] for h in history)
    return {"name": name, "tok_s": tokens / seconds, "s_per_sample": seconds / samples, "wall": wall,
            "trained_tok_s": sum(h["trained_tokens_per_s"] * h["step_s"] for h in steady) / seconds,
            "dropped_frac": dropped / (dropped + trained),
            "staleness_max": max(h.get("staleness_max", 0.0) for h in history),
            "learner_idle": sum(h["learner_idle_frac"] for h in steady) / len(steady),
            "engine_idle": sum(h["engine_idle_frac"] for h in steady) / len(steady),
            "staleness": sum(h.get("staleness_mean", 0.0) for h in steady) / len(steady)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--max-len", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=192)
    parser.add_argument("--engine-batch", type=int, default=64)
    parser.add_argument("--eta", type=int, default=1, help="max_staleness of the staleness table")
    parser.add_argument("--only", choices=["ablation", "staleness"], help="run one of the two tables")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp, LocalRewardServer(workers=1) as server:
        root = Path(tmp)
        build_tiny_llama(root / "model", hidden=args.hidden, layers=2, max_positions=args.max_len + 32)
        train, _ = addition_rows()
        write_jsonl(train, root / "train.jsonl")
        base = dict(model=str(root / "model"), train_files=(str(root / "train.jsonl"),), reward_urls=(server.url,),
                    group_size=args.group, prompts_per_step=args.prompts, max_new_tokens=args.max_len,
                    engine_batch_size=args.engine_batch, filter_zero_std=False, active_sampling=False,
                    learning_rate=1e-5, total_steps=args.steps, torch_threads=1, tensorboard=False, log_every=10**6,
                    save_every=10**6, keep_checkpoints=1)
        results, bounded = [], []
        for i, (name, overrides) in enumerate(ROWS if args.only != "staleness" else []):
            results.append(run(name, overrides, {**base, "output_dir": str(root / f"run{i}")}, args.max_len))
        for i, (name, overrides) in enumerate(staleness_rows(args.eta) if args.only != "ablation" else []):
            bounded.append(run(name, overrides, {**base, "output_dir": str(root / f"bound{i}")}, args.max_len))
    if results:
        print_ablation(results, args)
    if bounded:
        print_staleness(bounded, args)


def print_ablation(results: list[dict], args) -> None:
    first = results[0]
    print(f"\nasync ablation: {args.hidden}-hidden char Llama, {args.prompts} prompts x {args.group} samples/step, "
          f"long-tail lengths (median 40, max {args.max_len}), engine batch {args.engine_batch}, 1 torch thread, "
          f"{args.steps - 1} measured steps")
    print(f"{'configuration':36s} {'gen tok/s':>10s} {'vs static':>9s} {'s/sample':>9s} {'learner idle':>12s} "
          f"{'engine idle':>11s} {'staleness':>9s}")
    for r in results:
        print(f"{r['name']:36s} {r['tok_s']:10.0f} {r['tok_s'] / first['tok_s']:8.2f}x {r['s_per_sample'] * 1000:7.1f}ms "
              f"{r['learner_idle']:12.2f} {r['engine_idle']:11.2f} {r['staleness']:9.2f}")


def print_staleness(results: list[dict], args) -> None:
    print(f"\nstaleness policies: the same long tail, async_steps = max_staleness = {args.eta}, {args.steps} steps "
          f"({args.steps - 1} measured for tokens/s)")
    print(f"{'policy':32s} {'dropped groups':>14s} {'gen tok/s':>10s} {'trained tok/s':>13s} {'staleness max':>13s} "
          f"{'learner idle':>12s}")
    for r in results:
        print(f"{r['name']:32s} {r['dropped_frac']:14.3f} {r['tok_s']:10.0f} {r['trained_tok_s']:13.0f} "
              f"{r['staleness_max']:13.0f} {r['learner_idle']:12.2f}")


if __name__ == "__main__":
    main()
