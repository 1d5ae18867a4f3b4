"""A generation engine served over HTTP: `olmorl-engine --model DIR` (or `python -m olmorl.trainer.engines._server`).

The control protocol follows vLLM's RL routes, so a learner drives olmorl's transformers engine and a
`vllm serve` instance the same way:

  POST /v1/generate          {"requests": [...]} -> NDJSON stream, one finished group per line
  POST /v1/logprobs          {"sequences": [{"prompt_ids", "completion_ids"}]} -> {"logprobs": [[...], ...]}: the
                             logprob (temperature 1) of every completion token, for a teacher in on-policy
                             distillation (olmorl.trainer._distill); 400 names the first bad sequence
  POST /pause?mode=keep|abort keep: freeze running requests; abort: end them now with their partial output
  POST /resume               continue; waits (deadline) until staged weights are live
  POST /update_weights       {"path", "version", "timeout_s"}: load a safetensors file (e.g. in /dev/shm);
                             applied between two decode steps (inflight) or, while paused, at resume;
                             a file whose metadata names a LoRA spec is an adapter-only update (_lora.py)
  GET  /health               version, paused, in-flight groups, counters, the weights' dtypes (weight_dtype
                             and weight_dtype_exceptions: a learner sends each sync already cast to them)
  GET/PUT /rng_state         the sampling generator (checkpoints)

Every weight update carries a version (monotonic; a lower one is refused with 409) and a deadline (504
when the engine has not switched to it in time). Bad weights (unknown names, wrong shapes) are refused
with 400 before they touch the model.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import itertools
import json
import logging
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, TypedDict, cast

import torch

from olmorl import __version__
from olmorl.rewards.service._local import stop_process_group
from olmorl.trainer._lora import AdapterWeights, adapter_problems, read_weights_file
from olmorl.trainer._distill import sequence_logprobs
from olmorl.trainer.engines._torch import TorchEngine
from olmorl.trainer.engines._types import GenerationRequest, Group

if TYPE_CHECKING:
    from transformers import PreTrainedModel

log = logging.getLogger("olmorl.trainer.engine_server")


class ServedTorchEngine(TorchEngine):
    """`TorchEngine` plus vLLM's abort: end every running and waiting sequence now, partial output kept."""

    def abort_all(self, timeout: float) -> int:
        done = threading.Event()
        box: list[int] = []
        with self._cv:
            self._commands.append(("abort", done, box))
            self._cv.notify_all()
        if not done.wait(timeout):
            raise TimeoutError(f"engine did not abort within {timeout:g} s")
        return box[0]

    def _apply(self, command: tuple) -> None:
        if command[0] != "abort":
            return super()._apply(command)
        _, done, box = command
        victims = list(self._rows) + list(self._waiting)
        self._rows, self._cache, self._mask = [], None, None
        self._waiting.clear()
        self._stale_rows.clear()
        for seq in victims:
            seq.finish_reason = "abort"
            self._finish(seq)
        box.append(len(victims))
        done.set()


def group_to_json(group: Group) -> dict[str, Any]:
    return {"request_id": group.request_id, "prompt_ids": group.prompt_ids, "submitted_version": group.submitted_version,
            "completions": [asdict(c) for c in group.completions]}


class _ServerState(TypedDict):
    paused: bool
    staged_version: int  # the newest weights received (applied at once, or at resume while paused)
    syncs: int
    last_sync_s: float


def create_app(engine: ServedTorchEngine, *, model_info: dict[str, Any] | None = None):
    from fastapi import Body, FastAPI, HTTPException, Query, Request
    from fastapi.responses import JSONResponse, Response, StreamingResponse

    @contextlib.asynccontextmanager
    async def lifespan(app):
        engine.start()
        task = asyncio.create_task(pump())
        try:
            yield
        finally:
            task.cancel()
            await asyncio.to_thread(engine.stop)

    app = FastAPI(title="olmorl engine", lifespan=lifespan)
    streams: dict[int, asyncio.Queue] = {}  # server request id -> the stream waiting for that group
    owner: dict[int, tuple[int, Any]] = {}  # server request id -> (stream, client request id)
    ids = itertools.count()
    state: _ServerState = {"paused": False, "staged_version": engine.version, "syncs": 0, "last_sync_s": 0.0}
    expected = {k: (tuple(v.shape), v.dtype) for k, v in engine.model.state_dict().items()}
    weight_dtypes = engine.weight_dtypes.to_info()  # the learner casts each sync to these
    update_lock = asyncio.Lock()

    def engine_error() -> str | None:
        return None if engine._error is None else f"{type(engine._error).__name__}: {engine._error}"

    async def pump() -> None:
        """Route finished groups from the engine's one output queue to the stream that asked for them."""
        while True:
            try:
                groups = await asyncio.to_thread(engine.get_groups, 0.2)
            except RuntimeError:
                for q in streams.values():
                    q.put_nowait(None)
                return
            for g in groups:
                stream, client_id = owner.pop(g.request_id)
                g.request_id = client_id
                waiting = streams.get(stream)
                if waiting is not None:  # the client may have gone away
                    waiting.put_nowait(g)

    @app.get("/health")
    async def health():
        error = engine_error()
        body = {"status": "error" if error else "ok", "error": error, "version": engine.version,
                "staged_version": state["staged_version"], "paused": state["paused"],
                "in_flight_groups": engine.in_flight_groups, "stats": engine.stats(),
                "max_new_tokens": engine.max_new_tokens, "syncs": state["syncs"], "last_sync_s": state["last_sync_s"],
                **weight_dtypes, **(model_info or {})}
        return JSONResponse(body, status_code=503 if error else 200)

    @app.post("/v1/generate")
    async def generate(body: dict = Body(...)):
        if engine_error():
            raise HTTPException(503, f"engine failed: {engine_error()}")
        try:
            raw = body["requests"]
            stream = next(ids)
            requests = []
            for r in raw:
                sid = next(ids)
                requests.append(GenerationRequest(sid, [int(t) for t in r["prompt_ids"]], int(r["n"]),
                                                  max_new_tokens=r.get("max_new_tokens"),
                                                  ignore_eos=bool(r.get("ignore_eos", False)),
                                                  stop=tuple(tuple(int(t) for t in seq) for seq in r.get("stop") or ()),
                                                  cache_key=_cache_key(r.get("cache_key"))))
                owner[sid] = (stream, r["request_id"])
        except (KeyError, TypeError, ValueError) as exc:
            raise HTTPException(400, f"bad generate request: {exc!r}")
        q: asyncio.Queue = asyncio.Queue()
        streams[stream] = q
        engine.submit(requests)

        async def lines():
            try:
                for _ in range(len(requests)):
                    group = await q.get()
                    if group is None:
                        yield json.dumps({"error": f"engine failed: {engine_error()}"}) + "\n"
                        return
                    yield json.dumps(group_to_json(group)) + "\n"
            finally:
                streams.pop(stream, None)

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    score_lock = asyncio.Lock()  # one scoring pass at a time (the engine's own thread keeps decoding beside it)
    vocab_size = cast("PreTrainedModel", engine.model).get_output_embeddings().weight.shape[0]  # an HF model

    @app.post("/v1/logprobs")
    async def logprobs(body: dict = Body(...)):
        try:
            sequences = [([int(t) for t in s["prompt_ids"]], [int(t) for t in s["completion_ids"]])
                         for s in body["sequences"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise HTTPException(400, f"bad logprobs request: {exc!r}")
        for k, (prompt, completion) in enumerate(sequences):
            if not prompt:
                raise HTTPException(400, f"sequence {k}: prompt_ids is empty (the first completion token needs a context)")
            outside = [t for t in prompt + completion if not 0 <= t < vocab_size]
            if outside:
                raise HTTPException(400, f"sequence {k}: token id {outside[0]} is outside the vocabulary "
                                         f"(0..{vocab_size - 1})")
        async with score_lock:
            try:
                values = await asyncio.to_thread(sequence_logprobs, engine.model, sequences)
            except (RuntimeError, IndexError, ValueError) as exc:
                raise HTTPException(500, f"scoring failed: {type(exc).__name__}: {exc}")
        return {"logprobs": values}

    @app.post("/pause")
    async def pause(mode: str = Query("keep"), timeout_s: float = Query(30.0)):
        if mode not in ("keep", "abort"):
            raise HTTPException(400, f"mode must be keep or abort, not {mode!r}")
        aborted = 0
        if mode == "abort":  # the engine thread must be running to take the abort command
            try:
                aborted = await asyncio.to_thread(engine.abort_all, timeout_s)
            except TimeoutError as exc:
                raise HTTPException(504, str(exc))
        engine.pause()
        state["paused"] = True
        return {"paused": True, "mode": mode, "aborted": aborted}

    async def wait_for_version(version: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while engine.version < version:
            if engine_error():
                raise HTTPException(500, f"engine failed while loading version {version}: {engine_error()}")
            if time.monotonic() > deadline:
                raise HTTPException(504, f"engine did not switch to version {version} within {timeout_s:g} s "
                                         f"(still at {engine.version})")
            await asyncio.sleep(0.005)

    @app.post("/resume")
    async def resume(timeout_s: float = Query(30.0)):
        engine.resume()
        state["paused"] = False
        await wait_for_version(state["staged_version"], timeout_s)
        return {"paused": False, "version": engine.version}

    @app.post("/update_weights")
    async def update_weights(body: dict = Body(...)):
        start = time.perf_counter()
        try:
            path, version, timeout_s = str(body["path"]), int(body["version"]), float(body.get("timeout_s", 60.0))
        except (KeyError, TypeError, ValueError) as exc:
            raise HTTPException(400, f"bad update request: {exc!r}")
        async with update_lock:
            if version < state["staged_version"]:
                raise HTTPException(409, f"stale weight update: version {version} < current {state['staged_version']}")
            try:
                weights = await asyncio.wait_for(asyncio.to_thread(read_weights_file, path), timeout_s)
            except asyncio.TimeoutError:
                raise HTTPException(504, f"loading {path} took longer than {timeout_s:g} s")
            except (OSError, ValueError, RuntimeError) as exc:  # safetensors raises SafetensorError (an OSError subclass or ValueError)
                raise HTTPException(400, f"cannot read weights from {path}: {exc}")
            if isinstance(weights, AdapterWeights):  # adapter-only update: the base model stays as loaded
                problems = adapter_problems(engine.model, weights)
            else:
                problems = [f"unknown tensor {k}" for k in weights if k not in expected]
                problems += [f"{k}: shape {tuple(v.shape)} != {expected[k][0]}" for k, v in weights.items()
                             if k in expected and tuple(v.shape) != expected[k][0]]
            if problems:
                raise HTTPException(400, "weights do not fit the model: " + "; ".join(problems[:5]))
            engine.update_weights(weights, version)
            state["staged_version"] = version
            if not state["paused"]:  # paused: applied first thing at resume
                await wait_for_version(version, max(timeout_s - (time.perf_counter() - start), 0.0))
            state["syncs"] += 1
            state["last_sync_s"] = time.perf_counter() - start
        return {"version": version, "applied": engine.version >= version, "tensors": len(weights),
                "seconds": state["last_sync_s"]}

    @app.get("/rng_state")
    async def get_rng():
        buf = io.BytesIO()
        torch.save(engine.get_rng_state(), buf)
        return Response(buf.getvalue(), media_type="application/octet-stream")

    @app.put("/rng_state")
    async def set_rng(request: Request):
        engine.set_rng_state(torch.load(io.BytesIO(await request.body())))
        return {"ok": True}

    @app.post("/reset_prefix_cache")
    async def reset_prefix_cache():
        return {"ok": True, "note": "the transformers engine keeps no prefix cache"}

    return app


class EngineServerProcess:
    """`olmorl-engine` as a child process on loopback (tests, single-machine multi-engine runs)."""

    def __init__(self, model_dir: str, *, port: int | None = None, log_path: str | None = None,
                 extra_args: list[str] | None = None, threads: int = 1) -> None:
        from olmorl.rewards.service._local import free_port

        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [sys.executable, "-m", "olmorl.trainer.engines._server", "--model", model_dir,
                     "--port", str(self.port), "--threads", str(threads), *(extra_args or [])]
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    def start(self) -> "EngineServerProcess":
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        self.process = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        return self

    def stop(self) -> None:
        stop_process_group(self.process)


def _cache_key(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"cache_key must be a string or null, not {type(value).__name__}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="olmorl-engine", description="Serve olmorl's transformers engine over HTTP.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--model", required=True, help="HF model directory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-k", type=int, default=0, help="sample among the k likeliest tokens (0 = off)")
    parser.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass (1.0 = off)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--update-mode", default="inflight", choices=("inflight", "abort"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--eos-token-id", type=int, default=None, help="default: the model's generation config")
    parser.add_argument("--pad-token-id", type=int, default=None)
    args = parser.parse_args(argv)

    import uvicorn
    from transformers import AutoModelForCausalLM

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=getattr(torch, args.dtype))
    gen = model.generation_config
    eos = args.eos_token_id if args.eos_token_id is not None else (gen.eos_token_id or model.config.eos_token_id)
    pad = args.pad_token_id if args.pad_token_id is not None else (gen.pad_token_id or model.config.pad_token_id or 0)
    engine = ServedTorchEngine(model, eos_token_id=eos, pad_token_id=pad, max_new_tokens=args.max_new_tokens,
                               temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                               max_batch_size=args.batch_size,
                               update_mode=args.update_mode, seed=args.seed)
    app = create_app(engine, model_info={"model": args.model, "engine": "transformers"})
    # idle connections outlive a training step, and the client's (60 s) expire first
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", timeout_keep_alive=75)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
