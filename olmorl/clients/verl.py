"""verl reward functions, scored by an olmorl reward server.

    custom_reward_function.path=pkg://olmorl.clients.verl
    custom_reward_function.name=compute_score          # verl's naive/dapo/prime managers, one sample a call
    # or, with reward_model.reward_manager=batch:
    custom_reward_function.name=compute_score_batch    # one HTTP batch per verl batch

The server URL and token come from `OLMORL_URL` / `OLMORL_API_KEY`, or from
`custom_reward_function.reward_kwargs` (`base_url`, `api_key`, `timeout`, `on_error`, `tokenizer`).

Which verifier scores a sample, first match wins:
1. `extra_info["verifier"]` when the row names one (with optional `extra_info["verifier_options"]`);
2. `data_source` looked up in `DATA_SOURCES` below (case-insensitive);
3. the first `DATA_SOURCE_PREFIXES` entry that `data_source` starts with;
4. `data_source` itself, as a verifier name or alias (open-instruct's `dataset` values such as `gsm8k`,
   `ifeval`, `general-quality` work as they are). A name the server does not know scores 0 with
   `invalid=1`, never an exception in the training loop.

The result is a dict with `score` (the reward) and, with the same keys for every sample as verl
requires: `acc` (score >= 0.5), and `invalid`, `timeout`, `error` (1.0 when the item had that status).
A `composite` sample's `score` is the aggregate, and each component's reward is its extra info
`component/<name>` (NaN when that component was not scored, or, in a batch, for a sample without it): verl
averages these keys into its metrics. `compute_score` sees one sample at a time, so its keys are that
sample's components: give every row of a dataset the same component names.

Token counts (for the `overlong` and `length` verifiers): verl's reward function receives text, not token ids
nor their count. With the `tokenizer` reward kwarg (the policy's tokenizer.json or its directory; default
`OLMORL_TOKENIZER`), each sample's `completion_tokens` is its text's token count (olmorl.rewards._token_count):
verl decodes the response with special tokens skipped, so the end-of-sequence token is not counted (one less
than verl's `valid_response_length` for a completion that ended with it). `extra_info["completion_tokens"]`,
where a row carries it, wins. Without either, such a sample is `invalid`.

Errors. A reward server no replica reaches after all retries raises `RewardServerUnavailable`: the
step fails instead of training on made-up zeros. verl's reward managers need a number for every
sample (no per-sample skip like TRL's None), so an item scored `invalid`, `timeout` or `error` gets
`score` 0.0 with its status flag at 1.0 (verl averages these keys into its metrics), and a warning
with the counts by status is logged (logger `olmorl.clients`, at most every 30 s).
`on_error="raise"` raises `ItemFailed` instead.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from typing import Any, Literal

from olmorl.clients._client import RewardClient
from olmorl.clients._policy import resolve_urls
from olmorl.rewards._not_ok import NotOkLog
from olmorl.rewards._token_count import token_counter
from olmorl.rewards._models import VerifyResult
from olmorl.rewards.engine._composite import component_rewards

__all__ = ["DATA_SOURCES", "DATA_SOURCE_PREFIXES", "compute_score", "compute_score_batch", "verifier_for"]

# verl's bundled `data_source` values (verl.utils.reward_score.default_compute_score) -> olmorl verifier.
DATA_SOURCES: dict[str, str] = {
    "openai/gsm8k": "math",
    "lighteval/math": "math",
    "digitallearninggmbh/math-lighteval": "math",
    "homebrewltd/agentgym-math": "math",
    "math_dapo": "math",
    "math": "math",
    "aime2024": "math",
    "aime2025": "math",
    "numina_aops_forum": "math",
    "numina_synthetic_math": "math",
    "numina_amc_aime": "math",
    "numina_synthetic_amc": "math",
    "numina_cn_k12": "math",
    "numina_olympiads": "math",
    "codecontests": "code",
    "apps": "code",
    "codeforces": "code",
    "taco": "code",
    "google/ifeval": "ifeval",
    "allenai/ifbench": "ifeval",
}
DATA_SOURCE_PREFIXES: tuple[tuple[str, str], ...] = (
    ("numina_", "math"),
    ("deepscaler", "math"),
    ("likaixin/taco", "code"),
    ("primeintellect", "code"),
    ("livecodebench", "code"),
)

VerlOnError = Literal["zero", "raise"]  # verl needs a number per sample: there is no "none"
_clients: dict[tuple[int, tuple[str, ...], str | None, float, str], RewardClient] = {}
_clients_lock = threading.Lock()
_NOT_OK = NotOkLog(logging.getLogger("olmorl.clients"), "olmorl.clients.verl", every_s=30.0)


def verifier_for(data_source: str, extra_info: dict[str, Any] | None = None) -> str:
    """The verifier name for a sample, by the rules in this module's docstring."""
    if extra_info and isinstance(extra_info.get("verifier"), str):
        return extra_info["verifier"]
    key = str(data_source).strip().lower()
    if key in DATA_SOURCES:
        return DATA_SOURCES[key]
    for prefix, verifier in DATA_SOURCE_PREFIXES:
        if key.startswith(prefix):
            return verifier
    return str(data_source)


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None,
                  *, base_url: str | list[str] | None = None, api_key: str | None = None, timeout: float = 600.0,
                  on_error: VerlOnError = "zero", tokenizer: str | None = None, **kwargs: Any) -> dict[str, float]:
    """verl's per-sample reward function: `{"score": reward, "acc", "invalid", "timeout", "error"}`."""
    client = _client(base_url, api_key, timeout, on_error)
    return _as_verl(client.verify([_item(data_source, solution_str, ground_truth, extra_info, tokenizer)]))[0]


def compute_score_batch(data_sources: list[str], solution_strs: list[str], ground_truths: list[Any],
                        extra_infos: list[dict[str, Any] | None] | None = None, *,
                        base_url: str | list[str] | None = None, api_key: str | None = None,
                        timeout: float = 600.0, on_error: VerlOnError = "zero", tokenizer: str | None = None,
                        **kwargs: Any) -> list[dict[str, float]]:
    """verl's `batch` reward manager: the whole batch in one call, one dict per sample, in order."""
    extra_infos = extra_infos if extra_infos is not None else [None] * len(solution_strs)
    items = [_item(*sample, tokenizer)
             for sample in zip(data_sources, solution_strs, ground_truths, extra_infos, strict=True)]
    return _as_verl(_client(base_url, api_key, timeout, on_error).verify(items))


def _item(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None,
          tokenizer: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {"verifier": verifier_for(data_source, extra_info), "response": solution_str,
                            "ground_truth": _plain(ground_truth)}
    if extra_info and isinstance(extra_info.get("verifier_options"), dict):
        item["options"] = extra_info["verifier_options"]
    tokenizer = tokenizer or os.environ.get("OLMORL_TOKENIZER")
    if extra_info and extra_info.get("completion_tokens") is not None:
        item["completion_tokens"] = int(extra_info["completion_tokens"])
    elif tokenizer:  # loaded once per process
        item["completion_tokens"] = token_counter(tokenizer).counts([solution_str])[0]
    return item


def _plain(value: Any) -> Any:
    """Parquet-loaded ground truths arrive as numpy arrays / scalars; JSON wants lists and numbers."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _as_verl(results: list[VerifyResult]) -> list[dict[str, float]]:
    with _clients_lock:
        _NOT_OK.record(results, "0.0 with its status flag")
    scores = [{"score": float(r.reward or 0.0), "acc": float((r.reward or 0.0) >= 0.5),
               "invalid": float(r.status == "invalid"), "timeout": float(r.status == "timeout"),
               "error": float(r.status == "error")} for r in results]
    parts = [component_rewards(r) for r in results]
    names = list(dict.fromkeys(name for found in parts for name in found))  # every sample gets every key
    for score, found in zip(scores, parts):
        score.update({f"component/{name}": found.get(name, math.nan) for name in names})
    return scores


def _client(base_url: str | list[str] | None, api_key: str | None, timeout: float, on_error: VerlOnError) -> RewardClient:
    """One client per process and configuration: verl's naive manager calls once per sample."""
    if on_error not in ("zero", "raise"):
        raise ValueError(f"verl's on_error is 'zero' (with status flags) or 'raise', not {on_error!r}: "
                         "verl needs a number for every sample")
    urls = tuple(resolve_urls(base_url))
    key = (os.getpid(), urls, api_key if api_key is not None else os.environ.get("OLMORL_API_KEY"), timeout, on_error)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = RewardClient(list(urls), api_key=key[2], timeout=timeout, on_error=on_error)
        return client
