"""Multi-turn rollout throughput vs single-turn generation at the same token count, same engine, same run.

Multi-turn: product rows (`a*b=`) on the real reward server's `python` environment (one sandboxed interpreter
per session); a tiny char Llama taught the tool-call format writes the call, the tool answers, the model
answers (`MultiTurnEngine` over a `TorchEngine`). Single-turn: the same prompts, each completion forced
(EOS off) to the mean multi-turn completion length, so both rows put the same number of tokens after the
prompt. Reports completion tokens/s (sampled + tool reply tokens); the gap is the price of turns: a session
per rollout (a sandboxed interpreter started by the server), tool calls, one prefill per turn. Multi-turn runs
twice back to back: each turn re-prefilling the conversation, then with the engine's KV cache kept between a
rollout's turns. A warm-up burst of the same size first, as a training run's previous step: the first turns
overlap session start-up (the loop knows the env's tools) and the client's connections are open, as they are
from a run's second step on (kept alive between steps). All of that once per warm interpreter pool size (`--warm-interpreters 0,64`: a reward server
each, started in turn; the runs wait until its pool is full). A pool smaller than the rollouts open at once
(groups x group size) misses for the rest. Then a breakdown of where a rollout's time goes (the engine's and
MultiTurnEngine's timers) and the pool's hits and misses (the server's metrics). Single-turn runs once per
repeat, right after it, and each multi-turn row's ratio is to its own repeat's single-turn run.
`--engine-process` runs both arms' engine in a child process (`ProcessEngine`, as `TrainConfig.engine_process`):
the multi-turn loop's thread (HTTP client, tokenizer, parser) then no longer holds the interpreter lock the
engine's forwards need.

Usage: python benchmarks/trainer_multiturn_throughput.py [--groups 16 --group-size 4 --batch 32 --repeats 2
    --warm-interpreters 0,64 --engine-process]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import re
import tempfile
import threading
import time

import httpx
import torch


def wait_for_pool(url: str, size: int, timeout_s: float = 300.0) -> float:
    """Seconds until the server's warm interpreter pool holds `size` ready ones."""
    start = time.perf_counter()
    while httpx.get(f"{url}/readyz", timeout=5.0).json()["sessions"]["warm_interpreters_ready"] < size:
        if time.perf_counter() - start > timeout_s:
            raise TimeoutError(f"the warm pool of {size} was not full within {timeout_s:g} s")
        time.sleep(0.2)
    return time.perf_counter() - start


def pool_takes(url: str) -> dict[str, float]:
    """The server's python session pool takes so far: {"hit": n, "miss": n}."""
    text = httpx.get(f"{url}/metrics", timeout=5.0).text
    found = re.findall(r'^olmorl_session_pool_takes_total\{[^}]*kind="python"[^}]*result="(\w+)"[^}]*\} (\S+)$',
                       text, re.M)
    return {result: float(n) for result, n in found}


def session_requests(url: str) -> float:
    """HTTP requests the server answered on its session routes so far (olmorl_requests_total, any status)."""
    text = httpx.get(f"{url}/metrics", timeout=5.0).text
    return sum(float(n) for n in re.findall(
        r'^olmorl_requests_total\{[^}]*route="/v1/sessions[^"]*"[^}]*\} (\S+)$', text, re.M))


def machine_cpu_s() -> float:
    """CPU seconds every process on the machine has used so far (both cores: the run's and everyone else's)."""
    import psutil

    times = psutil.cpu_times()
    return times.user + times.nice + times.system + times.irq + times.softirq


def cpu_seconds(server_pid: int, engine_pid: int | None) -> dict[str, float]:
    """CPU seconds so far: the multi-turn loop's thread (HTTP client, tokenizer, parser), the whole trainer
    process (with the engine's child process, if any), and the reward server with its sandboxes (the CPU the run
    competes for). The engine thread's own CPU is the engine's `cpu_s`, wherever it runs."""
    import psutil

    names = {t.native_id: t.name for t in threading.enumerate()}
    me = psutil.Process()
    out = {"olmorl-multiturn": 0.0}
    for t in me.threads():
        if names.get(t.id) in out:
            out[names[t.id]] += t.user_time + t.system_time
    times = me.cpu_times()
    out["process"] = times.user + times.system
    if engine_pid is not None:
        times = psutil.Process(engine_pid).cpu_times()
        out["process"] += times.user + times.system
    out["server"] = 0.0
    server = psutil.Process(server_pid)
    for proc in [server, *server.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            out["server"] += times.user + times.system + times.children_user + times.children_system
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=16)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--sft-steps", type=int, default=250)
    ap.add_argument("--repeats", type=int, default=2, help="alternating re-prefill / KV reuse runs (load varies)")
    ap.add_argument("--warm-interpreters", default="0,64",
                    help="comma-separated pool sizes (sessions.warm_interpreters), one reward server each")
    ap.add_argument("--warm-max-starting", type=int, default=4, help="sessions.warm_max_starting of each server")
    ap.add_argument("--engine-process", action="store_true",
                    help="both arms' engine in a child process (TrainConfig.engine_process), not the benchmark's")
    args = ap.parse_args()

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from olmorl.rewards.service._local import LocalRewardServer
    from olmorl.trainer._data import build_prompts
    from olmorl.trainer._multiturn import MultiTurnEngine, RolloutLimits
    from olmorl.trainer._sessions import SessionCalls
    from olmorl.trainer._tiny import TOOL_CHAT_TEMPLATE, build_tiny_llama, product_rows, product_trace, supervised
    from olmorl.trainer._toolcalls import HermesToolCalls, ToolChat
    from olmorl.trainer.engines import ProcessEngine, TorchEngine
    from olmorl.trainer.engines._types import GenerationRequest

    torch.set_num_threads(1)
    root = tempfile.mkdtemp(prefix="olmorl-mt-bench-")
    build_tiny_llama(root, hidden=64, layers=1, heads=2, chat_template=TOOL_CHAT_TEMPLATE)
    print(f"{os.cpu_count()} cores; sandbox backend {os.environ.get('OLMORL_SANDBOX_BACKEND', 'auto')}; engine "
          f"{'in a child process' if args.engine_process else 'in the benchmark process'}", flush=True)
    chat = ToolChat(AutoTokenizer.from_pretrained(root), HermesToolCalls())
    tok = chat.tokenizer
    train = product_rows(64, seed=1)
    supervised(root, [product_trace(chat, r, r["task"]["ground_truth"] + "\n") for r in train],
               steps=args.sft_steps, batch_size=32, lr=3e-3, log_every=0)
    prompts = build_prompts(product_rows(args.groups, seed=2), tok, source="bench", max_prompt_tokens=64)
    pools = [int(n) for n in args.warm_interpreters.split(",")]

    def engine(kept_caches: int | None):
        kwargs = dict(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, max_new_tokens=128,
                      max_batch_size=args.batch, kept_caches=kept_caches)
        if args.engine_process:
            return ProcessEngine(root, threads=1, **kwargs)
        return TorchEngine(AutoModelForCausalLM.from_pretrained(root), **kwargs)

    def engine_pid(e) -> int | None:
        return e.pid if isinstance(e, ProcessEngine) else None

    def drain(e, n):
        groups = []
        while len(groups) < n:
            groups += e.get_groups(0.5)
        return groups

    def run_multi(server, pool: int, kept_caches: int | None):
        multi = MultiTurnEngine(engine(kept_caches), chat, SessionCalls([server.url]),
                                RolloutLimits(max_turns=3, max_total_tokens=250, max_new_tokens=128))
        multi.start()
        # A warm-up burst of the same size, as a training run's previous step: the loop learns the env's tools
        # and the client's connections are open (kept between steps, keep_alive_s); the pool refills after it.
        warm = build_prompts(product_rows(args.groups, seed=3), tok, source="warm", max_prompt_tokens=64)
        multi.submit([GenerationRequest(f"warm-{i}", list(p.prompt_ids), args.group_size, meta=p)
                      for i, p in enumerate(warm)])
        drain(multi, len(warm))
        wait_for_pool(server.url, pool)
        # a full collection owed to the set-up (training the model) would land in whichever thread allocates next:
        # taken now, so no measured burst pays it (it put 0.2 s into one run's loop thread)
        gc.collect()
        takes_before, requests_before = pool_takes(server.url), session_requests(server.url)
        pids = server.process.pid, engine_pid(multi.inner)
        before, cpu_before, load = multi.stats(), cpu_seconds(*pids), os.getloadavg()[0]
        machine = machine_cpu_s()
        start = time.perf_counter()
        multi.submit([GenerationRequest(i, list(p.prompt_ids), args.group_size, meta=p) for i, p in enumerate(prompts)])
        groups = drain(multi, len(prompts))
        wall = time.perf_counter() - start
        refilled = httpx.get(f"{server.url}/readyz", timeout=5.0).json()["sessions"]["warm_interpreters_ready"]
        stats = {k: v - before.get(k, 0.0) for k, v in multi.stats().items()}
        stats.update({f"cpu/{k}": v - cpu_before[k] for k, v in cpu_seconds(*pids).items()}, load=load,
                     machine_cpu_s=machine_cpu_s() - machine)
        stats.update({f"takes/{k}": v - takes_before.get(k, 0.0) for k, v in pool_takes(server.url).items()})
        stats["session_requests"] = session_requests(server.url) - requests_before
        # interpreters the pool started again during the run: each took a sandbox start's CPU (about 40 ms) from the
        # cores the engine runs on (hits past the pool's size were misses, started on the open's path instead)
        stats["refilled"] = refilled - max(pool - stats.get("takes/hit", 0.0), 0.0)
        multi.stop()
        return [c for g in groups for c in g.completions], wall, stats

    def run_single(length: int):
        single = engine(0)
        single.start()
        single.submit([GenerationRequest("warm-up", list(prompts[0].prompt_ids), 1, max_new_tokens=4)])
        drain(single, 1)  # a child process's start-up (spawn, model load) is not the measured run's
        before, machine, load = single.stats(), machine_cpu_s(), os.getloadavg()[0]
        start = time.perf_counter()
        single.submit([GenerationRequest(i, list(p.prompt_ids), args.group_size, max_new_tokens=length,
                                         ignore_eos=True) for i, p in enumerate(prompts)])
        drain(single, len(prompts))
        wall = time.perf_counter() - start
        stats = {k: single.stats()[k] - before[k] for k in ("busy_s", "cpu_s", "forwards")}
        stats.update(load=load, machine_cpu_s=machine_cpu_s() - machine)
        single.stop()
        return wall, stats

    # Single-turn runs once per repeat, right after that repeat's multi-turn pair, so each ratio compares runs
    # seconds apart (the single-turn row alone varied 2-3x over a loaded window).
    runs, singles, length = {}, {}, 0
    for pool in pools:  # back to back, same prompts: every turn re-prefills the conversation, then KV reuse
        server = LocalRewardServer(log_path=f"{root}/reward-server-{pool}.log", extra_env={
            "OLMORL_SESSIONS_WARM_INTERPRETERS": str(pool),
            "OLMORL_SESSIONS_WARM_MAX_STARTING": str(args.warm_max_starting)}).start()
        try:
            print(f"pool {pool}: full after {wait_for_pool(server.url, pool):.1f} s", flush=True)
            for i in range(args.repeats):
                for name, kept in (("re-prefill", 0), ("KV reuse", None)):
                    label = f"pool {pool}, {name} #{i + 1}"
                    runs[label] = run_multi(server, pool, kept)
                    if not length:  # single-turn's length: the first multi-turn run's mean completion
                        done = runs[label][0]
                        length = round(sum(len(c.token_ids) for c in done) / len(done))
                    wait_for_pool(server.url, pool)  # the next run starts with the pool full again
                singles[f"pool {pool}, #{i + 1}"] = run_single(length)
        finally:
            server.stop()
    completions = next(iter(runs.values()))[0]
    n = len(completions)
    print(f"| rollouts ({n}) | completion tokens | wall s | tokens/s | multi / single (same repeat) | turns "
          "| tool calls | solved |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (single_s, single) in singles.items():
        print(f"| single-turn, {name} (EOS off, {length} tokens each; load {single['load']:.1f}; engine busy "
              f"{single['busy_s']:.2f} s, CPU {single['cpu_s']:.2f} s, {single['forwards']:.0f} forwards; all "
              f"processes' CPU {single['machine_cpu_s']:.2f} s) | {n * length} | {single_s:.2f} "
              f"| {n * length / single_s:.0f} | | | | |")
    for name, (done, wall, stats) in runs.items():
        tokens = sum(len(c.token_ids) for c in done)
        solved = sum(c.result.reward == 1.0 for c in done)
        single_s, _ = singles[name.split(",")[0] + ", " + name.rsplit(" ", 1)[1]]
        ratio = tokens / wall / (n * length / single_s)
        print(f"| multi-turn, {name} | {tokens} | {wall:.2f} | {tokens / wall:.0f} | {ratio:.2f} "
              f"| {stats['multiturn/turns'] / n:.2f} | {stats['multiturn/tool_calls'] / n:.2f} | {solved}/{n} |")
    print()
    print_breakdown(runs, n)
    print("| pool takes (hit / miss) | " + " | ".join(
        f"{runs[m][2].get('takes/hit', 0):.0f} / {runs[m][2].get('takes/miss', 0):.0f}" for m in runs) + " |")
    print("| interpreters the pool started again during the run | " + " | ".join(
        f"{runs[m][2]['refilled']:.0f}" for m in runs) + " |")


def print_breakdown(runs, n: int) -> None:
    """Where a rollout's time goes: each phase summed over rollouts (they overlap), per rollout and as a share
    of the rollouts' summed lifetimes; what the remainder is: the rollout's own bookkeeping and event loop."""
    phases = [("session open (POST /v1/sessions)", "open_s"), ("verify + close (POST .../verify)", "verify_s"),
              ("tool calls, client round trip", "tool_s"), ("  of which the tool's run on the server", None),
              ("turns: engine queue + prefill + decode", "generate_s"), ("template, tokenizer, parser", "tokenize_s")]
    names = list(runs)
    print("| phase (ms per rollout, share of rollout time) | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label, key in phases:
        cells = []
        for name in names:
            stats = runs[name][2]
            value = stats["multiturn/" + (key or "tool_server_s")]
            cells.append(f"{value / n * 1000:.0f} ({value / stats['multiturn/rollout_s']:.0%})")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("| rollout, open to verified | " + " | ".join(
        f"{runs[m][2]['multiturn/rollout_s'] / n * 1000:.0f}" for m in names) + " |")
    for label, key in (("prompt tokens prefilled", "prefill_tokens"), ("prompt tokens read from a kept cache",
                                                                        "prefill_tokens_reused")):
        print(f"| {label} | " + " | ".join(f"{runs[m][2][key]:.0f}" for m in names) + " |")
    # (not its idle time: an idle spell is counted when it ends, so the wait for the pool's refill lands here)
    print("| engine busy s | " + " | ".join(f"{runs[m][2]['busy_s']:.2f}" for m in names) + " |")
    print("| load (1 min average) at the start | " + " | ".join(f"{runs[m][2]['load']:.1f}" for m in names) + " |")
    print("| engine forwards / pad tokens fed | " + " | ".join(
        f"{runs[m][2]['forwards']:.0f} / {runs[m][2]['forward_pad_tokens']:.0f}" for m in names) + " |")
    print("| CPU s: engine thread / multi-turn loop thread / trainer process (and engine's) / reward server | "
          + " | ".join("{cpu_s:.2f} / {cpu/olmorl-multiturn:.2f} / {cpu/process:.2f} / {cpu/server:.2f}".format_map(
            runs[m][2]) for m in names) + " |")
    print("| all processes' CPU s during the run (the machine's 2 cores) | " + " | ".join(
        f"{runs[m][2]['machine_cpu_s']:.2f}" for m in names) + " |")
    print("| session HTTP requests per rollout (at the server) | " + " | ".join(
        f"{runs[m][2]['session_requests'] / n:.2f}" for m in names) + " |")
    print("| rows per decode step | " + " | ".join(
        f"{runs[m][2]['row_steps'] / max(runs[m][2]['decode_steps'], 1):.1f}" for m in names) + " |")


if __name__ == "__main__":
    main()
