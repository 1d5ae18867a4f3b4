"""Wall-clock to held-out accuracy 0.8 on the toy addition task: `olmorl-train` vs TRL's `GRPOTrainer`.

Same model (the 1.2M-parameter char-level Llama of examples/addition_grpo, warm-started once and copied to
both), same train / held-out rows, same machine, one run after the other. Settings are the example's
(examples/addition_grpo/run.yaml) and their closest TRL equivalents:

| setting | olmorl-train | TRL GRPOTrainer |
|---|---|---|
| prompts x completions per step | 32 x 8 (32 groups with reward variance: zero-std filtering + active sampling) | 32 x 8 (per_device_train_batch_size 256, num_generations 8; no filtering) |
| completion cap, sampling | 12 tokens, T=1, no top-p/top-k | same |
| advantage | group-centred, no std | scale_rewards="none" |
| loss | token-level over the batch, clip 0.2 / 0.272, truncated IS (cap 2) | loss_type="dapo", epsilon 0.2 / epsilon_high 0.272 |
| KL | none | beta=0 |
| optimiser | AdamW 2e-4, betas (0.9, 0.99), 10 warm-up steps, grad clip 1 | same (constant_with_warmup) |
| truncation | no EOS within 12 tokens scores 0 | the same rule in the reward function |
| reward | `math` verifier of a local olmorl-rewards over HTTP | the same server, through olmorl.clients.trl.math_reward |
| generation | continuous-batching engine, 1 step async, inflight weight updates | HF generate, synchronous |
| threads | engine and learner threads, 1 torch thread each | 2 torch threads (the whole machine) |

Both are evaluated with the same function (olmorl.trainer._eval.evaluate: `--eval-prompts` held-out prompts,
2 sampled completions each at T=1, scored by the same server) every `--eval-every` steps; the time spent
evaluating is subtracted from both clocks. A run stops at the first evaluation at or above `--target` or when
its RL wall-clock passes `--budget-min`.

Usage: python benchmarks/trainer_vs_trl.py [--target 0.8] [--budget-min 25] [--work benchmarks/.trl_vs]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_CONFIG = REPO / "examples" / "addition_grpo" / "run.yaml"


def prepare(work: Path, warm_steps: int, threads: int = 1) -> Path:
    """The warm-started model and the data, built once (the example's prepare.py recipe) with `threads` torch
    threads."""
    import torch

    from olmorl.trainer._tiny import addition_rows, build_tiny_llama, warm_start, write_jsonl

    base = work / "base"
    if (base / "ready").exists():
        return base
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    torch.set_num_threads(threads)
    build_tiny_llama(base / "model", hidden=192, layers=2)
    train, held_out = addition_rows(seed=0)
    write_jsonl(train, base / "train.jsonl")
    write_jsonl(held_out, base / "eval.jsonl")
    start = time.perf_counter()
    warm_start(base / "model", train, steps=warm_steps, batch_size=128, lr=1e-3)
    print(f"warm start: {warm_steps} steps in {time.perf_counter() - start:.0f} s ({threads} threads)", flush=True)
    (base / "ready").write_text("ok\n")
    return base


# -- olmorl-train ----------------------------------------------------------------------------------------
def run_olmorl(base: Path, out: Path, args, extra: tuple[str, ...] = ()) -> list[dict]:
    """The example's config (`extra` flags on top), stopped (SIGTERM) at the first evaluation that reaches the
    target."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cmd = [sys.executable, "-m", "olmorl.trainer._cli", "--config", str(EXAMPLE_CONFIG),
           "--model", str(base / "model"), "--train-files", f"[{base / 'train.jsonl'}]",
           "--eval-files", f"[{base / 'eval.jsonl'}]", "--output-dir", str(out), "--eval-every", str(args.eval_every),
           "--eval-max-prompts", str(args.eval_prompts), "--total-steps", "100000", "--save-every", "0",
           "--resume", "false", "--tensorboard", "false", "--log-every", "20", *extra]
    log = open(out / "stdout.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    metrics = out / "metrics.jsonl"
    curve: list[dict] = []
    started = time.perf_counter()
    try:
        while proc.poll() is None:
            time.sleep(1.0)
            curve = olmorl_curve(metrics)
            if curve and (curve[-1]["accuracy"] >= args.target or curve[-1]["rl_wall_s"] > args.budget_min * 60):
                break
            if args.wall_limit_s and time.perf_counter() - started > args.wall_limit_s:
                print(f"{out.name}: stopped at its wall-clock limit, {args.wall_limit_s:.0f} s", flush=True)
                break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the trainer stops its engine and reward server on SIGTERM
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        log.close()
    if proc.returncode not in (0, -signal.SIGTERM, 143):
        raise RuntimeError(f"olmorl-train failed ({proc.returncode}); see {out / 'stdout.log'}")
    return olmorl_curve(metrics)


def olmorl_curve(path: Path) -> list[dict]:
    """Held-out accuracy against RL wall-clock (evaluation time excluded) from the trainer's metrics.jsonl."""
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not rows or "eval/accuracy" not in rows[0]:
        return []
    start, eval_total, steps_s, curve = rows[0]["time"], 0.0, [], []
    for row in rows[1:]:
        eval_total += row.get("eval_s", 0.0)
        if "step_s" in row:
            steps_s.append(row["step_s"])
        if "eval/accuracy" in row:
            curve.append({"step": row["step"], "rl_wall_s": row["time"] - start - eval_total,
                          "accuracy": row["eval/accuracy"], "greedy": row["eval/greedy_accuracy"],
                          "step_s_median": statistics.median(steps_s)})
    return [{"step": 0, "rl_wall_s": 0.0, "accuracy": rows[0]["eval/accuracy"],
             "greedy": rows[0]["eval/greedy_accuracy"], "step_s_median": 0.0}] + curve


# -- TRL GRPOTrainer (run in a child process: `--trl-child`) ---------------------------------------------
def trl_child(base: Path, out: Path, args) -> None:
    import asyncio
    import functools

    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from olmorl.clients.trl import math_reward
    from olmorl.rewards.service._local import LocalRewardServer
    from olmorl.trainer._config import TrainConfig
    from olmorl.trainer._data import build_prompts, read_rows
    from olmorl.trainer._eval import evaluate
    from olmorl.trainer._rewards import GroupScorer

    torch.set_num_threads(args.trl_threads)
    tokenizer = AutoTokenizer.from_pretrained(str(base / "model"))
    eos = tokenizer.eos_token_id
    server = LocalRewardServer(workers=1, log_path=str(out / "reward-server.log"))
    server.start()
    url = server.url

    async def addition_reward(prompts, completions, completion_ids, **columns):
        """The math verifier over HTTP; no EOS within the cap scores 0 (olmorl-train's truncation=penalize)."""
        rewards = await math_reward(prompts, completions, base_url=url, **columns)
        return [r if eos in ids else 0.0 for r, ids in zip(rewards, completion_ids)]

    eval_config = TrainConfig(max_new_tokens=12, temperature=1.0, eval_samples=2, truncation="penalize",
                              seed=0)
    eval_prompts = build_prompts(read_rows(base / "eval.jsonl"), tokenizer, source="eval",
                                 max_prompt_tokens=64)[:args.eval_prompts]
    curve_path = out / "curve.jsonl"

    def evaluate_now(model) -> dict:
        async def run():
            scorer = GroupScorer([url], api_key=None, timeout_s=60.0, batch_size=256, max_wait_s=60.0)
            try:
                return await evaluate(model, tokenizer, eval_prompts, scorer, eval_config)
            finally:
                await scorer.close()
        return asyncio.run(run())

    class Clock(TrainerCallback):
        """RL wall-clock without evaluation; evaluates every `eval_every` steps and stops at the target."""

        def __init__(self):
            self.eval_total, self.step_times, self.last = 0.0, [], None

        def on_train_begin(self, a, state, control, model=None, **kw):
            self.record(0, model)
            self.start = self.last = time.perf_counter()

        def on_step_end(self, a, state, control, model=None, **kw):
            now = time.perf_counter()
            self.step_times.append(now - self.last)
            self.last = now
            if state.global_step % args.eval_every:
                return
            rl_wall = now - self.start - self.eval_total
            t0 = time.perf_counter()
            accuracy = self.record(state.global_step, model, rl_wall)
            self.eval_total += time.perf_counter() - t0
            self.last = time.perf_counter()
            if accuracy >= args.target or rl_wall > args.budget_min * 60:
                control.should_training_stop = True

        def record(self, step, model, rl_wall=0.0) -> float:
            scores = evaluate_now(model)
            row = {"step": step, "rl_wall_s": rl_wall, "accuracy": scores["eval/accuracy"],
                   "greedy": scores["eval/greedy_accuracy"],
                   "step_s_median": statistics.median(self.step_times) if self.step_times else 0.0}
            with curve_path.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(row, flush=True)
            return row["accuracy"]

    rows = [{"prompt": r["messages"], "ground_truth": r["ground_truth"], "verifier": r["dataset"]}
            for r in read_rows(base / "train.jsonl")]
    config = GRPOConfig(
        output_dir=str(out / "trl"), use_cpu=True, bf16=False, seed=0, report_to=[], save_strategy="no",
        logging_steps=20, disable_tqdm=True, max_steps=100000,
        per_device_train_batch_size=256, num_generations=8, max_completion_length=12,
        temperature=1.0, top_p=1.0, top_k=0,
        beta=0.0, loss_type="dapo", epsilon=0.2, epsilon_high=0.272, scale_rewards="none",
        learning_rate=2e-4, lr_scheduler_type="constant_with_warmup", warmup_steps=10,
        adam_beta1=0.9, adam_beta2=0.99, weight_decay=0.0, max_grad_norm=1.0,
        gradient_checkpointing=False, model_init_kwargs={"dtype": torch.float32},
    )
    trainer = GRPOTrainer(model=str(base / "model"), processing_class=tokenizer, args=config,
                          train_dataset=Dataset.from_list(rows), reward_funcs=[addition_reward],
                          callbacks=[Clock()])
    try:
        trainer.train()
    finally:
        server.stop()


def run_trl(base: Path, out: Path, args) -> list[dict]:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cmd = [sys.executable, __file__, "--trl-child", "--work", str(args.work), "--target", str(args.target),
           "--budget-min", str(args.budget_min), "--eval-every", str(args.eval_every),
           "--eval-prompts", str(args.eval_prompts), "--trl-threads", str(args.trl_threads)]
    with open(out / "stdout.log", "w") as log:
        rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
    if rc != 0:
        raise RuntimeError(f"TRL run failed ({rc}); see {out / 'stdout.log'}")
    return [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]


# -- report ------------------------------------------------------------------------------------------------
def time_to(curve: list[dict], target: float) -> dict | None:
    return next((p for p in curve if p["accuracy"] >= target), None)


def print_curves(curves: dict[str, list[dict]], target: float) -> dict[str, float]:
    """Each curve as a table, then one summary row per curve; returns the RL wall-clock (s) of those that reached
    the target."""
    print(f"\nHeld-out sampled accuracy (T=1) against RL wall-clock, evaluation time excluded:")
    for name, curve in curves.items():
        print(f"\n{name}\n| step | RL wall (s) | sampled | greedy | median step (s) |\n|---|---|---|---|---|")
        for p in curve:
            print(f"| {p['step']} | {p['rl_wall_s']:.0f} | {p['accuracy']:.3f} | {p['greedy']:.3f} | "
                  f"{p['step_s_median']:.2f} |")
    print(f"\n| trainer | steps to {target} | RL wall to {target} (s) | median step (s) | best sampled |")
    print("|---|---|---|---|---|")
    reached = {}
    for name, curve in curves.items():
        if not curve:
            print(f"| {name} | no evaluation recorded | | | |")
            continue
        hit = time_to(curve, target)
        best = max(p["accuracy"] for p in curve)
        last = curve[-1]
        if hit:
            reached[name] = hit["rl_wall_s"]
            print(f"| {name} | {hit['step']} | {hit['rl_wall_s']:.0f} | {hit['step_s_median']:.2f} | {best:.3f} |")
        else:
            print(f"| {name} | not in {last['step']} steps | > {last['rl_wall_s']:.0f} | {last['step_s_median']:.2f} "
                  f"| {best:.3f} |")
    return reached


def print_report(curves: dict[str, list[dict]], target: float) -> None:
    reached = print_curves(curves, target)
    names = list(curves)
    if len(reached) == 2:
        print(f"\nspeed-up (TRL wall / olmorl wall to {target}): {reached[names[1]] / reached[names[0]]:.2f}x")
    elif names[0] in reached and curves[names[1]]:
        print(f"\nspeed-up: > {curves[names[1]][-1]['rl_wall_s'] / reached[names[0]]:.2f}x "
              f"(TRL did not reach {target} within its budget)")
    else:
        print(f"\nolmorl-train did not reach {target} within the budget")


def comparison_parser(description: str) -> argparse.ArgumentParser:
    """The flags of a wall-clock-to-accuracy comparison on the toy task (this one and trainer_distillation.py)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--work", type=Path, default=REPO / "benchmarks" / ".trl_vs")
    p.add_argument("--target", type=float, default=0.8)
    p.add_argument("--budget-min", type=float, default=25.0, help="RL wall-clock budget per run (minutes)")
    p.add_argument("--wall-limit-s", type=float, default=0.0,
                   help="also stop an olmorl-train run when its whole wall-clock (start-up and evaluations "
                        "included) passes this (0: no limit); its curve keeps the evaluations done by then")
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--eval-prompts", type=int, default=400)
    p.add_argument("--warm-steps", type=int, default=200, help="supervised warm-start steps of the shared start")
    return p


def main() -> None:
    p = comparison_parser(__doc__.split("\n")[0])
    p.add_argument("--trl-threads", type=int, default=2)
    p.add_argument("--only", choices=["olmorl", "trl"], help="run one side (the other's last curve is reused)")
    p.add_argument("--trl-child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    base = args.work / "base"
    if args.trl_child:
        trl_child(base, args.work / "trl", args)
        return
    base = prepare(args.work, args.warm_steps)
    curves = {}
    if args.only != "trl":
        curves["olmorl-train"] = run_olmorl(base, args.work / "olmorl", args)
    else:
        curves["olmorl-train"] = olmorl_curve(args.work / "olmorl" / "metrics.jsonl")
    if args.only != "olmorl":
        curves["TRL GRPOTrainer"] = run_trl(base, args.work / "trl", args)
    else:
        previous = args.work / "trl" / "curve.jsonl"
        curves["TRL GRPOTrainer"] = ([json.loads(x) for x in previous.read_text().splitlines()]
                                     if previous.exists() else [])
    print_report(curves, args.target)


if __name__ == "__main__":
    main()
