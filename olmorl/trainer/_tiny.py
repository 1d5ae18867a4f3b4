"""Tiny models built locally, without downloads: a character tokenizer and a small Llama.

Used by the tests, the toy example and the benchmarks; nothing here is needed for real runs.
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Callable
from pathlib import Path

SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")
# Printable ASCII without the whitespace controls, plus space and newline.
CHARACTERS = tuple(sorted(set(string.printable) - set("\t\r\x0b\x0c")))
# The whole conversation is the concatenated contents; the model answers right after the last user turn.
CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"
# The same with tool messages wrapped as Hermes/Qwen tool responses (multi-turn example and tests).
TOOL_CHAT_TEMPLATE = ("{% for message in messages %}{% if message['role'] == 'tool' %}<tool_response>"
                      "{{ message['content'] }}</tool_response>{% else %}{{ message['content'] }}{% endif %}{% endfor %}")


def filler_words(n: int) -> list[str]:
    """`n` distinct space-led four-letter lowercase words (n <= 26**4), letters spread evenly over the words."""
    if n > 26 ** 4:
        raise ValueError(f"at most {26 ** 4} filler words, not {n}")
    words = []
    for i in range(n):
        code = i * 7919 % 26 ** 4  # 7919 is prime to 26: a bijection on 0..26**4-1, so the words are distinct
        words.append(" " + "".join(chr(97 + code // 26 ** k % 26) for k in range(4)))
    return words


def build_char_tokenizer(out_dir: str | Path, chat_template: str = CHAT_TEMPLATE, vocab_size: int | None = None):
    """A one-token-per-character tokenizer saved as a regular HF tokenizer directory.

    `vocab_size` pads the vocabulary with `filler_words` up to that size, so a model with a real-size embedding
    (Qwen2.5's 151936) decodes every id it samples; text still encodes one token per character."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    base = SPECIAL_TOKENS + CHARACTERS
    if vocab_size is not None and vocab_size < len(base):
        raise ValueError(f"vocab_size must be at least {len(base)} (the characters), not {vocab_size}")
    vocab = {tok: i for i, tok in enumerate(base + tuple(filler_words((vocab_size or len(base)) - len(base))))}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("[\\s\\S]"), behavior="isolated")  # every character, newlines too
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>",
        padding_side="left",
    )
    tok.chat_template = chat_template
    tok.save_pretrained(str(out_dir))
    return tok


def build_tiny_llama(out_dir: str | Path, hidden: int = 192, layers: int = 2, heads: int = 4, seed: int = 0,
                     max_positions: int = 256, chat_template: str = CHAT_TEMPLATE):
    """A randomly initialised Llama with the char tokenizer, saved as a model directory (1.2M params at 192/2)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = build_char_tokenizer(out_dir, chat_template)
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
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    encoded = []
    for row in rows:
        prompt = tok.apply_chat_template(row["messages"], tokenize=False, add_generation_prompt=True)
        p_ids = tok(prompt, add_special_tokens=False).input_ids
        a_ids = tok("\\boxed{" + row["ground_truth"] + "}", add_special_tokens=False).input_ids + [tok.eos_token_id]
        encoded.append((p_ids + a_ids, [0] * len(p_ids) + [1] * len(a_ids)))
    supervised(model_dir, encoded, steps=steps, batch_size=batch_size, lr=lr, seed=seed, log_every=log_every)


def train_teacher(student_dir: str | Path, teacher_dir: str | Path, rows: list[dict], *, steps: int,
                  seed: int = 1, log_every: int = 50) -> None:
    """A distillation teacher for the toy task: a copy of the warm-started student given `steps` more supervised
    steps (`warm_start`'s recipe), saved in `teacher_dir`."""
    import shutil

    shutil.copytree(str(student_dir), str(teacher_dir), dirs_exist_ok=True)
    warm_start(teacher_dir, rows, steps=steps, seed=seed, log_every=log_every)


def supervised(model_dir: str | Path, traces: list[tuple[list[int], list[int]]], *, steps: int, batch_size: int,
               lr: float = 1e-3, seed: int = 0, log_every: int = 50) -> None:
    """Next-token training on (token ids, loss mask) traces (loss where the mask is 1); saves the model in place."""
    import random

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.99))
    rng = random.Random(seed)
    torch.manual_seed(seed)
    for step in range(1, steps + 1):
        batch = rng.sample(traces, min(batch_size, len(traces)))
        width = max(len(ids) for ids, _ in batch)
        ids = torch.full((len(batch), width), tok.pad_token_id)
        labels = torch.full((len(batch), width), -100)
        for r, (seq, mask) in enumerate(batch):
            ids[r, :len(seq)] = torch.tensor(seq)
            labels[r, :len(seq)] = torch.where(torch.tensor(mask, dtype=torch.bool), torch.tensor(seq), -100)
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if log_every and step % log_every == 0:
            print(f"warm start step {step}: loss {loss.item():.3f}", flush=True)
    model.save_pretrained(str(model_dir))


# -- the toy tool task: three-digit products, computed with the `python` tool, answered as \boxed{N} -------------
def product_rows(n: int, seed: int = 0) -> list[dict]:
    """Multi-turn rows (env `python`, math verifier): "a*b=" for three-digit a, b (a 1.2M char model cannot
    multiply; it can copy the numbers into a tool call and the tool's output into the answer)."""
    import random

    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        a, b = rng.randint(100, 999), rng.randint(100, 999)
        rows.append({"messages": [{"role": "user", "content": f"{a}*{b}="}], "env": "python",
                     "task": {"verifier": "math", "ground_truth": str(a * b)}})
    return rows


def product_call(row: dict) -> str:
    """The tool call that solves a `product_rows` row, in the Hermes format."""
    import json

    code = "print(" + row["messages"][-1]["content"].rstrip("=") + ")"
    return "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"


def product_trace(chat, row: dict, tool_output: str) -> tuple[list[int], list[int]]:
    """(token ids, loss mask) of the solving transcript, built as a rollout builds it: prompt, sampled call
    (stops at </tool_call>), the template's tool reply, sampled answer + EOS; loss on the sampled parts."""
    tok = chat.tokenizer
    prompt = chat.prompt_ids(row["messages"], None)
    call = tok(product_call(row), add_special_tokens=False).input_ids
    reply = chat.reply_ids([{"role": "tool", "name": "python", "content": tool_output}], ended_with_eos=False)
    answer = tok("\\boxed{" + row["task"]["ground_truth"] + "}", add_special_tokens=False).input_ids + [tok.eos_token_id]
    ids = prompt + call + reply + answer
    return ids, [0] * len(prompt) + [1] * len(call) + [0] * len(reply) + [1] * len(answer)


def fix_completion_lengths(trainer, length: Callable[[int], int]) -> None:
    """Harness for controlled rollout lengths: the n-th request `trainer` submits decodes exactly `length(n)`
    tokens (EOS ignored, as with long reasoning traces). Benchmarks and tests set long tails with it."""
    submit = trainer.engine.submit
    count = itertools.count()

    def submit_with_lengths(requests):
        for request in requests:
            request.max_new_tokens = length(next(count))
            request.ignore_eos = True
        submit(requests)

    trainer.engine.submit = submit_with_lengths
