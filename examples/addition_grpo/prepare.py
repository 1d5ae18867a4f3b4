"""Build the toy run's inputs under ./work: a 1.2M-parameter char-level Llama, the addition data as RLVR
JSONL rows (verifier `math`, answers in \\boxed{}), and a short supervised warm start.

    python prepare.py [--steps 200] [--hidden 192]     # ~1-3 min on 2 CPU cores
    olmorl-train --config run.yaml                     # GRPO; starts a local olmorl-rewards on loopback
    python prepare.py --teacher-steps 400              # also work/teacher, for distill.yaml
"""

import argparse
import time
from pathlib import Path

import torch

from olmorl.trainer._tiny import addition_rows, build_tiny_llama, train_teacher, warm_start, write_jsonl


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="work")
    parser.add_argument("--steps", type=int, default=200, help="warm-start steps (batch 128)")
    parser.add_argument("--hidden", type=int, default=192)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--teacher-steps", type=int, default=0,
                        help="also a distillation teacher in work/teacher: the warm-started model, this many steps more")
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    build_tiny_llama(out / "model", hidden=args.hidden, layers=2)
    train, held_out = addition_rows(seed=0)
    write_jsonl(train, out / "train.jsonl")
    write_jsonl(held_out, out / "eval.jsonl")
    start = time.perf_counter()
    warm_start(out / "model", train, steps=args.steps, batch_size=128, lr=args.lr)
    print(f"warm start: {time.perf_counter() - start:.0f} s; {len(train)} train / {len(held_out)} held-out prompts "
          f"in {out}/")
    if args.teacher_steps:
        start = time.perf_counter()
        train_teacher(out / "model", out / "teacher", train, steps=args.teacher_steps)
        print(f"teacher: {args.teacher_steps} more steps in {time.perf_counter() - start:.0f} s ({out}/teacher)")


if __name__ == "__main__":
    main()
