"""LoRA GRPO on the toy addition task (a 1.2M-parameter char Llama built here), then the adapter merged into a
plain Hugging Face model directory. Only the adapter trains, is checkpointed and travels to the engine.

    python examples/lora_grpo.py [--out work_lora] [--steps 30] [--warm-steps 200]   # a few minutes on 2 CPUs
"""

import argparse
import os
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

from olmorl.trainer import TrainConfig, Trainer
from olmorl.trainer._cli import main as olmorl_train
from olmorl.trainer._tiny import addition_rows, build_tiny_llama, warm_start, write_jsonl


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="work_lora")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warm-steps", type=int, default=200, help="supervised warm start of the base (batch 128)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    build_tiny_llama(out / "model", hidden=192, layers=2)
    train, _ = addition_rows(seed=0)
    write_jsonl(train, out / "train.jsonl")
    warm_start(out / "model", train, steps=args.warm_steps, batch_size=128, lr=1e-3, log_every=0)

    config = TrainConfig(
        model=str(out / "model"), train_files=(str(out / "train.jsonl"),), output_dir=str(out / "run"),
        lora_rank=8, lora_alpha=16, lora_target_modules=("q_proj", "k_proj", "v_proj", "o_proj"), lora_dropout=0.0,
        learning_rate=1e-3,  # adapters take a larger step than a full fine-tune
        group_size=8, prompts_per_step=8, max_new_tokens=12, total_steps=args.steps, torch_threads=1,
        tensorboard=False, log_every=10,
        reward_urls=(os.environ["OLMORL_URL"],) if "OLMORL_URL" in os.environ else (),  # else a local server
    )
    trainer = Trainer(config)
    history = trainer.run()
    adapter = trainer.learner.weights()  # what each step pushed to the engine
    base_bytes = sum(p.numel() * p.element_size() for p in AutoModelForCausalLM.from_pretrained(config.model).parameters())
    print(f"trained {len(history)} steps; each sync sent {len(adapter)} adapter tensors, "
          f"{sum(t.numel() * t.element_size() for t in adapter.values())} bytes (the model is {base_bytes})")

    # the same as `olmorl-train export work_lora/run work_lora/merged` on the command line
    assert olmorl_train(["export", str(out / "run"), str(out / "merged")]) == 0
    merged = AutoModelForCausalLM.from_pretrained(str(out / "merged"))
    print(f"merged model: {sum(p.numel() for p in merged.parameters())} parameters, no adapter layers: "
          f"{not any('lora' in name for name in merged.state_dict())}")


if __name__ == "__main__":
    main()
