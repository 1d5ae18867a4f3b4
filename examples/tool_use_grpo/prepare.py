"""Build the tool-use run's inputs under ./work: a char-level Llama that has seen the tool-call format on a
handful of solved transcripts, and multi-turn rows (env `python`) asking for three-digit products.

    python prepare.py [--traces 64 --steps 300]    # ~1-3 min on 2 CPU cores
    olmorl-train --config run.yaml                  # GRPO; starts a local olmorl-rewards (python env) on loopback
"""

import argparse
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer

from olmorl.trainer._tiny import TOOL_CHAT_TEMPLATE, build_tiny_llama, product_rows, product_trace, supervised, write_jsonl
from olmorl.trainer._toolcalls import HermesToolCalls, ToolChat


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="work")
    parser.add_argument("--traces", type=int, default=64, help="solved transcripts the model is shown")
    parser.add_argument("--steps", type=int, default=300, help="supervised steps (batch 32)")
    parser.add_argument("--hidden", type=int, default=128)
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    build_tiny_llama(out / "model", hidden=args.hidden, layers=2, chat_template=TOOL_CHAT_TEMPLATE)
    chat = ToolChat(AutoTokenizer.from_pretrained(out / "model"), HermesToolCalls())
    shown = product_rows(args.traces, seed=1)
    # the transcripts as a rollout builds them; the tool's reply is what the python env prints
    traces = [product_trace(chat, row, row["task"]["ground_truth"] + "\n") for row in shown]
    write_jsonl(product_rows(4000, seed=0), out / "train.jsonl")
    start = time.perf_counter()
    supervised(out / "model", traces, steps=args.steps, batch_size=32, lr=2e-3)
    print(f"format warm start: {time.perf_counter() - start:.0f} s on {len(traces)} transcripts; rows in {out}/")


if __name__ == "__main__":
    main()
