"""Held-out evaluation: sample (the training temperature, top-k, top-p) and greedy completions from the learner's weights, score over HTTP."""

from __future__ import annotations

import asyncio

import torch

from olmorl.trainer._rewards import score_completions


def _generate(model, tokenizer, prompts, max_new_tokens: int, do_sample: bool, temperature: float = 1.0,
              top_k: int = 0, top_p: float = 1.0, batch_size: int = 256) -> list[tuple[str, bool]]:
    """(completion text, truncated) per prompt; truncated = no EOS within max_new_tokens."""
    texts = []
    eos = tokenizer.eos_token_id
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start:start + batch_size]
        width = max(len(p.prompt_ids) for p in chunk)
        ids = torch.full((len(chunk), width), tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, p in enumerate(chunk):
            ids[r, width - len(p.prompt_ids):] = torch.tensor(p.prompt_ids)
            mask[r, width - len(p.prompt_ids):] = 1
        kwargs = dict(do_sample=True, temperature=temperature, top_k=top_k, top_p=top_p) if do_sample else dict(do_sample=False)
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, eos_token_id=eos,
                             pad_token_id=tokenizer.pad_token_id, **kwargs)
        for row in out[:, width:].tolist():
            text = tokenizer.decode(row[:row.index(eos)] if eos in row else row, skip_special_tokens=True)
            texts.append((text, eos not in row))
    return texts


async def evaluate(model, tokenizer, prompts, scorer, config) -> dict[str, float]:
    """Mean reward of `eval_samples` sampled and one greedy completion per held-out prompt (global RNG untouched)."""
    def run():
        with torch.random.fork_rng(), torch.no_grad():
            torch.manual_seed(config.seed + 7919)
            was_training = model.training
            model.eval()
            try:
                sampled = _generate(model, tokenizer, list(prompts) * config.eval_samples, config.max_new_tokens, True,
                                    config.temperature, config.top_k, config.top_p)
                greedy = _generate(model, tokenizer, prompts, config.max_new_tokens, False)
            finally:
                model.train(was_training)
        return sampled, greedy

    sampled, greedy = await asyncio.to_thread(run)
    out = {}
    for name, texts in (("eval/accuracy", sampled), ("eval/greedy_accuracy", greedy)):
        repeated = list(prompts) * (len(texts) // max(len(prompts), 1))
        results = await score_completions(scorer, repeated, [t for t, _ in texts])
        rewards = [r.reward or 0.0 for r in results]  # the scorer's on_error="zero" already makes a not-ok item 0.0
        if config.truncation == "penalize":  # scored as in training
            rewards = [config.truncation_reward if cut else r for r, (_, cut) in zip(rewards, texts)]
        out[name] = sum(rewards) / max(len(rewards), 1)
    return out
