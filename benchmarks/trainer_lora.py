"""LoRA against a full fine-tune of the same model, in one run: the learner's peak memory and step time, and the
bytes and time of one weight sync to an `olmorl-engine` server over HTTP.

Each variant runs in a fresh child process (so its peak RSS is its own): it loads the model, builds the plain
torch learner (`lora_rank` 0 or R, every linear layer but the head adapted), trains `--steps` steps on the same
synthetic batch (random token ids; the loss value does not matter here), and after each step pushes
`learner.weights()` to an engine server started on the base model (`RemoteEngine.update_weights`: the safetensors
file written to /dev/shm, the server loads it and applies it; the time returns when the server acknowledges).
"Learner memory" is the child's peak RSS after the model is loaded (the peak reset then) minus its RSS with the
model loaded: gradients, optimizer state, activations and the sync's copy of the weights. "Grad+Adam" is what
the trainable parameters' gradients and two Adam moments take by count (3 x 4 bytes each). CPU, 1 torch thread
per process.

    python benchmarks/trainer_lora.py [--hidden 512] [--layers 4] [--rank 16] [--steps 4] [--batch 16]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from olmorl.trainer import TrainConfig  # noqa: E402

VOCAB = 32000


def build_model(out: Path, hidden: int, layers: int) -> int:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=4 * hidden, num_hidden_layers=layers,
                      num_attention_heads=8, max_position_embeddings=256, tie_word_embeddings=False,
                      pad_token_id=0, bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(str(out))
    return sum(p.numel() for p in model.parameters())


def _status_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (peak since the last reset) of this process, in MiB."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":")) / 1024


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:  # "5": reset the peak RSS (VmHWM) to the current RSS
        f.write("5")


def child(args: argparse.Namespace) -> dict:
    from transformers import AutoModelForCausalLM

    from olmorl.trainer.engines._http import RemoteEngine
    from olmorl.trainer.engines._server import EngineServerProcess
    from olmorl.trainer.learners._build import build_local_learner
    from olmorl.trainer.learners._samples import TrainSample

    torch.set_num_threads(1)
    server = EngineServerProcess(args.model, log_path=os.devnull, threads=1,
                                 extra_args=["--max-new-tokens", "1", "--eos-token-id", "2", "--pad-token-id", "0"])
    server.start()
    try:
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
        loaded_mb = _status_mb("VmRSS")
        _reset_peak()  # loading the model peaks higher than holding it; the learner's peak is what follows
        cfg = TrainConfig(lora_rank=args.rank if args.variant == "lora" else 0, lora_alpha=2 * args.rank,
                          learning_rate=1e-4, micro_batch_tokens=args.batch * 64)
        learner = build_local_learner(cfg, model)
        g = torch.Generator().manual_seed(0)
        samples = [TrainSample(torch.randint(3, VOCAB, (16,), generator=g).tolist(),
                               torch.randint(3, VOCAB, (48,), generator=g).tolist(), [-10.0] * 48, [0] * 48,
                               advantage=1.0 if i % 2 else -1.0) for i in range(args.batch)]
        engine = RemoteEngine(server.url, sync_timeout_s=300, ready_timeout_s=300)
        engine.start()
        step_s, sync_s = [], []
        for version in range(1, args.steps + 1):
            start = time.perf_counter()
            learner.train_step(samples)
            step_s.append(time.perf_counter() - start)
            weights = learner.weights()
            start = time.perf_counter()
            engine.update_weights(weights, version)
            sync_s.append(time.perf_counter() - start)
        engine.stop()
        peak_mb = _status_mb("VmHWM")
        trainable = sum(p.numel() for p in learner.model.parameters() if p.requires_grad)
        return {"variant": args.variant, "trainable": trainable, "loaded_mb": loaded_mb, "peak_mb": peak_mb,
                "learner_mb": peak_mb - loaded_mb, "step_s": statistics.median(step_s[1:] or step_s),
                "sync_bytes": sum(t.numel() * t.element_size() for t in weights.values()), "sync_tensors": len(weights),
                "sync_s": statistics.median(sync_s[1:] or sync_s)}
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch", type=int, default=16, help="samples per step (16 prompt + 48 completion tokens)")
    parser.add_argument("--variant", choices=("full", "lora"), help=argparse.SUPPRESS)  # the child's side
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(child(args)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        params = build_model(Path(tmp) / "model", args.hidden, args.layers)
        rows = []
        for variant in ("full", "lora"):
            cmd = [sys.executable, __file__, "--variant", variant, "--model", str(Path(tmp) / "model"),
                   "--rank", str(args.rank), "--steps", str(args.steps), "--batch", str(args.batch)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            rows.append(json.loads(out.strip().splitlines()[-1]))
    print(f"model: Llama, hidden {args.hidden}, {args.layers} layers, vocab {VOCAB}: {params / 1e6:.1f}M parameters "
          f"({params * 4 / 2**20:.0f} MiB fp32); LoRA rank {args.rank} on every linear layer but the head; "
          f"{args.batch} samples x 64 tokens per step, {args.steps} steps; CPU, 1 thread")
    print(f"{'':6s} {'trainable':>11s} {'grad+Adam MiB':>14s} {'learner MiB':>12s} {'peak RSS MiB':>13s} "
          f"{'step s':>8s} {'sync MiB':>10s} {'sync tensors':>13s} {'sync s':>8s}")
    for r in rows:
        print(f"{r['variant']:6s} {r['trainable'] / 1e6:10.2f}M {r['trainable'] * 12 / 2**20:14.1f} "
              f"{r['learner_mb']:12.0f} {r['peak_mb']:13.0f} {r['step_s']:8.2f} {r['sync_bytes'] / 2**20:10.2f} "
              f"{r['sync_tensors']:13d} {r['sync_s']:8.3f}")
    full, lora = rows
    print(f"LoRA / full: learner memory {lora['learner_mb'] / full['learner_mb']:.2f}x, step time "
          f"{lora['step_s'] / full['step_s']:.2f}x, sync bytes {lora['sync_bytes'] / full['sync_bytes']:.4f}x, "
          f"sync time {lora['sync_s'] / full['sync_s']:.2f}x")


if __name__ == "__main__":
    main()
