"""A few real steps of TRL's GRPOTrainer on CPU with a tiny model built here (no downloads), its
rewards scored by a live olmorl server through `olmorl.clients.trl`."""

from __future__ import annotations

import functools
import json
import re
import string

import httpx
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from olmorl.clients.trl import math_reward, olmorl_reward

CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"


def tiny_model(directory):
    """One token per printable character and a 2-layer Llama of about 0.2M parameters, saved to `directory`."""
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<s>", "</s>", "<unk>"]
    vocab = {tok: i for i, tok in enumerate(specials + sorted(set(string.printable) - set("\t\r\x0b\x0c")))}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                        unk_token="<unk>", padding_side="left")
    tokenizer.chat_template = CHAT_TEMPLATE
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(vocab), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=4, max_position_embeddings=128, tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id))
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return str(directory)


def items_scored(metrics: str, verifier: str) -> float:
    pattern = rf'olmorl_items_total{{[^}}]*verifier="{verifier}"[^}}]*}} ([0-9.e+]+)'
    return sum(float(value) for value in re.findall(pattern, metrics))


def test_grpo_trainer_steps_with_olmorl_rewards(reward_server, tmp_path, monkeypatch):
    url = reward_server(workers=1)
    monkeypatch.setenv("OLMORL_URL", url)  # math_reward as a dotted path would find the server this way
    model_dir = tiny_model(tmp_path / "model")
    rows = [{"prompt": [{"role": "user", "content": f"{a}+{b}="}], "ground_truth": str(a + b),
             "verifier": "math"} for a, b in [(1, 2), (3, 4), (5, 6), (7, 1)]]
    config = GRPOConfig(
        output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, beta=0.0, max_steps=3, logging_steps=1,
        per_device_train_batch_size=4, num_generations=4, max_completion_length=12, learning_rate=1e-3,
        report_to=[], save_strategy="no", seed=0,
    )
    trainer = GRPOTrainer(
        model=model_dir, processing_class=None, args=config, train_dataset=Dataset.from_list(rows),
        # the plain function (URL from OLMORL_URL) and a configured partial (explicit URL)
        reward_funcs=[math_reward, functools.partial(olmorl_reward, base_url=url)],
    )
    trainer.train()

    logged = [entry for entry in trainer.state.log_history if "rewards/math_reward/mean" in entry]
    assert len(logged) == 3
    for entry in logged:
        assert 0.0 <= entry["rewards/math_reward/mean"] <= 1.0
        assert 0.0 <= entry["rewards/olmorl_reward/mean"] <= 1.0
    # Every completion went through the server, once per reward function: 2 x 3 steps x 4 completions.
    assert items_scored(httpx.get(f"{url}/metrics").text, "math") == 24


def test_grpo_trainer_steps_with_component_rewards(reward_server, tmp_path):
    """Issue 25: a real GRPOTrainer weighs a composite row's components as reward functions of their own
    (ComponentReward, with TRL's reward_weights) beside the server's aggregate (olmorl_reward)."""
    from olmorl.clients.trl import ComponentReward

    url = reward_server(workers=1)
    model_dir = tiny_model(tmp_path / "model")
    # the components as JSON text: a datasets column of dicts with different keys would be filled with nulls
    rows = [{"prompt": [{"role": "user", "content": f"{a}+{b}="}], "verifier": "composite",
             "ground_truth": json.dumps([{"name": "math", "verifier": "math", "ground_truth": str(a + b)},
                                         {"name": "digits", "verifier": "format", "options": {"regex": r"\d"},
                                          "weight": 0.2}])}
            for a, b in [(1, 2), (3, 4), (5, 6), (7, 1)]]
    config = GRPOConfig(
        output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, beta=0.0, max_steps=2, logging_steps=1,
        per_device_train_batch_size=4, num_generations=4, max_completion_length=12, learning_rate=1e-3,
        report_to=[], save_strategy="no", seed=0, reward_weights=[1.0, 0.2, 0.0],
    )
    trainer = GRPOTrainer(
        model=model_dir, processing_class=None, args=config, train_dataset=Dataset.from_list(rows),
        reward_funcs=[ComponentReward("math", base_url=url), ComponentReward("digits", base_url=url),
                      functools.partial(olmorl_reward, base_url=url)],
    )
    trainer.train()

    logged = [entry for entry in trainer.state.log_history if "rewards/math_reward/mean" in entry]
    assert len(logged) == 2
    for entry in logged:  # each component logged on its own, and the aggregate beside them; every row scored
        assert entry["olmorl/math_reward/not_ok_frac"] == entry["olmorl/olmorl_reward/not_ok_frac"] == 0.0
        assert 0.0 <= entry["rewards/math_reward/mean"] <= 1.0
        assert 0.0 <= entry["rewards/digits_reward/mean"] <= 1.0
        assert 0.0 <= entry["rewards/olmorl_reward/mean"] <= 1.2
    # Every completion went through the server as a composite item, once per reward function: 3 x 2 steps x 4.
    assert items_scored(httpx.get(f"{url}/metrics").text, "composite") == 24
