"""`olmorl-train filter`: offline difficulty filtering (OlmoRL data construction, step 2).

Samples `--rollouts` completions per prompt at temperature 1.0 / top-p 1.0 with any engine (the in-process
transformers engine, or `--engine-url` servers speaking olmorl's engine protocol), scores them through a
reward server (`--reward-url`, or a local `olmorl-rewards` on loopback), and keeps the prompts whose pass
rate is at most `--max-pass-rate` (and at least `--min-pass-rate`): those the model does not already solve.

Resumable: every decided prompt is appended to `<out>.progress.jsonl` as soon as it is scored, and a rerun
skips them. Prompts whose rewards came back `invalid` / `error` are reported and left undecided (a rerun
retries them); they are never counted as failures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

log = logging.getLogger("olmorl.trainer.filter")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="olmorl-train filter", description=__doc__.split("\n\n")[1])
    p.add_argument("--model", required=True, help="HF model directory or hub id (policy and tokenizer)")
    p.add_argument("--data", required=True, nargs="+", help="RLVR rows (.jsonl/.json/.parquet), one or more sources")
    p.add_argument("--out", required=True, help="kept rows, JSONL (appended to; progress in OUT.progress.jsonl)")
    p.add_argument("--rollouts", type=int, default=8, help="completions sampled per prompt")
    p.add_argument("--max-pass-rate", type=float, default=0.625, help="keep prompts with pass rate <= this")
    p.add_argument("--min-pass-rate", type=float, default=0.0, help="... and >= this (e.g. 0.125 drops unsolved ones)")
    p.add_argument("--pass-threshold", type=float, default=1.0, help="a rollout passes when its reward >= this")
    p.add_argument("--max-new-tokens", type=int, default=1024)
    p.add_argument("--max-prompt-tokens", type=int, default=2048)
    p.add_argument("--verifier-override", default=None, help="score every row with this verifier")
    p.add_argument("--engine-url", nargs="*", default=[], help="olmorl-engine servers (default: in-process engine)")
    p.add_argument("--engine-batch-size", type=int, default=64, help="sequences decoded together (local engine)")
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    p.add_argument("--reward-url", nargs="*", default=[], help="reward servers (default: a local olmorl-rewards)")
    p.add_argument("--reward-workers", type=int, default=1, help="workers of the local reward server")
    p.add_argument("--prompts-in-flight", type=int, default=64, help="prompts submitted to the engine at a time")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads of the local engine")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs only)")
    return p


def _key(source: str, index: int) -> str:
    return f"{source}#{index}"


def load_progress(path: Path) -> set[str]:
    done = set()
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                try:
                    done.add(json.loads(line)["key"])
                except (json.JSONDecodeError, KeyError):
                    continue  # a line cut short by a crash: that prompt is redone
    return done


def _local_engine(args, tokenizer):
    import torch
    from transformers import AutoModelForCausalLM

    from olmorl.trainer.engines._torch import TorchEngine

    torch.set_num_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=getattr(torch, args.dtype))
    eos = model.generation_config.eos_token_id or tokenizer.eos_token_id
    return TorchEngine(model, eos_token_id=eos, pad_token_id=tokenizer.pad_token_id, max_new_tokens=args.max_new_tokens,
                       temperature=1.0, max_batch_size=args.engine_batch_size, seed=args.seed)


def _remote_engines(args):
    from olmorl.trainer.engines._engine_pool import EnginePool
    from olmorl.trainer.engines._http import RemoteEngine

    return EnginePool([RemoteEngine(u) for u in args.engine_url])


class SourceStats:
    def __init__(self) -> None:
        self.scored = self.kept = self.unscored = self.skipped = 0
        self.pass_rates: list[float] = []

    def as_dict(self) -> dict[str, Any]:
        rates = self.pass_rates
        hist: dict[str, int] = defaultdict(int)
        for r in rates:
            hist[f"{r:.3f}"] += 1
        return {"scored": self.scored, "kept": self.kept, "dropped": self.scored - self.kept,
                "unscored": self.unscored, "skipped_done": self.skipped,
                "kept_frac": self.kept / self.scored if self.scored else None,
                "mean_pass_rate": sum(rates) / len(rates) if rates else None,
                "pass_rate_hist": dict(sorted(hist.items()))}


async def run_filter(args: argparse.Namespace, engine=None) -> dict[str, dict[str, Any]]:
    """Filter `args.data` into `args.out`; returns per-source statistics. `engine` overrides the engine choice."""
    from transformers import AutoTokenizer

    from olmorl.trainer._data import build_prompts, read_rows
    from olmorl.trainer.engines._types import GenerationRequest
    from olmorl.trainer._rewards import GroupScorer, score_completions

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    progress_path = out.with_name(out.name + ".progress.jsonl")
    done = load_progress(progress_path)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    stats: dict[str, SourceStats] = {}
    todo, rows_by_key = [], {}
    for source in args.data:
        rows = read_rows(source)
        st = stats[source] = SourceStats()
        for prompt in build_prompts(rows, tokenizer, source=source, max_prompt_tokens=args.max_prompt_tokens,
                                    verifier_override=args.verifier_override):
            key = _key(source, prompt.index)
            if key in done:
                st.skipped += 1
                continue
            todo.append(prompt)
            rows_by_key[key] = rows[prompt.index]
    log.info("%d prompts to score (%d already done)", len(todo), len(done))

    server = None
    urls = list(args.reward_url)
    if not urls:
        from olmorl.rewards.service._local import LocalRewardServer

        server = LocalRewardServer(workers=args.reward_workers, log_path=str(out.with_name(out.name + ".rewards.log")))
        server.start()
        urls = [server.url]
    if engine is None:
        engine = _remote_engines(args) if args.engine_url else _local_engine(args, tokenizer)
    scorer = GroupScorer(urls, api_key=None, timeout_s=120.0, batch_size=256, max_wait_s=1800.0)
    bar = None if args.no_progress else _progress_bar(len(todo))
    engine.start()
    try:
        with open(out, "a") as kept_file, open(progress_path, "a") as progress_file:
            queue = list(reversed(todo))
            in_flight: dict[int, Any] = {}
            ids = iter(range(10**12))

            def feed() -> None:
                batch = []
                while queue and len(in_flight) < args.prompts_in_flight:
                    prompt = queue.pop()
                    rid = next(ids)
                    in_flight[rid] = prompt
                    batch.append(GenerationRequest(rid, list(prompt.prompt_ids), args.rollouts))
                if batch:
                    engine.submit(batch)

            feed()
            while in_flight:
                groups = await asyncio.to_thread(engine.get_groups, 0.5)
                if not groups:
                    continue
                owners = [in_flight.pop(g.request_id) for g in groups]
                prompts = [p for p, g in zip(owners, groups) for _ in g.completions]
                token_ids = [c.token_ids for g in groups for c in g.completions]
                texts = tokenizer.batch_decode(token_ids, skip_special_tokens=True)
                feed()  # keep the engine busy while these are scored
                results = await score_completions(scorer, prompts, texts)
                for k, prompt in enumerate(owners):
                    group = results[k * args.rollouts:(k + 1) * args.rollouts]
                    _decide(args, prompt, group, stats[prompt.source], rows_by_key, kept_file, progress_file)
                kept_file.flush()
                progress_file.flush()
                if bar is not None:
                    bar.advance(len(owners))
    finally:
        if bar is not None:
            bar.close()
        engine.stop()
        await scorer.close()
        if server is not None:
            server.stop()
    summary = {source: st.as_dict() for source, st in stats.items()}
    out.with_name(out.name + ".stats.json").write_text(json.dumps(summary, indent=2))
    return summary


def _decide(args, prompt, results, st: SourceStats, rows_by_key, kept_file, progress_file) -> None:
    bad = [r for r in results if r.status in ("invalid", "error")]
    if bad:  # not a failure of the model: left undecided, retried by a rerun
        st.unscored += 1
        log.warning("%s row %d: %s (%s); left for a rerun", prompt.source, prompt.index, bad[0].status, bad[0].error)
        return
    passes = sum(float(r.reward) >= args.pass_threshold for r in results)
    rate = passes / len(results)
    keep = args.min_pass_rate <= rate <= args.max_pass_rate
    key = _key(prompt.source, prompt.index)
    st.scored += 1
    st.kept += keep
    st.pass_rates.append(rate)
    if keep:
        kept_file.write(json.dumps(rows_by_key[key], default=str) + "\n")
    progress_file.write(json.dumps({"key": key, "pass_rate": rate, "kept": keep}) + "\n")


class _progress_bar:
    def __init__(self, total: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        self.progress = Progress("filter", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                 transient=False, redirect_stdout=False)
        self.task = self.progress.add_task("prompts", total=total)
        self.progress.start()

    def advance(self, n: int) -> None:
        self.progress.advance(self.task, n)

    def close(self) -> None:
        self.progress.stop()


def print_summary(summary: dict[str, dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="difficulty filter")
    for col in ("source", "scored", "kept", "dropped", "unscored", "skipped (done)", "mean pass rate"):
        table.add_column(col)
    for source, s in summary.items():
        mean = "-" if s["mean_pass_rate"] is None else f"{s['mean_pass_rate']:.3f}"
        table.add_row(source, str(s["scored"]), str(s["kept"]), str(s["dropped"]), str(s["unscored"]),
                      str(s["skipped_done"]), mean)
    Console(stderr=True).print(table)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if not 0.0 <= args.min_pass_rate <= args.max_pass_rate <= 1.0:
        print("olmorl-train filter: need 0 <= --min-pass-rate <= --max-pass-rate <= 1", file=sys.stderr)
        return 2
    start = time.perf_counter()
    summary = asyncio.run(run_filter(args))
    print_summary(summary)
    print(json.dumps({"seconds": round(time.perf_counter() - start, 1), "sources": summary}), flush=True)
    return 0
