"""Held-out success rate of a model on the tool task: multi-turn rollouts on a local olmorl-rewards `python`
environment, exactly as in training (same engine, sampling at T=1, turn and token limits as run.yaml).

    python evaluate.py work/model                               # before RL
    python evaluate.py work/run/checkpoints/step_0000100/model  # after
"""

import argparse

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from olmorl.rewards.service._local import LocalRewardServer
from olmorl.trainer import (GenerationRequest, HermesToolCalls, MultiTurnEngine, RolloutLimits, SessionCalls,
                            TorchEngine, ToolChat)
from olmorl.trainer._data import build_prompts
from olmorl.trainer._tiny import product_rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--samples", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(args.model)
    chat = ToolChat(tok, HermesToolCalls())
    prompts = build_prompts(product_rows(args.prompts, seed=9), tok, source="held-out", max_prompt_tokens=64)
    engine = TorchEngine(AutoModelForCausalLM.from_pretrained(args.model), eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id, max_new_tokens=128, max_batch_size=64)
    with LocalRewardServer() as server:
        rollouts = MultiTurnEngine(engine, chat, SessionCalls([server.url]),
                                   RolloutLimits(max_turns=3, max_total_tokens=250, max_new_tokens=128))
        rollouts.start()
        try:
            rollouts.submit([GenerationRequest(i, list(p.prompt_ids), args.samples, meta=p)
                             for i, p in enumerate(prompts)])
            groups = []
            while len(groups) < len(prompts):
                groups += rollouts.get_groups(0.5)
        finally:
            rollouts.stop()
    done = [c for g in groups for c in g.completions]
    solved = sum(c.result.reward == 1.0 for c in done) / len(done)
    called = sum(0 in c.loss_mask for c in done) / len(done)
    print(f"{args.model}: success {solved:.3f}, used the tool {called:.3f} ({len(done)} rollouts)")


if __name__ == "__main__":
    main()
