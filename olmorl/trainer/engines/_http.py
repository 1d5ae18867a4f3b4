"""Engines in other processes or machines, driven over the HTTP control protocol of `engines._server`.

`RemoteEngine` is one engine server behind the loop's `Engine` interface (`_engine_pool.EnginePool` spreads
prompts over several). On CPU, weights travel as one safetensors file in shared memory (/dev/shm) that the
engine loads (`write_weights_file`), removed once acknowledged. Weights are written already cast to the dtypes
the engines report in /health (`_weight_dtypes`): an fp32 learner's sync to bf16 engines is a bf16 file.

Every sync has a version and a deadline: an engine that does not acknowledge in time raises
`WeightSyncError` naming the engine, the version and the reason, instead of hanging the learner.
"""

from __future__ import annotations

import io
import itertools
import os
import queue
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Mapping

import httpx
import torch

from olmorl.clients._policy import http_limits
from olmorl.trainer._lora import weights_file_metadata
from olmorl.trainer.engines._types import Completion, GenerationRequest, Group, take_groups
from olmorl.trainer.engines._weight_dtypes import WeightDtypes


class EngineError(RuntimeError):
    """An engine server failed, went away or answered with an error."""


class WeightSyncError(EngineError):
    """A weight update was refused or not acknowledged before its deadline."""


def weights_dir() -> str:
    """Shared memory when the OS has it (no disk I/O), else the temp directory."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


def write_weights_file(weights: Mapping[str, torch.Tensor], version: int, directory: str | None = None) -> str:
    from safetensors.torch import save_file

    path = os.path.join(directory or weights_dir(), f"olmorl-weights-{uuid.uuid4().hex[:12]}-v{version}.safetensors")
    # tied weights share storage; safetensors wants each tensor on its own
    save_file({k: v.detach().to("cpu").contiguous().clone() for k, v in weights.items()}, path,
              metadata=weights_file_metadata(weights))  # an adapter update names its LoRA spec
    return path


@dataclass
class _Slot:
    """One completion of a submitted group; an aborted one is continued and its pieces joined."""
    parts: list[Completion]
    done: bool = False


class RemoteEngine:
    """The `Engine` interface over HTTP to one `olmorl-engine` (or protocol-compatible) server.

    Requests aborted by a `pause(mode="abort")` are resubmitted after resume with their partial output as
    prompt (AReaL's interruptible generation): the group comes back whole, tokens carrying their versions.
    """

    def __init__(self, url: str, *, sync_timeout_s: float = 60.0, request_timeout_s: float = 30.0,
                 ready_timeout_s: float = 120.0) -> None:
        self.url = url.rstrip("/")
        self.sync_timeout_s = sync_timeout_s
        self.request_timeout_s = request_timeout_s
        self.ready_timeout_s = ready_timeout_s
        self.version = 0
        self._http = httpx.Client(base_url=self.url, timeout=request_timeout_s,
                                  limits=http_limits(256))
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._groups: dict[int, tuple[GenerationRequest, list[_Slot]]] = {}  # wire id -> caller's request
        self._continuations: dict[int, tuple[int, int]] = {}  # wire id -> (group wire id, slot)
        self._out: queue.Queue[Group] = queue.Queue()
        self._error: BaseException | None = None
        self._max_new_tokens = 0
        self._stats: dict[str, float] = {}
        self._paused = False
        self._held: list[dict] = []  # continuations of aborted requests, sent at resume
        self._weight_dtypes: WeightDtypes | None = None  # from /health

    # -- lifecycle -----------------------------------------------------------------------------------------
    def start(self) -> None:
        info = wait_ready([self.url], self.ready_timeout_s)[0]
        self._max_new_tokens = int(info["max_new_tokens"])
        self._stats = info["stats"]
        self._weight_dtypes = self._dtypes_from(info)

    def _dtypes_from(self, info: Mapping[str, Any]) -> WeightDtypes:
        try:
            return WeightDtypes.from_info(info, self.url)
        except ValueError as exc:
            raise EngineError(str(exc)) from None

    @property
    def weight_dtypes(self) -> WeightDtypes:
        """The dtypes the engine holds its weights in (asked once; a sync before start asks /health)."""
        if self._weight_dtypes is None:
            self._weight_dtypes = self._dtypes_from(self.health())
        return self._weight_dtypes

    def stop(self) -> None:
        self._http.close()

    def health(self) -> dict[str, Any]:
        r = self._http.get("/health")
        body = r.json()
        if r.status_code != 200:
            raise EngineError(f"engine {self.url} unhealthy: {body.get('error')}")
        return body

    def _check(self) -> None:
        if self._error is not None:
            raise EngineError(f"engine {self.url} failed: {self._error}") from self._error

    # -- generation -------------------------------------------------------------------------------------------
    def submit(self, requests: list[GenerationRequest]) -> None:
        self._check()
        wire = []
        with self._lock:
            for req in requests:
                wid = next(self._ids)
                self._groups[wid] = (req, [_Slot([]) for _ in range(req.n)])
                wire.append({"request_id": wid, "prompt_ids": list(req.prompt_ids), "n": req.n,
                             "max_new_tokens": req.max_new_tokens, "ignore_eos": req.ignore_eos,
                             "stop": [list(seq) for seq in req.stop], "cache_key": req.cache_key})
        self._stream(wire)

    def _stream(self, wire: list[dict]) -> None:
        threading.Thread(target=self._read_stream, args=(wire,), daemon=True, name="olmorl-engine-stream").start()

    def _read_stream(self, wire: list[dict]) -> None:
        try:
            # no read timeout: a long generation is not a failure; a dead server closes the connection
            with self._http.stream("POST", "/v1/generate", json={"requests": wire},
                                   timeout=httpx.Timeout(self.request_timeout_s, read=None)) as r:
                if r.status_code != 200:
                    raise EngineError(f"generate refused ({r.status_code}): {r.read().decode()[:500]}")
                for line in r.iter_lines():
                    if line:
                        self._on_group(_parse_group(line))
        except BaseException as exc:  # surfaced on the caller's next call
            self._error = exc

    def _on_group(self, payload: dict) -> None:
        wid = payload["request_id"]
        completions = payload["completions"]
        with self._lock:
            if wid in self._continuations:
                gid, slot_index = self._continuations.pop(wid)
                targets = [(gid, slot_index, completions[0])]
            else:
                gid = wid
                targets = [(wid, i, c) for i, c in enumerate(completions)]
            resubmit = []
            for gid, i, c in targets:
                req, slots = self._groups[gid]
                slot = slots[i]
                slot.parts.append(c)
                used = sum(len(p.token_ids) for p in slot.parts)
                budget = (req.max_new_tokens or self._max_new_tokens) - used
                if c.finish_reason == "abort" and budget > 0:
                    cid = next(self._ids)
                    self._continuations[cid] = (gid, i)
                    prefix = [t for p in slot.parts for t in p.token_ids]
                    resubmit.append({"request_id": cid, "prompt_ids": list(req.prompt_ids) + prefix, "n": 1,
                                     "max_new_tokens": budget, "ignore_eos": req.ignore_eos,
                                     "stop": [list(seq) for seq in req.stop], "cache_key": req.cache_key})
                else:
                    slot.done = True
                if all(s.done for s in slots):
                    del self._groups[gid]
                    self._out.put(Group(req.request_id, list(req.prompt_ids), [_join(s.parts) for s in slots],
                                        req.meta, payload["submitted_version"]))
            if resubmit and self._paused:
                self._held.extend(resubmit)
                resubmit = []
        if resubmit:
            self._stream(resubmit)

    def get_groups(self, timeout: float | None = None) -> list[Group]:
        self._check()
        groups = take_groups(self._out, timeout)
        if not groups:
            self._check()  # a stream that failed while we waited
        return groups

    @property
    def in_flight_groups(self) -> int:
        with self._lock:
            return len(self._groups)

    # -- control ----------------------------------------------------------------------------------------------
    def _post(self, path: str, *, error: type[EngineError] = EngineError, timeout: float | None = None,
              what: str = "", **kwargs: Any) -> dict:
        try:
            r = self._http.post(path, timeout=timeout or self.request_timeout_s, **kwargs)
        except httpx.TimeoutException as exc:
            raise error(f"engine {self.url}: {what or path} not acknowledged within "
                        f"{timeout or self.request_timeout_s:g} s ({type(exc).__name__})") from exc
        except httpx.HTTPError as exc:
            raise error(f"engine {self.url}: {what or path} failed: {type(exc).__name__}: {exc}") from exc
        if r.status_code != 200:
            detail = r.json().get("detail") if r.headers.get("content-type", "").startswith("application/json") else r.text
            raise error(f"engine {self.url}: {what or path} refused ({r.status_code}): {detail}")
        return r.json()

    def pause(self, mode: str = "keep") -> dict:
        with self._lock:
            self._paused = True
        return self._post("/pause", params={"mode": mode, "timeout_s": self.sync_timeout_s},
                          timeout=self.sync_timeout_s + 2, what=f"pause({mode})")

    def resume(self) -> dict:
        # the server waits for staged weights; the client deadline is a little longer so the server's 504 wins
        body = self._post("/resume", params={"timeout_s": self.sync_timeout_s}, error=WeightSyncError,
                          timeout=self.sync_timeout_s + 2, what="resume")
        with self._lock:
            self._paused = False
            held, self._held = self._held, []
        if held:
            self._stream(held)
        return body

    def load_weights_file(self, path: str, version: int) -> dict:
        """Have the engine load `path` as policy `version`, within the sync deadline."""
        self._check()
        body = self._post("/update_weights", json={"path": path, "version": version, "timeout_s": self.sync_timeout_s},
                          error=WeightSyncError, timeout=self.sync_timeout_s + 2, what=f"weight sync to version {version}")
        self.version = version
        return body

    def update_weights(self, weights: Mapping[str, torch.Tensor], version: int, wait: bool = True) -> None:
        path = write_weights_file(self.weight_dtypes.cast(weights), version)
        try:
            self.load_weights_file(path, version)
        finally:
            os.unlink(path)

    def stats(self) -> dict[str, float]:
        try:
            self._stats = self.health()["stats"]
        except (httpx.HTTPError, EngineError):
            pass  # the last known counters; failures surface through the calls that need the engine
        return dict(self._stats)

    def get_rng_state(self) -> torch.Tensor:
        r = self._http.get("/rng_state")
        r.raise_for_status()
        return torch.load(io.BytesIO(r.content))

    def set_rng_state(self, state: torch.Tensor) -> None:
        buf = io.BytesIO()
        torch.save(state, buf)
        self._http.put("/rng_state", content=buf.getvalue()).raise_for_status()


def _parse_group(line: str) -> dict:
    import json

    payload = json.loads(line)
    if "error" in payload:
        raise EngineError(payload["error"])
    payload["completions"] = [Completion(**c) for c in payload["completions"]]
    return payload


def _join(parts: list[Completion]) -> Completion:
    if len(parts) == 1:
        return parts[0]
    return Completion([t for p in parts for t in p.token_ids], [x for p in parts for x in p.logprobs],
                      [v for p in parts for v in p.versions], parts[-1].finish_reason)


def wait_ready(urls: list[str], timeout_s: float) -> list[dict]:
    """Block until every engine answers /health, or raise naming the ones that did not."""
    deadline = time.monotonic() + timeout_s
    infos: dict[str, dict] = {}
    last: dict[str, str] = {}
    while len(infos) < len(urls):
        for url in urls:
            if url in infos:
                continue
            try:
                r = httpx.get(url.rstrip("/") + "/health", timeout=2.0)
                if r.status_code == 200:
                    infos[url] = r.json()
                else:
                    last[url] = f"HTTP {r.status_code}: {r.text[:200]}"
            except httpx.HTTPError as exc:
                last[url] = f"{type(exc).__name__}"
        if len(infos) < len(urls):
            if time.monotonic() > deadline:
                missing = [f"{u} ({last.get(u, 'no answer')})" for u in urls if u not in infos]
                raise EngineError(f"engines not ready within {timeout_s:g} s: " + ", ".join(missing))
            time.sleep(0.2)
    return [infos[u] for u in urls]
