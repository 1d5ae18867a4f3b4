"""A remote `vllm serve` behind the loop's `Engine` interface (UNVERIFIED, like `_vllm`: CUDA only).

The server is started with `VLLM_SERVER_DEV_MODE=1` (the weight-transfer and pause routes),
`--weight-transfer-config '{"backend": "nccl"}'` and `--logprobs-mode processed_logprobs` (the behaviour
logprobs). Completions stream from `/v1/completions` (token ids, per-token logprobs, each token stamped
with the policy version current when it arrives); a weight sync is `_vllm`'s sequence over the dev-mode
routes while this process broadcasts over NCCL, each step within the sync deadline (`WeightSyncError`). A
LoRA policy's updates reload one adapter name in place (`/v1/load_lora_adapter`, `_vllm_lora.py`).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any, Mapping

import torch

from olmorl.trainer._lora import AdapterWeights
from olmorl.trainer.engines._http import EngineError, WeightSyncError, wait_ready
from olmorl.trainer.engines._sampling import check_sampling
from olmorl.trainer.engines._types import Completion, GenerationRequest, Group
from olmorl.trainer.engines._vllm import NcclSender, StreamedEngine, Streams, weight_update_info
from olmorl.trainer.engines._vllm_lora import SERVER_ADAPTER_NAME, AdapterVersions


class VLLMServerEngine(StreamedEngine):
    """A remote `vllm serve` (dev mode, NCCL weight transfer, processed logprobs) behind the `Engine` interface."""

    def __init__(self, url: str, *, model: str, max_new_tokens: int, temperature: float = 1.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int = 0, sync_timeout_s: float = 300.0, nccl_address: str = "127.0.0.1",
                 nccl_port: int = 29556, adapter_dir: str | None = None) -> None:
        import httpx

        check_sampling(temperature, top_k, top_p)
        self.top_k, self.top_p = top_k, top_p
        self.url, self.model, self.max_new_tokens, self.temperature = url.rstrip("/"), model, max_new_tokens, temperature
        self.seed, self.sync_timeout_s = seed, sync_timeout_s
        self.nccl_address, self.nccl_port = nccl_address, nccl_port
        self.http = httpx.Client(base_url=self.url, timeout=sync_timeout_s)
        self.streams = Streams()
        self.sender = NcclSender()
        self.ids = itertools.count()
        self.adapter_dir = adapter_dir  # where adapter versions are written: a path the server can read
        self.adapters: AdapterVersions | None = None

    def start(self) -> None:
        wait_ready([self.url], self.sync_timeout_s)

    def stop(self) -> None:
        self.http.close()
        if self.adapters is not None:
            self.adapters.close()

    def _launch(self, req: GenerationRequest) -> None:
        threading.Thread(target=self._generate, args=(req,), daemon=True).start()

    def _generate(self, req: GenerationRequest) -> None:
        try:
            model = self.model if self.adapters is None else SERVER_ADAPTER_NAME
            body = {"model": model, "prompt": list(req.prompt_ids), "n": req.n, "stream": True,
                    "max_tokens": req.max_new_tokens or self.max_new_tokens, "temperature": self.temperature,
                    "top_p": self.top_p, "top_k": self.top_k, "logprobs": 0, "return_tokens_as_token_ids": True,
                    "ignore_eos": req.ignore_eos, "seed": self.seed + next(self.ids)}
            submitted = self.version
            parts: dict[int, tuple[list[int], list[float], list[int]]] = {i: ([], [], []) for i in range(req.n)}
            finish = {i: "stop" for i in range(req.n)}
            with self.http.stream("POST", "/v1/completions", json=body, timeout=None) as r:
                if r.status_code != 200:
                    raise EngineError(f"vllm serve refused ({r.status_code}): {r.read().decode()[:500]}")
                for line in r.iter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    for choice in json.loads(line[6:])["choices"]:
                        ids, lps, vers = parts[choice["index"]]
                        lp = choice.get("logprobs") or {}
                        for tok, value in zip(lp.get("tokens", []), lp.get("token_logprobs", [])):
                            ids.append(int(tok.removeprefix("token_id:")))
                            lps.append(float(value))
                            vers.append(self.version)
                        if choice.get("finish_reason"):
                            finish[choice["index"]] = "length" if choice["finish_reason"] == "length" else "stop"
            completions = [Completion(*parts[i], finish[i]) for i in range(req.n)]
            self.streams.tokens += sum(len(c.token_ids) for c in completions)
            self.streams.out.put(Group(req.request_id, list(req.prompt_ids), completions, req.meta, submitted))
        except BaseException as exc:
            self.streams.error = exc
        finally:
            self.streams.in_flight -= 1

    def _post(self, path: str, **kwargs: Any) -> Any:
        import httpx

        try:
            r = self.http.post(path, timeout=self.sync_timeout_s, **kwargs)
        except httpx.HTTPError as exc:
            raise WeightSyncError(f"vllm serve {self.url}{path}: {type(exc).__name__}: {exc}") from exc
        if r.status_code != 200:
            raise WeightSyncError(f"vllm serve {self.url}{path} refused ({r.status_code}): {r.text[:500]}")
        return r.json() if r.content else None

    def _in_thread(self, target, *args) -> threading.Thread:
        box: dict[str, BaseException] = {}

        def run():
            try:
                target(*args)
            except BaseException as exc:
                box["error"] = exc

        thread = threading.Thread(target=run, daemon=True)
        thread.box = box  # type: ignore[attr-defined]
        thread.start()
        return thread

    def _join(self, thread: threading.Thread, what: str, deadline: float) -> None:
        thread.join(max(deadline - time.monotonic(), 0.0))
        if thread.is_alive():
            raise WeightSyncError(f"{what} to {self.url} missed its {self.sync_timeout_s:g} s deadline "
                                  "(NCCL has no timeout of its own: restart the engine)")
        if thread.box:  # type: ignore[attr-defined]
            raise WeightSyncError(f"{what} to {self.url} failed: {thread.box['error']}")  # type: ignore[attr-defined]

    def update_weights(self, weights: Mapping[str, torch.Tensor], version: int, wait: bool = True) -> None:
        if isinstance(weights, AdapterWeights):
            self._load_adapter(weights, version)
            return
        deadline = time.monotonic() + self.sync_timeout_s
        if self.sender.group is None:
            world = 1 + int(self.http.get("/get_world_size").json()["world_size"])
            sender = self._in_thread(self.sender.init, self.nccl_address, self.nccl_port, world)
            self._post("/init_weight_transfer_engine", json={"init_info": {
                "master_address": self.nccl_address, "master_port": self.nccl_port, "rank_offset": 1,
                "world_size": world}})
            self._join(sender, "NCCL group set-up", deadline)
        self._post("/pause", params={"mode": "keep", "clear_cache": "false"})
        try:
            self._post("/start_weight_update", json={})
            sender = self._in_thread(self.sender.send, weights)
            self._post("/update_weights", json={"update_info": weight_update_info(weights)})
            self._join(sender, f"weight broadcast of version {version}", deadline)
            self._post("/finish_weight_update", json={})
            self._post("/reset_prefix_cache")
            self.version = version
        finally:
            self._post("/resume")

    def _load_adapter(self, weights: AdapterWeights, version: int) -> None:
        if self.adapters is None:
            self.adapters = AdapterVersions(self.adapter_dir)
        path = self.adapters.write(weights, version)
        self._post("/v1/load_lora_adapter", json={"lora_name": SERVER_ADAPTER_NAME, "lora_path": str(path),
                                                  "load_inplace": True})
        self.version = version
        self.adapters.retired()  # the server holds one adapter name, reloaded in place: older directories go

    def pause(self, mode: str = "keep") -> None:
        self._post("/pause", params={"mode": mode, "clear_cache": "false"})

    def resume(self) -> None:
        self._post("/resume")
