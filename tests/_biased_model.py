"""A tiny char-Llama whose answers have known pass rates, built locally (filter and scale-out loop tests)."""

import math

import torch


def build_biased_model(out, p_one=0.95, noise=0.0):
    """Answers "1" with p_one and "2" otherwise, whatever the prompt (zeroed layers, a crafted head).

    `noise`: the std of seeded normal noise in the decoder's linear layers (the head stays crafted). With
    zeroed layers every hidden state is the same, so many gradient entries cancel exactly between samples
    and keep only float rounding (~1e-9); Adam's first step turns that rounding into +-lr, a direction that
    depends on summation order (two ranks vs one). A little noise makes those gradients real."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from olmorl.trainer._tiny import build_char_tokenizer

    tok = build_char_tokenizer(out)
    hidden = 16
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, max_position_embeddings=64, tie_word_embeddings=False,
                      pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.Linear):
                module.weight.zero_()
        if noise:
            generator = torch.Generator().manual_seed(0)
            for layer in model.model.layers:
                for module in layer.modules():
                    if isinstance(module, torch.nn.Linear):
                        module.weight.copy_(torch.randn(module.weight.shape, generator=generator) * noise)
        model.model.embed_tokens.weight.fill_(1.0)  # the residual stream is all ones; RMSNorm keeps it so
        logits = torch.full((len(tok),), -40.0)
        logits[tok.convert_tokens_to_ids("1")] = math.log(p_one)
        logits[tok.convert_tokens_to_ids("2")] = math.log(1 - p_one)
        model.lm_head.weight.copy_((logits / hidden)[:, None].expand(-1, hidden))
    model.save_pretrained(str(out))
    return out


def answer_rows(answers):
    return [{"messages": [{"role": "user", "content": f"q{i}?"}], "ground_truth": a, "dataset": "string_f1"}
            for i, a in enumerate(answers)]
