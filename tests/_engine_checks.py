"""Shared checks of the engine tests: a token's logprob under a full forward, and waiting for finished groups."""

import time

import torch


def random_llama(max_positions: int = 256):
    """A tiny randomly initialised Llama (vocab 40, 2 layers), the same weights every call."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=40, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, max_position_embeddings=max_positions, tie_word_embeddings=True)
    return LlamaForCausalLM(cfg).eval()


def full_logprobs(model, prompt, tokens):
    """Logprob of each of `tokens` after `prompt` under one full forward of `model` (the engine's reference)."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt + tokens])).logits[0].float()
    lp = torch.log_softmax(logits, dim=-1)[len(prompt) - 1:len(prompt) - 1 + len(tokens)]
    return lp.gather(1, torch.tensor(tokens)[:, None]).squeeze(1)


def collect_groups(engine, n, timeout=120):
    """`n` finished groups from an engine, failing with a count after `timeout` seconds."""
    groups, deadline = [], time.monotonic() + timeout
    while len(groups) < n:
        label = getattr(engine, "kind", type(engine).__name__)
        assert time.monotonic() < deadline, f"{label}: only {len(groups)} of {n} groups in {timeout} s"
        groups += engine.get_groups(timeout=0.5)
    return groups


def tiny_random_llama(max_positions=128):
    """A seeded random 2-layer Llama of vocabulary 40 (the engine tests' model), in eval mode."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=40, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, max_position_embeddings=max_positions, tie_word_embeddings=True)
    return LlamaForCausalLM(cfg).eval()
