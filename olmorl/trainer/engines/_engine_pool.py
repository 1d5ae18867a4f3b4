"""Several engine servers behind one `Engine`: prompts go to the least loaded, each weight version to all.

A weight version is written once, as one safetensors file in shared memory (`_http.write_weights_file`,
already cast to the engines' one set of dtypes), that every engine loads; the file is removed once all of
them acknowledged it; an engine that does not acknowledge it in time fails the sync (`WeightSyncError`).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Mapping

import torch

from olmorl.trainer.engines._http import EngineError, RemoteEngine, WeightSyncError, wait_ready, write_weights_file
from olmorl.trainer.engines._types import GenerationRequest, Group
from olmorl.trainer.engines._weight_dtypes import WeightDtypes, common_dtypes, payload_bytes

if TYPE_CHECKING:
    from olmorl.trainer.engines._server import EngineServerProcess


class EnginePool:
    """Several engines behind one `Engine`: prompts go to the least loaded, each weight version to all.

    With `wait=False` the sync runs in the background and the next call waits for it (and raises its
    error): generation never stops, and two versions are never in flight at once.
    """

    def __init__(self, engines: list[RemoteEngine], owned: list[EngineServerProcess] | None = None) -> None:
        if not engines:
            raise ValueError("an engine pool needs at least one engine")
        self.engines = engines
        self.owned = owned or []
        self.version = 0
        self._sync: Future | None = None
        self._executor = ThreadPoolExecutor(max_workers=len(engines) + 1, thread_name_prefix="olmorl-weight-sync")
        self.last_sync_s = 0.0
        self.last_sync_bytes = 0  # the payload of the last sync (tensor bytes, in the engines' dtypes)
        self._weight_dtypes: WeightDtypes | None = None

    def start(self) -> None:
        wait_ready([e.url for e in self.engines], max(e.ready_timeout_s for e in self.engines))
        for e in self.engines:
            e.start()

    @property
    def weight_dtypes(self) -> WeightDtypes:
        """The engines' one set of weight dtypes (a sync is one payload for all; engines that differ: an error)."""
        if self._weight_dtypes is None:
            try:
                self._weight_dtypes = common_dtypes({e.url: e.weight_dtypes for e in self.engines})
            except ValueError as exc:
                raise EngineError(str(exc)) from None
        return self._weight_dtypes

    def stop(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        for e in self.engines:
            e.stop()
        for p in self.owned:
            p.stop()

    def _wait_sync(self) -> None:
        if self._sync is not None:
            sync, self._sync = self._sync, None
            sync.result()

    def submit(self, requests: list[GenerationRequest]) -> None:
        for req in requests:
            min(self.engines, key=lambda e: e.in_flight_groups).submit([req])

    def get_groups(self, timeout: float | None = None) -> list[Group]:
        if self._sync is not None and self._sync.done():
            self._wait_sync()
        deadline = time.monotonic() + (timeout or 0.0)
        while True:
            out = [g for e in self.engines for g in e.get_groups(0)]
            if out or time.monotonic() >= deadline:
                return out
            time.sleep(0.005)

    @property
    def in_flight_groups(self) -> int:
        return sum(e.in_flight_groups for e in self.engines)

    def _broadcast(self, weights: dict[str, torch.Tensor], version: int) -> None:
        start = time.perf_counter()
        path = write_weights_file(weights, version)
        try:
            futures = [self._executor.submit(e.load_weights_file, path, version) for e in self.engines]
            errors = []
            for f in futures:
                try:
                    f.result()
                except EngineError as exc:
                    errors.append(str(exc))
            if errors:
                raise WeightSyncError("; ".join(errors))
        finally:
            os.unlink(path)
        self.last_sync_s = time.perf_counter() - start
        self.last_sync_bytes = payload_bytes(weights)

    def update_weights(self, weights: Mapping[str, torch.Tensor], version: int, wait: bool = False) -> None:
        self._wait_sync()
        snapshot = self.weight_dtypes.cast(weights)  # a copy (the learner moves on) in the engines' dtypes
        self.version = version
        if wait:
            self._broadcast(snapshot, version)
        else:
            self._sync = self._executor.submit(self._broadcast, snapshot, version)

    def pause(self, mode: str = "keep") -> None:
        self._wait_sync()
        for e in self.engines:
            e.pause(mode)

    def resume(self) -> None:
        for e in self.engines:
            e.resume()

    def stats(self) -> dict[str, float]:
        total: dict[str, float] = {}
        for e in self.engines:
            for k, v in e.stats().items():
                total[k] = total.get(k, 0.0) + float(v)
        total["weight_sync_s"] = self.last_sync_s
        total["weight_sync_bytes"] = float(self.last_sync_bytes)
        return total

    def get_rng_state(self) -> list[torch.Tensor]:
        return [e.get_rng_state() for e in self.engines]

    def set_rng_state(self, states: list[torch.Tensor]) -> None:
        for e, s in zip(self.engines, states):
            e.set_rng_state(s)
