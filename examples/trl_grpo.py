# GRPO with TRL's GRPOTrainer, every completion scored by an olmorl server (OLMORL_URL).
# MODEL: any causal LM with a chat template, a hub id or a directory (the docs test passes a tiny local one).
import os

from datasets import Dataset
from transformers import ProgressCallback
from trl import GRPOConfig, GRPOTrainer

from olmorl.clients.trl import math_reward

rows = [{"prompt": [{"role": "user", "content": f"{a}+{b}="}], "ground_truth": str(a + b)}
        for a, b in [(1, 2), (3, 4), (5, 6), (7, 1)]]
config = GRPOConfig(output_dir="grpo-olmorl", max_steps=2, logging_steps=1, per_device_train_batch_size=4,
                    num_generations=4, max_completion_length=12, learning_rate=1e-3, beta=0.0, report_to=[],
                    save_strategy="no", use_cpu=True, bf16=False, seed=0)  # on a GPU: drop use_cpu and bf16
trainer = GRPOTrainer(model=os.environ.get("MODEL", "Qwen/Qwen3-0.6B"), reward_funcs=[math_reward], args=config,
                      train_dataset=Dataset.from_list(rows))
trainer.remove_callback(ProgressCallback)  # print the rewards below, not TRL's full log line per step
trainer.train()
for entry in trainer.state.log_history:
    if "rewards/math_reward/mean" in entry:
        print(f"step {entry['step']}: math_reward mean {entry['rewards/math_reward/mean']:.2f}, "
              f"not scored {entry['olmorl/math_reward/not_ok_frac']:.0%}")
