"""Longest trainable sequence at a fixed memory budget: naive learner vs the long-context optimizations.

One learner step (forward, backward, AdamW) on a single sequence of L tokens (32 prompt + L-32 completion)
of a Llama with a 32k vocabulary. Configurations, in the seed's ablation style:
  naive            full [L, vocab] logits (log_softmax + gather), activations kept
  + chunked head   logprobs over token chunks, logits recomputed in backward (no [L, vocab] tensor)
  + checkpointing  decoder-layer activations recomputed in backward (transformers activation checkpointing)
  all              chunked head + activation checkpointing
For each, L doubles from --start until the step's peak memory exceeds --budget-mib, then a bisection finds
the longest L that fits (to --resolution tokens). Every trial runs in a fresh subprocess; its memory is the
growth of peak RSS (VmHWM) over the RSS once the model exists (weights are outside the budget).
Usage: python benchmarks/trainer_long_context.py [--budget-mib 1024 --max-len 65536]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

CONFIGS = {
    "naive": {"logprob_impl": "naive"},
    "+ chunked head": {"logprob_impl": "chunked"},
    "+ checkpointing": {"logprob_impl": "naive", "activation_checkpointing": True},
    "all (chunked + checkpointing)": {"logprob_impl": "chunked", "activation_checkpointing": True},
}


def _status_kib(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def child(config: str, length: int, args) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from olmorl.trainer.learners._plain import Learner
    from olmorl.trainer.learners._samples import TrainSample
    from olmorl.trainer._objective import LossSettings

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=4 * args.hidden,
                      num_hidden_layers=args.layers, num_attention_heads=args.heads, max_position_embeddings=2 * args.max_len,
                      tie_word_embeddings=True)
    model = LlamaForCausalLM(cfg)
    learner = Learner(model, loss=LossSettings(), learning_rate=1e-5, micro_batch_tokens=10**9, **CONFIGS[config])
    prompt = torch.randint(0, args.vocab, (32,)).tolist()
    completion = torch.randint(0, args.vocab, (length - 32,)).tolist()
    sample = TrainSample(prompt, completion, [-10.0] * len(completion), [0] * len(completion), advantage=1.0)
    base = _status_kib("VmRSS")
    start = time.perf_counter()
    stats = learner.train_step([sample])
    print(json.dumps({"peak_mib": (_status_kib("VmHWM") - base) / 1024, "seconds": time.perf_counter() - start,
                      "loss": stats["loss"]}))


def trial(config: str, length: int, args) -> dict:
    cmd = [sys.executable, __file__, "--child", config, "--length", str(length)] + [
        f"--{k.replace('_', '-')}={getattr(args, k)}" for k in ("vocab", "hidden", "layers", "heads", "threads", "max_len")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:  # killed for memory, or failed: counts as not fitting
        return {"peak_mib": float("inf"), "seconds": float("nan"), "error": proc.stderr[-300:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def longest(config: str, args) -> tuple[int, dict, list]:
    log = []

    def fits(length: int) -> bool:
        result = trial(config, length, args)
        log.append((length, result))
        print(f"  {config:30s} L={length:6d}: {result['peak_mib']:8.0f} MiB  {result['seconds']:6.1f} s", flush=True)
        return result["peak_mib"] <= args.budget_mib

    good, bad = 0, None
    length = args.start
    while length <= args.max_len:
        if not fits(length):
            bad = length
            break
        good = length
        length *= 2
    if bad is None:
        return good, dict(log)[good], log  # the cap, not the budget, stopped it
    while good and bad - good > args.resolution:
        mid = (good + bad) // 2 // 32 * 32
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good, (dict(log).get(good) or {}), log


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--budget-mib", type=float, default=1024)
    p.add_argument("--start", type=int, default=512)
    p.add_argument("--max-len", type=int, default=32768)
    p.add_argument("--resolution", type=int, default=256)
    p.add_argument("--vocab", type=int, default=32768)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated subset of the configurations")
    p.add_argument("--child", default=None)
    p.add_argument("--length", type=int, default=0)
    args = p.parse_args()
    if args.child:
        child(args.child, args.length, args)
        return
    print(f"budget {args.budget_mib:.0f} MiB over the loaded model; Llama vocab {args.vocab}, hidden {args.hidden}, "
          f"{args.layers} layers; one step on one L-token sequence; cap {args.max_len}", flush=True)
    rows = []
    for config in args.configs.split(","):
        length, result, _ = longest(config, args)
        rows.append((config, length, result))
    base = rows[0][1] or 1
    print("\n| configuration | longest L within budget | peak MiB at that L | step s at that L | vs first row |")
    print("|---|---|---|---|---|")
    for config, length, result in rows:
        capped = " (cap)" if length >= args.max_len else ""
        print(f"| {config} | {length}{capped} | {result.get('peak_mib', float('nan')):.0f} | "
              f"{result.get('seconds', float('nan')):.1f} | {length / base:.1f}x |")


if __name__ == "__main__":
    main()
