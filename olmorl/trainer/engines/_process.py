"""`ProcessEngine`: the same `TorchEngine`, run in a child process so generation and the learner do not share
one interpreter lock. Weights travel through shared memory (torch.multiprocessing), groups come back on a queue.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from typing import Any, Mapping

import torch
import torch.multiprocessing as mp

from olmorl.trainer._lora import same_kind
from olmorl.trainer.engines._types import GenerationRequest, Group
from olmorl.trainer.engines._weight_dtypes import WeightDtypes


def _child(model_dir: str, dtype: str, threads: int, engine_kwargs: dict, commands, results) -> None:
    from transformers import AutoModelForCausalLM

    from olmorl.trainer.engines._torch import TorchEngine

    torch.set_num_threads(threads)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype))
    engine = TorchEngine(model, **engine_kwargs)
    engine.start()
    stop = threading.Event()

    def forward_groups() -> None:
        while not stop.is_set():
            try:
                groups = engine.get_groups(0.1)
            except RuntimeError as exc:
                results.put(("error", repr(exc.__cause__ or exc)))
                return
            if groups:
                results.put(("groups", groups, engine.stats()))

    pump = threading.Thread(target=forward_groups, daemon=True)
    pump.start()
    try:
        while True:
            cmd = commands.get()
            kind = cmd[0]
            if kind == "stop":
                break
            if kind == "submit":
                engine.submit(cmd[1])
            elif kind == "update":
                _, weights, version, token = cmd
                engine.update_weights(weights, version, wait=True)
                results.put(("ack", token, engine.stats()))
            elif kind == "pause":
                engine.pause()
            elif kind == "resume":
                engine.resume()
            elif kind == "get_rng":
                results.put(("ack", cmd[1], engine.get_rng_state()))
            elif kind == "set_rng":
                engine.set_rng_state(cmd[1])
            elif kind == "weight_dtypes":
                results.put(("ack", cmd[1], engine.weight_dtypes))
            elif kind == "stats":
                results.put(("ack", cmd[1], engine.stats()))
    finally:
        stop.set()
        engine.stop()
        pump.join(timeout=5)  # a daemon thread still inside torch at interpreter exit aborts the process
        results.cancel_join_thread()  # exit even if the parent never reads the last messages


class ProcessEngine:
    """A `TorchEngine` in a spawned child process (own interpreter, own torch threads)."""

    def __init__(self, model_dir: str, *, dtype: str = "float32", threads: int = 1, version: int = 0,
                 **engine_kwargs: Any) -> None:
        ctx = mp.get_context("spawn")
        self._commands = ctx.Queue()
        self._results = ctx.Queue()
        self._process = ctx.Process(target=_child, args=(model_dir, dtype, threads, {**engine_kwargs, "version": version},
                                                         self._commands, self._results), daemon=True)
        self.version = version
        self._in_flight = 0
        self._tokens = itertools.count()
        self._acks: dict[int, Any] = {}
        self._ready: list[Group] = []
        self._stats: dict[str, float] = {}
        self._lock = threading.Lock()  # held while reading the results queue (waits up to a get_groups timeout)
        # the in-flight count has its own: a submit (a multi-turn rollout's next turn, from its event loop) must
        # not wait behind a get_groups that is waiting for results
        self._count_lock = threading.Lock()
        self._weight_dtypes: WeightDtypes | None = None  # the child's model's, asked once it runs

    def start(self) -> None:
        self._process.start()

    def stop(self) -> None:
        if self._process.is_alive():
            self._commands.put(("stop",))
            self._process.join(timeout=30)
            if self._process.is_alive():
                self._process.kill()

    def _pump(self, timeout: float | None) -> None:
        """Take one message off the results queue (waiting up to `timeout`) and file it."""
        try:
            msg = self._results.get(timeout=timeout) if timeout else self._results.get_nowait()
        except queue.Empty:
            if not self._process.is_alive():
                raise RuntimeError(f"generation engine process died (exit code {self._process.exitcode})")
            return
        if msg[0] == "groups":
            self._ready.extend(msg[1])
            with self._count_lock:
                self._in_flight -= len(msg[1])
            self._stats = msg[2]
        elif msg[0] == "ack":
            self._acks[msg[1]] = msg[2]
        else:
            raise RuntimeError(f"generation engine failed: {msg[1]}")

    def _call(self, kind: str, *args: Any) -> Any:
        token = next(self._tokens)
        self._commands.put((kind, *args, token))
        with self._lock:
            while token not in self._acks:
                self._pump(0.5)
            return self._acks.pop(token)

    def submit(self, requests: list[GenerationRequest]) -> None:
        with self._count_lock:
            self._in_flight += len(requests)
        self._commands.put(("submit", list(requests)))

    def get_groups(self, timeout: float | None = None) -> list[Group]:
        with self._lock:
            deadline = time.monotonic() + (timeout or 0.0)
            self._pump(timeout)
            while not self._ready and time.monotonic() < deadline:
                self._pump(max(deadline - time.monotonic(), 0.001))
            while True:  # drain what is already there without waiting
                before = len(self._ready)
                self._pump(None)
                if len(self._ready) == before:
                    break
            out, self._ready = self._ready, []
            return out

    def update_weights(self, weights: Mapping[str, torch.Tensor], version: int, wait: bool = False) -> None:
        if self._weight_dtypes is None and self._process.is_alive():
            self._weight_dtypes = self._call("weight_dtypes")
        # cast to the child's dtypes here: the shared-memory copy is then the size the engine holds. Before
        # start (a resume's first sync) the child is not there to ask: that one copy goes as is, cast on load.
        copied = (self._weight_dtypes.cast(weights) if self._weight_dtypes is not None
                  else same_kind(weights, {k: v.detach().to("cpu", copy=True) for k, v in weights.items()}))
        self.version = version
        if wait:
            self._stats = self._call("update", copied, version)
        else:
            self._commands.put(("update", copied, version, -1))

    def pause(self) -> None:
        self._commands.put(("pause",))

    def resume(self) -> None:
        self._commands.put(("resume",))

    @property
    def pid(self) -> int | None:
        """The child process's id (None before start): for measuring its CPU."""
        return self._process.pid

    @property
    def in_flight_groups(self) -> int:
        return self._in_flight

    def stats(self) -> dict[str, float]:
        return dict(self._stats) or {"tokens": 0.0, "idle_s": 0.0, "kv_stale_tokens": 0.0}

    def get_rng_state(self) -> torch.Tensor:
        return self._call("get_rng")

    def set_rng_state(self, state: torch.Tensor) -> None:
        self._commands.put(("set_rng", state))
