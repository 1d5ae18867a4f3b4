"""Multi-turn rollout throughput vs single-turn generation at the same token count, same engine, same run.

Multi-turn: product rows (`a*b=`) on the real reward server's `python` environment (one sandboxed interpreter
per session); a tiny char Llama taught the tool-call format writes the call, the tool answers, the model
answers (`MultiTurnEngine` over a `TorchEngine`). Single-turn: the same prompts, each completion forced
(EOS off) to the mean multi-turn completion length, so both rows put the same number of tokens after the
prompt. Reports completion tokens/s (sampled + tool reply tokens) and rollouts/s; the gap is the price of
turns: a session per rollout (a sandboxed interpreter started by the server), tool calls, one re-prefill per
turn. One warm-up rollout first, so the first turns overlap session start-up as they do in a training run.

Usage: python benchmarks/trainer_multiturn_throughput.py [--groups 16 --group-size 4 --batch 32]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=16)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--sft-steps", type=int, default=250)
    args = ap.parse_args()

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from olmorl.rewards.service._local import LocalRewardServer
    from olmorl.trainer._data import build_prompts
    from olmorl.trainer._multiturn import MultiTurnEngine, RolloutLimits
    from olmorl.trainer._sessions import SessionCalls
    from olmorl.trainer._tiny import TOOL_CHAT_TEMPLATE, build_tiny_llama, product_rows, product_trace, supervised
    from olmorl.trainer._toolcalls import HermesToolCalls, ToolChat
    from olmorl.trainer.engines import TorchEngine
    from olmorl.trainer.engines._types import GenerationRequest

    torch.set_num_threads(1)
    root = tempfile.mkdtemp(prefix="olmorl-mt-bench-")
    build_tiny_llama(root, hidden=64, layers=1, heads=2, chat_template=TOOL_CHAT_TEMPLATE)
    chat = ToolChat(AutoTokenizer.from_pretrained(root), HermesToolCalls())
    tok = chat.tokenizer
    train = product_rows(64, seed=1)
    supervised(root, [product_trace(chat, r, r["task"]["ground_truth"] + "\n") for r in train],
               steps=args.sft_steps, batch_size=32, lr=3e-3, log_every=0)
    prompts = build_prompts(product_rows(args.groups, seed=2), tok, source="bench", max_prompt_tokens=64)
    server = LocalRewardServer(log_path=f"{root}/reward-server.log").start()

    def engine():
        model = AutoModelForCausalLM.from_pretrained(root)
        return TorchEngine(model, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, max_new_tokens=128,
                           max_batch_size=args.batch)

    def drain(e, n):
        groups = []
        while len(groups) < n:
            groups += e.get_groups(0.5)
        return groups

    try:
        multi = MultiTurnEngine(engine(), chat, SessionCalls([server.url]),
                                RolloutLimits(max_turns=3, max_total_tokens=250, max_new_tokens=128))
        multi.start()
        warm = build_prompts(product_rows(1, seed=3), tok, source="warm", max_prompt_tokens=64)[0]
        multi.submit([GenerationRequest("warm", list(warm.prompt_ids), 1, meta=warm)])  # learns the env's tools
        drain(multi, 1)
        before = multi.stats()
        start = time.perf_counter()
        multi.submit([GenerationRequest(i, list(p.prompt_ids), args.group_size, meta=p) for i, p in enumerate(prompts)])
        groups = drain(multi, len(prompts))
        multi_s = time.perf_counter() - start
        stats = {k: v - before.get(k, 0.0) for k, v in multi.stats().items()}
        multi.stop()
        completions = [c for g in groups for c in g.completions]
        multi_tokens = sum(len(c.token_ids) for c in completions)
        sampled = sum(sum(c.loss_mask) for c in completions)
        solved = sum(c.result.reward == 1.0 for c in completions)
        length = round(multi_tokens / len(completions))

        single = engine()
        single.start()
        start = time.perf_counter()
        single.submit([GenerationRequest(i, list(p.prompt_ids), args.group_size, max_new_tokens=length, ignore_eos=True)
                       for i, p in enumerate(prompts)])
        drain(single, len(prompts))
        single_s = time.perf_counter() - start
        single.stop()
    finally:
        server.stop()
    n = len(completions)
    single_tokens = n * length
    print(f"{n} rollouts; multi-turn: {stats['multiturn/turns'] / n:.2f} turns and {stats['multiturn/tool_calls'] / n:.2f}"
          f" tool calls per rollout, {sampled / multi_tokens:.0%} of completion tokens sampled, {solved}/{n} solved")
    print(f"per rollout: session open + verify {stats['multiturn/session_s'] / n * 1000:.0f} ms, tool calls "
          f"{stats['multiturn/tool_s'] / n * 1000:.0f} ms (summed over concurrent rollouts; wall is {multi_s:.2f} s)")
    print(f"| rollouts | completion tokens | wall s | tokens/s | rollouts/s |")
    print(f"|---|---|---|---|---|")
    print(f"| single-turn (EOS off, {length} tokens each) | {single_tokens} | {single_s:.2f} | {single_tokens / single_s:.0f} "
          f"| {n / single_s:.1f} |")
    print(f"| multi-turn (python tool, real sessions) | {multi_tokens} | {multi_s:.2f} | {multi_tokens / multi_s:.0f} "
          f"| {n / multi_s:.1f} |")
    print(f"multi-turn / single-turn tokens/s: {(multi_tokens / multi_s) / (single_tokens / single_s):.2f}")


if __name__ == "__main__":
    main()
