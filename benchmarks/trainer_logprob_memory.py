"""Peak memory of the learner's token-logprob head: naive [N, V] logits vs chunked vs torch's fused
linear cross-entropy, forward + backward, at 8,192 tokens x 32,768 vocab (hidden 512) on CPU.

Each method runs in a fresh subprocess; the number is the growth of the process's peak RSS (VmHWM) over its
RSS after the inputs exist. Usage: python benchmarks/trainer_logprob_memory.py [--tokens 8192 --vocab 32768]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def _status_kib(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def child(impl: str, tokens: int, vocab: int, hidden: int, chunk: int) -> None:
    import torch

    from olmorl.trainer.learners._plain import token_logprobs

    torch.set_num_threads(1)
    torch.manual_seed(0)
    head = torch.nn.Linear(hidden, vocab, bias=False)
    h = torch.randn(tokens, hidden, requires_grad=True)
    targets = torch.randint(0, vocab, (tokens,))
    weights = torch.randn(tokens)
    base = _status_kib("VmRSS")
    start = time.perf_counter()
    logp, _ = token_logprobs(h, head, targets, impl=impl, chunk=chunk)
    (logp * weights).sum().backward()
    elapsed = time.perf_counter() - start
    peak = _status_kib("VmHWM")
    print(json.dumps({"impl": impl, "peak_mib": (peak - base) / 1024, "seconds": elapsed,
                      "logp_sum": float(logp.sum()), "grad_w_norm": float(head.weight.grad.norm())}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--chunk", type=int, default=512)
    parser.add_argument("--child", default=None)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.tokens, args.vocab, args.hidden, args.chunk)
        return
    rows = []
    for impl in ("naive", "chunked", "torch_lce"):
        out = subprocess.run([sys.executable, __file__, "--child", impl, "--tokens", str(args.tokens),
                              "--vocab", str(args.vocab), "--hidden", str(args.hidden), "--chunk", str(args.chunk)],
                             capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    naive = rows[0]
    print(f"token logprobs + backward, {args.tokens} tokens x {args.vocab} vocab x {args.hidden} hidden, "
          f"chunk {args.chunk}, 1 thread")
    print(f"{'method':10s} {'peak MiB':>10s} {'vs naive':>9s} {'seconds':>8s} {'logp sum':>14s} {'|dW|':>10s}")
    for r in rows:
        print(f"{r['impl']:10s} {r['peak_mib']:10.0f} {r['peak_mib'] / naive['peak_mib']:9.3f} {r['seconds']:8.2f} "
              f"{r['logp_sum']:14.2f} {r['grad_w_norm']:10.4f}")


if __name__ == "__main__":
    main()
