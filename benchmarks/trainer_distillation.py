"""Wall-clock to held-out accuracy 0.8 on the toy addition task: on-policy distillation from a trained teacher
against RL (GRPO) from the same start.

The student is the 1.2M-parameter char-level Llama of examples/addition_grpo after its 200-step supervised warm
start (built once by benchmarks/trainer_vs_trl.py's `prepare`, shared with that benchmark). The teacher is the same
model given `--teacher-steps` more supervised steps (a longer warm start: it is "trained", not by this run's RL).
Both arms run `olmorl-train` with examples/addition_grpo/run.yaml, one after the other on the same machine (or side
by side, under the same load: `--only rl` and `--only distill` in two shells, same `--work`):

- RL: the file as it is (verifiable reward, group-centred advantages, zero-std filtering);
- distillation: the same plus `teacher_model`, `distill_loss` (`--distill-loss`, default full_reverse_kl: the
  reverse KL to the teacher over the whole vocabulary at each sampled position; `sampled`: each sampled token's
  advantage -(log p_student - log p_teacher)), `distill_weight 1` and `reward_weight 0`, and distill.yaml's
  sampling and rate: 256 prompts x 1 completion a step at learning rate 1e-3 (the same samples per step as RL's
  32 x 8; `--distill-group-size`, `--distill-prompts-per-step`, `--distill-learning-rate`); the reward server
  still scores the completions, for the logged reward only.

Both are evaluated every `--eval-every` steps on `--eval-prompts` held-out prompts (2 sampled completions each at
T=1, and greedy) by the trainer's own evaluation; its time is left out of the clock. A run stops at the first
evaluation at or above `--target`, when its wall-clock passes `--budget-min`, or when its whole wall-clock
(evaluations included) passes `--wall-limit-s`. `--only report` prints both arms' last curves, and
`--curves-json` writes them. scripts/distill-leg.sh runs it all on a 16-core machine within 540 s.

Usage: python benchmarks/trainer_distillation.py [--target 0.8] [--budget-min 18] [--teacher-steps 400]
       [--torch-threads 1] [--only rl|distill|prepare|report] [--curves-json PATH] [--work benchmarks/.trl_vs]
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trainer_vs_trl import comparison_parser, olmorl_curve, prepare, print_curves, run_olmorl  # noqa: E402


def prepare_teacher(base: Path, work: Path, steps: int, eval_prompts: int, threads: int = 1) -> tuple[Path, dict]:
    """The student's warm start continued for `steps` supervised steps (built once, `threads` torch threads), and
    its held-out accuracy."""
    import torch

    from olmorl.trainer._tiny import addition_rows, train_teacher

    teacher = work / "teacher"
    if not (teacher / "ready").exists():
        shutil.rmtree(teacher, ignore_errors=True)
        torch.set_num_threads(threads)
        start = time.perf_counter()
        train_teacher(base / "model", teacher / "model", addition_rows(seed=0)[0], steps=steps, log_every=100)
        print(f"teacher: {steps} more supervised steps in {time.perf_counter() - start:.0f} s ({threads} threads)",
              flush=True)
        (teacher / "accuracy.json").write_text(json.dumps(held_out_accuracy(teacher / "model", base, eval_prompts)))
        (teacher / "ready").write_text("ok\n")
    return teacher / "model", json.loads((teacher / "accuracy.json").read_text())


def held_out_accuracy(model_dir: Path, base: Path, eval_prompts: int) -> dict:
    """The trainer's evaluation (2 sampled at T=1, and greedy; truncation penalized) of a model directory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from olmorl.rewards.service._local import LocalRewardServer
    from olmorl.trainer._config import TrainConfig
    from olmorl.trainer._data import build_prompts, read_rows
    from olmorl.trainer._eval import evaluate
    from olmorl.trainer._rewards import GroupScorer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    prompts = build_prompts(read_rows(base / "eval.jsonl"), tokenizer, source="eval", max_prompt_tokens=64)
    config = TrainConfig(max_new_tokens=12, eval_samples=2, truncation="penalize")

    async def run(url: str) -> dict:
        scorer = GroupScorer([url], api_key=None, timeout_s=60.0, batch_size=256, max_wait_s=60.0)
        try:
            return await evaluate(model, tokenizer, prompts[:eval_prompts], scorer, config)
        finally:
            await scorer.close()

    with LocalRewardServer(workers=1) as server:
        return asyncio.run(run(server.url))


def main() -> None:
    p = comparison_parser(__doc__.split("\n")[0])
    p.add_argument("--teacher-steps", type=int, default=400, help="the teacher's further supervised steps")
    p.add_argument("--distill-weight", type=float, default=1.0)
    p.add_argument("--distill-loss", choices=["sampled", "full_reverse_kl", "full_forward_kl"], default="full_reverse_kl",
                   help="full_*_kl: the KL over the vocabulary at each sampled position (sampled: a one-token estimate)")
    p.add_argument("--reward-weight", type=float, default=0.0, help="the distillation arm's GRPO advantage weight")
    p.add_argument("--distill-learning-rate", type=float, default=1e-3, help="RL keeps run.yaml's 2e-4")
    p.add_argument("--distill-warmup-steps", type=int, default=10, help="RL keeps run.yaml's 10")
    p.add_argument("--distill-group-size", type=int, default=1,
                   help="completions per prompt of the distillation arm (RL keeps run.yaml's 8)")
    p.add_argument("--distill-prompts-per-step", type=int, default=256, help="RL keeps run.yaml's 32")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch threads of each arm (its engine and learner threads each use this many) and of the "
                        "preparation")
    p.add_argument("--curves-json", type=Path, help="also write both arms' curves (and the teacher's accuracy) here")
    p.add_argument("--only", choices=["rl", "distill", "prepare", "report"],
                   help="run one arm (the other's last curve is reused), or neither (report: both last curves)")
    args = p.parse_args()
    base = prepare(args.work, args.warm_steps, args.torch_threads)
    teacher, teacher_accuracy = prepare_teacher(base, args.work, args.teacher_steps, args.eval_prompts,
                                                args.torch_threads)
    print(f"teacher held-out accuracy: sampled {teacher_accuracy['eval/accuracy']:.3f}, "
          f"greedy {teacher_accuracy['eval/greedy_accuracy']:.3f}", flush=True)
    if args.only == "prepare":
        return
    threads = ("--torch-threads", str(args.torch_threads))
    distill_flags = ("--teacher-model", str(teacher), "--distill-loss", args.distill_loss,
                     "--reward-weight", str(args.reward_weight), "--distill-weight", str(args.distill_weight),
                     "--learning-rate", str(args.distill_learning_rate),
                     "--warmup-steps", str(args.distill_warmup_steps), "--group-size", str(args.distill_group_size),
                     "--prompts-per-step", str(args.distill_prompts_per_step))
    arms = {"rl": ("RL (GRPO, verifiable reward)", ()), "distill": ("on-policy distillation", distill_flags)}
    curves = {}
    for arm, (name, extra) in arms.items():
        out = args.work / f"distillation_{arm}"
        if args.only in (None, arm):
            load = os.getloadavg()[0]
            curves[name] = run_olmorl(base, out, args, threads + extra)
            print(f"{name}: load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at end", flush=True)
        else:
            curves[name] = olmorl_curve(out / "metrics.jsonl")
    reached = print_curves(curves, args.target)
    if args.curves_json:  # the flags both arms share with this run (each arm's full config: its stdout.log)
        shared = ("eval_every", "eval_prompts", "warm_steps", "teacher_steps", "reward_weight")
        settings = {k: v for k, v in vars(args).items() if k.startswith("distill_") or k in shared}
        args.curves_json.write_text(json.dumps({"target": args.target, "teacher": teacher_accuracy,
                                                "settings": settings, "curves": curves}, indent=1) + "\n")
    rl, distill = (reached.get(name) for name, _ in arms.values())
    if rl and distill:
        print(f"\nwall-clock to {args.target}: distillation {distill:.0f} s, RL {rl:.0f} s ({rl / distill:.2f}x sooner)")
    else:
        print(f"\nreached {args.target}: {sorted(reached) or 'neither'}")


if __name__ == "__main__":
    main()
