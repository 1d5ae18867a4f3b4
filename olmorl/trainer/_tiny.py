"""Tiny models built locally, without downloads: a character tokenizer and a small Llama.

Used by the tests, the toy example and the benchmarks; nothing here is needed for real runs.
"""

from __future__ import annotations

import string
from pathlib import Path

SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")
# Printable ASCII without the whitespace controls, plus space and newline.
CHARACTERS = tuple(sorted(set(string.printable) - set("\t\r\x0b\x0c")))
# The whole conversation is the concatenated contents; the model answers right after the last user turn.
CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"


def build_char_tokenizer(out_dir: str | Path):
    """A one-token-per-character tokenizer saved as a regular HF tokenizer directory."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS + CHARACTERS)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>",
        padding_side="left",
    )
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(str(out_dir))
    return tok


def build_tiny_llama(out_dir: str | Path, hidden: int = 192, layers: int = 2, heads: int = 4, seed: int = 0,
                     max_positions: int = 256):
    """A randomly initialised Llama with the char tokenizer, saved as a model directory (1.2M params at 192/2)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = build_char_tokenizer(out_dir)
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=hidden, intermediate_size=4 * hidden, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=max_positions,
        tie_word_embeddings=True, pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(str(out_dir))
    return model, tok


# -- the toy task: two-digit addition answered as \boxed{N} --------------------------------------------------
def addition_rows(seed: int = 0, held_out: int = 400) -> tuple[list[dict], list[dict]]:
    """All a+b with a, b in 10..99 as open-instruct RLVR rows (verifier `math`), split into train / held-out."""
    import random

    pairs = [(a, b) for a in range(10, 100) for b in range(10, 100)]
    random.Random(seed).shuffle(pairs)
    rows = [{"messages": [{"role": "user", "content": f"{a}+{b}="}], "ground_truth": str(a + b), "dataset": "math"}
            for a, b in pairs]
    return rows[held_out:], rows[:held_out]


def write_jsonl(rows: list[dict], path: str | Path) -> None:
    import json

    Path(path).write_text("".join(json.dumps(r) + "\n" for r in rows))


def warm_start(model_dir: str | Path, rows: list[dict], *, steps: int = 200, batch_size: int = 128, lr: float = 1e-3,
               seed: int = 0, log_every: int = 50) -> None:
    """Supervised warm start on `\\boxed{answer}</s>` (loss on the answer only); saves the model in place."""
    import random

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.99))
    rng = random.Random(seed)
    torch.manual_seed(seed)
    encoded = []
    for row in rows:
        prompt = tok.apply_chat_template(row["messages"], tokenize=False, add_generation_prompt=True)
        p_ids = tok(prompt, add_special_tokens=False).input_ids
        a_ids = tok("\\boxed{" + row["ground_truth"] + "}", add_special_tokens=False).input_ids + [tok.eos_token_id]
        encoded.append((p_ids, a_ids))
    for step in range(1, steps + 1):
        batch = rng.sample(encoded, batch_size)
        width = max(len(p) + len(a) for p, a in batch)
        ids = torch.full((batch_size, width), tok.pad_token_id)
        labels = torch.full((batch_size, width), -100)
        for r, (p, a) in enumerate(batch):
            seq = p + a
            ids[r, :len(seq)] = torch.tensor(seq)
            labels[r, len(p):len(seq)] = torch.tensor(a)
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if log_every and step % log_every == 0:
            print(f"warm start step {step}: loss {loss.item():.3f}", flush=True)
    model.save_pretrained(str(model_dir))
