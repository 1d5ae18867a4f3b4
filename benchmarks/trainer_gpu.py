"""olmorl-train's CUDA path: the in-process torch engine generating and the plain torch learner stepping (OlmoRL
objective) on one GPU, full fine-tune then LoRA, in one process. Prints one table row per mode: parameters
(trainable), generation tokens/s, learner step time (median), weight-sync time (median) and peak GPU memory
(`torch.cuda.max_memory_allocated`); writes the same as JSON to $OUT/trainer_gpu.json when OUT is set.

The engine and learner are built by olmorl-train's own builders (`_scaleout.build_engine`,
`learners._build.build_local_learner`) from a `TrainConfig` with `device`, `engine_dtype` and `learner_dtype`
(on CUDA by default: a bf16 engine copy and the bfloat16_mixed learner, fp32 master weights and AdamW state).
The policy is Qwen2.5-0.5B's shape built from a config (random init, 494M parameters with the
151936-token embedding tied to the head); the tokenizer is built locally (`olmorl.trainer._tiny`: one token per
character, the vocabulary padded with four-letter filler words up to the model's, so every sampled id decodes).
Each step is synchronous: P prompts x G completions of exactly `--new-tokens` tokens (EOS ignored, so both
modes generate the same number of tokens) -> scored by the real `ifeval` verifier in this process -> group
advantages (`group_advantages`, centered) -> `Learner.train_step` on every completion (flat groups kept with
advantage 0: the learner's batch is the same size each step) -> `TorchEngine.update_weights` (full weights, or
the adapter only). Each prompt asks for a letter at least k1..k4 times (keywords:letter_frequency, reward = the
fraction followed); the k's lie around the count a uniformly random completion has, so a random-init policy's
groups vary. The first step is warm-up (CUDA kernels, allocator); the figures are over the steps after it.

    python benchmarks/trainer_gpu.py [--prompts 16] [--group 8] [--new-tokens 256] [--steps 6] [--budget-s 300]
    python benchmarks/trainer_gpu.py --tiny      # a small config on CPU (the test runs this)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from olmorl.trainer import TrainConfig  # noqa: E402
from olmorl.trainer._objective import group_advantages, is_zero_std  # noqa: E402
from olmorl.trainer._scaleout import build_engine  # noqa: E402
from olmorl.trainer._tiny import build_char_tokenizer  # noqa: E402
from olmorl.trainer.engines._torch import TorchEngine  # noqa: E402
from olmorl.trainer.engines._types import GenerationRequest  # noqa: E402
from olmorl.trainer.learners._build import build_local_learner  # noqa: E402
from olmorl.trainer.learners._samples import TrainSample  # noqa: E402

# Qwen2.5-0.5B's shape (its config.json), and a small one for CPU runs.
SHAPES = {
    "qwen2.5-0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                         num_key_value_heads=2, vocab_size=151936),
    "tiny": dict(hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=None),  # None: the character vocabulary alone
}
LETTERS = "etaoinsh"
THRESHOLDS = (0.6, 0.85, 1.1, 1.35)  # x the letter's expected count in a uniformly random completion


def build_policy(shape: dict, tokenizer, device: torch.device, dtype: torch.dtype, seed: int) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM, Qwen2Config

    cfg = Qwen2Config(**{**shape, "vocab_size": len(tokenizer)}, max_position_embeddings=4096,
                      tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id,
                      bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(seed)
    with torch.device(device):  # initialised where it runs: no 2 GB copy from host memory
        # built in `dtype` (from_config keeps the rotary inv_freq in float32; a .to(dtype) would round it)
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    return model.to(device)  # a no-op, unless a transformers version built it elsewhere


def letter_prompts(tokenizer, n: int, new_tokens: int) -> list[tuple[list[int], dict]]:
    """(prompt ids, ifeval ground truth) per prompt: a letter asked for at least k1..k4 times."""
    vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    prompts = []
    for i in range(n):
        letter = LETTERS[i % len(LETTERS)]
        expected = new_tokens * sum(t.count(letter) for t in vocab) / len(vocab)
        counts = sorted({max(1, round(expected * x)) for x in THRESHOLDS})
        text = (f"Write a note in which the letter {letter} appears at least "
                + ", ".join(str(c) for c in counts) + " times.")
        truth = {"instruction_id_list": ["keywords:letter_frequency"] * len(counts),
                 "kwargs": [{"letter": letter, "let_frequency": c, "let_relation": "at least"} for c in counts]}
        chat = tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                             add_generation_prompt=True)
        prompts.append((tokenizer(chat, add_special_tokens=False).input_ids, truth))
    return prompts


class IFEvalReward:
    """The `ifeval` verifier called in this process (no reward server: the point is the engine and learner)."""

    def __init__(self) -> None:
        from olmorl.rewards._settings import Settings
        from olmorl.rewards.instructions._verifier import IFEvalVerifier

        self.verifier = IFEvalVerifier(Settings())

    def __call__(self, response: str, truth: dict) -> float:
        return self.verifier.score(self.verifier.make_task(response, truth, {}, None)).reward


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


class PeakMemory:
    """The largest `torch.cuda.max_memory_allocated` of any phase (each phase resets the counter first)."""

    def __init__(self, device: torch.device) -> None:
        self.device, self.peaks = device, {}

    def start(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()

    def stop(self, phase: str) -> None:
        if self.device.type == "cuda":
            self.peaks[phase] = max(self.peaks.get(phase, 0), torch.cuda.max_memory_allocated())

    def gib(self, phase: str | None = None) -> float | None:
        if not self.peaks:
            return None
        return (self.peaks[phase] if phase else max(self.peaks.values())) / 2 ** 30


def generate(engine: TorchEngine, prompts, group: int, new_tokens: int, step: int, deadline: float):
    engine.submit([GenerationRequest((step, i), ids, group, meta=truth, max_new_tokens=new_tokens, ignore_eos=True)
                   for i, (ids, truth) in enumerate(prompts)])
    groups = []
    while len(groups) < len(prompts):
        if time.perf_counter() > deadline:
            raise TimeoutError(f"generation of step {step} ran past the time budget ({len(groups)} groups back)")
        groups += engine.get_groups(timeout=1.0)
    return sorted(groups, key=lambda g: g.request_id)


def run_mode(mode: str, args: argparse.Namespace, tokenizer, prompts, reward: IFEvalReward,
             device: torch.device, budget_s: float) -> dict:
    start = time.perf_counter()
    # float32: the learner's master weights (bfloat16_mixed autocasts its forward; the engine gets a bf16 copy)
    model = build_policy(SHAPES[args.shape], tokenizer, device, torch.float32, args.seed)
    params = sum(p.numel() for p in model.parameters())
    lora = mode == "lora"
    cfg = TrainConfig(lora_rank=args.rank if lora else 0, lora_alpha=2 * args.rank,
                      learning_rate=1e-5 if lora else 1e-6, micro_batch_tokens=args.micro_batch_tokens,
                      group_size=args.group, max_new_tokens=args.new_tokens, engine_batch_size=args.prompts * args.group,
                      device=device.type, engine_dtype=args.engine_dtype, learner_dtype=args.learner_dtype,
                      seed=args.seed)
    # as olmorl-train builds them: the engine's own copy first, then the learner (which wraps a LoRA policy)
    engine: TorchEngine = build_engine(cfg, model, tokenizer)  # type: ignore[assignment]
    learner = build_local_learner(cfg, model)
    trainable = sum(p.numel() for p in learner.model.parameters() if p.requires_grad)
    memory = PeakMemory(device)
    resident = torch.cuda.memory_allocated() / 2 ** 30 if device.type == "cuda" else None
    row: dict = {"mode": mode, "params": params, "trainable": trainable, "resident_gib": resident,
                 "build_s": time.perf_counter() - start, "steps": []}
    engine.start()
    try:
        for step in range(args.steps):
            step_start = time.perf_counter()
            memory.start()
            groups = generate(engine, prompts, args.group, args.new_tokens, step, start + budget_s + 60)
            _sync(device)
            gen_s = time.perf_counter() - step_start
            memory.stop("generate")
            samples, rewards, varied = [], [], 0
            for g in groups:
                scores = torch.tensor([reward(tokenizer.decode(c.token_ids), g.meta) for c in g.completions],
                                      dtype=torch.float64)
                rewards += scores.tolist()
                varied += not is_zero_std(scores)
                adv = group_advantages(scores, "centered").tolist()
                samples += [TrainSample(list(g.prompt_ids), c.token_ids, c.logprobs, c.versions, a)
                            for c, a in zip(g.completions, adv)]
            memory.start()
            learn_start = time.perf_counter()
            metrics = learner.train_step(samples)
            _sync(device)
            learn_s = time.perf_counter() - learn_start
            memory.stop("learn")
            memory.start()
            sync_start = time.perf_counter()
            engine.update_weights(learner.weights(), step + 1, wait=True)
            _sync(device)
            sync_s = time.perf_counter() - sync_start
            memory.stop("sync")
            tokens = sum(len(c.token_ids) for g in groups for c in g.completions)
            row["steps"].append({"gen_s": gen_s, "gen_tokens": tokens, "learn_s": learn_s, "sync_s": sync_s,
                                 "reward_mean": statistics.fmean(rewards), "varied_groups": varied,
                                 "loss": metrics["loss"],
                                 "grad_norm": metrics.get("grad_norm"), "ratio_max": metrics.get("ratio_max")})
            print(f"  {mode} step {step}: generate {gen_s:.2f} s ({tokens / gen_s:.0f} tok/s), learn {learn_s:.2f} s, "
                  f"sync {sync_s:.3f} s, reward {statistics.fmean(rewards):.3f}, {varied}/{len(groups)} groups with "
                  f"varied rewards", flush=True)
            elapsed = time.perf_counter() - start
            if step + 1 < args.steps and elapsed + (time.perf_counter() - step_start) > budget_s:
                print(f"  {mode}: stopping after {step + 1} steps (time budget {budget_s:.0f} s)", flush=True)
                break
    finally:
        engine.stop()
    measured = row["steps"][1:] or row["steps"]  # the first step is warm-up
    row.update(gen_tokens_per_s=sum(s["gen_tokens"] for s in measured) / sum(s["gen_s"] for s in measured),
               learn_s_median=statistics.median(s["learn_s"] for s in measured),
               sync_s_median=statistics.median(s["sync_s"] for s in measured),
               peak_gib=memory.gib(), learn_peak_gib=memory.gib("learn") if memory.peaks else None,
               sync_mib=_unique_bytes(learner.weights().values(), engine.weight_dtypes.default) / 2 ** 20)
    return row


def _unique_bytes(tensors, dtype: str) -> int:
    """Bytes of the distinct tensors in `dtype`, the engine's (a sync is cast to it before it is sent; a tied head
    is the embedding's storage: counted once)."""
    itemsize = getattr(torch, dtype).itemsize
    return sum({t.data_ptr(): t.numel() * itemsize for t in tensors}.values())


def _gib(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_table(rows: list[dict]) -> None:
    print(f"{'mode':5s} {'params':>8s} {'trainable':>10s} {'gen tok/s':>10s} {'learn s':>8s} {'sync s':>7s} "
          f"{'sync MiB':>9s} {'peak GiB':>9s} {'learn peak':>11s} {'steps':>6s}")
    for r in rows:
        if "error" in r:
            print(f"{r['mode']:5s} failed: {r['error']}")
            continue
        print(f"{r['mode']:5s} {r['params'] / 1e6:7.1f}M {r['trainable'] / 1e6:9.2f}M {r['gen_tokens_per_s']:10.0f} "
              f"{r['learn_s_median']:8.3f} {r['sync_s_median']:7.3f} {r['sync_mib']:9.1f} {_gib(r['peak_gib']):>9s} "
              f"{_gib(r['learn_peak_gib']):>11s} {len(r['steps']):6d}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="small model and batch (CPU; what the test runs)")
    parser.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    parser.add_argument("--prompts", type=int, default=16, help="prompts per step (P)")
    parser.add_argument("--group", type=int, default=8, help="completions per prompt (G)")
    parser.add_argument("--new-tokens", type=int, default=256, help="tokens generated per completion")
    parser.add_argument("--steps", type=int, default=6, help="RL steps per mode (the first is warm-up)")
    parser.add_argument("--rank", type=int, default=16, help="LoRA rank (alpha = 2 x rank), every linear but the head")
    parser.add_argument("--micro-batch-tokens", type=int, default=16384, help="learner tokens per forward/backward")
    parser.add_argument("--modes", default="full,lora")
    parser.add_argument("--budget-s", type=float, default=300.0, help="wall-clock budget of all modes together")
    parser.add_argument("--engine-dtype", choices=("bfloat16", "float32"), help="default: bfloat16 on CUDA, else float32")
    parser.add_argument("--learner-dtype", choices=("bfloat16_mixed", "float32"),
                        help="default: bfloat16_mixed on CUDA, else float32")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.shape = "tiny" if args.tiny else "qwen2.5-0.5b"
    if args.tiny:
        args.prompts, args.group, args.new_tokens, args.steps = 4, 4, 24, 2
        args.micro_batch_tokens = 1024
    return args


def main(argv: list[str] | None = None) -> None:
    import transformers

    args = parse_args(argv)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    args.engine_dtype = args.engine_dtype or ("bfloat16" if device.type == "cuda" else "float32")
    args.learner_dtype = args.learner_dtype or ("bfloat16_mixed" if device.type == "cuda" else "float32")
    if device.type == "cpu":
        torch.set_num_threads(2)
    started = time.perf_counter()
    reward = IFEvalReward()
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = build_char_tokenizer(tmp, vocab_size=SHAPES[args.shape]["vocab_size"])
    prompts = letter_prompts(tokenizer, args.prompts, args.new_tokens)
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"device {device_name}; torch {torch.__version__}, transformers {transformers.__version__}; shape "
          f"{args.shape}, engine {args.engine_dtype}, learner {args.learner_dtype}; {args.prompts} prompts x {args.group} completions x {args.new_tokens} tokens "
          f"per step, up to {args.steps} steps per mode, budget {args.budget_s:.0f} s", flush=True)
    modes = args.modes.split(",")
    rows = []
    for i, mode in enumerate(modes):
        left = args.budget_s - (time.perf_counter() - started)
        try:
            rows.append(run_mode(mode, args, tokenizer, prompts, reward, device, left / (len(modes) - i)))
        except Exception as exc:  # one mode failing (out of memory, say) still reports the other
            traceback.print_exc()
            rows.append({"mode": mode, "error": f"{type(exc).__name__}: {exc}"})
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
        result = {"device": device_name, "torch": torch.__version__, "transformers": transformers.__version__,
                  "shape": {"name": args.shape, **SHAPES[args.shape], "vocab_size": len(tokenizer)},
                  "prompts": args.prompts, "group": args.group, "new_tokens": args.new_tokens, "rank": args.rank,
                  "engine_dtype": args.engine_dtype, "learner_dtype": args.learner_dtype, "rows": rows, "wall_s": time.perf_counter() - started}
        if os.environ.get("OUT"):  # after each mode: a run killed at its time limit keeps what it measured
            path = Path(os.environ["OUT"]) / "trainer_gpu.json"
            path.write_text(json.dumps(result, indent=1))
            print(f"wrote {path}", flush=True)
    print_table(rows)
    if any("error" in r for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
