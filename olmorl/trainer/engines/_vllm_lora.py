"""Adapter-only weight sync for the vLLM engines through vLLM's LoRA request path (a LoRA policy, `lora_rank > 0`).

UNVERIFIED like the rest of `_vllm.py`: written against vLLM's documented LoRA API and never run here (no GPU).

Each adapter version is written as a PEFT adapter directory (`save_peft_adapter`); only the adapter travels:
* `VLLMEngine` (AsyncLLM built with `enable_lora=True, max_lora_rank >= lora_rank`): version v is
  `LoRARequest("olmorl-v<v>", v + 1, <dir>)`, added with `AsyncLLM.add_lora`; requests submitted after it
  generate with it (`generate(..., lora_request=...)`), so each request's tokens are all of the version it was
  submitted under. A version no request uses any more is removed (`remove_lora`) and its directory deleted.
* `VLLMServerEngine` (`vllm serve --enable-lora --max-lora-rank R` with `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`):
  `POST /v1/load_lora_adapter {"lora_name", "lora_path", "load_inplace": true}` reloads one adapter name in place,
  and completions name it as their `model`. The directory must be readable by the server (same machine, or
  `adapter_dir` on a shared filesystem).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from olmorl.trainer._lora import AdapterWeights, save_peft_adapter

SERVER_ADAPTER_NAME = "olmorl-policy"  # the one adapter name a `vllm serve` reloads in place


class AdapterVersions:
    """Adapter directories by policy version, and how many running requests use each (deleted at zero)."""

    def __init__(self, directory: str | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="olmorl-lora-", dir=directory))
        self.current: int | None = None
        self.users: dict[int, int] = {}

    def write(self, weights: AdapterWeights, version: int) -> Path:
        """Save `version` as a PEFT adapter directory and make it the current one."""
        path = save_peft_adapter(weights, self.root / f"v{version}")
        self.current = version
        self.users.setdefault(version, 0)
        return path

    def acquire(self) -> int | None:
        """The current version, counted as used by one more request (None before the first adapter)."""
        if self.current is not None:
            self.users[self.current] += 1
        return self.current

    def release(self, version: int | None) -> None:
        if version is not None:
            self.users[version] -= 1

    def retired(self) -> list[int]:
        """Versions that are neither current nor in use: forgotten here and their directories deleted."""
        done = [v for v, n in self.users.items() if n <= 0 and v != self.current]
        for v in done:
            del self.users[v]
            shutil.rmtree(self.root / f"v{v}", ignore_errors=True)
        return done

    def lora_request(self, version: int) -> Any:
        from vllm.lora.request import LoRARequest

        # the integer id names the adapter's weights inside vLLM: a new one per version (0 is not allowed)
        return LoRARequest(f"olmorl-v{version}", version + 1, str(self.root / f"v{version}"))

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
