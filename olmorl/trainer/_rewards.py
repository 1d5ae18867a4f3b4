"""Scoring groups over HTTP: batch them through `AsyncRewardClient`, survive a reward server that goes away.

`score_completions` is the one place that turns a prompt's (verifier, ground truth) checks into
/v1/verify items and sums their rewards back per completion (open-instruct's multi-verifier rows).
`score_groups` scores finished engine groups, keeping the Result a multi-turn session already gave.
A row whose verifier is comparative (`group_judge`, `pairwise_judge`) sends each completion with its whole
group, so the judge ranks the group in one call per order (olmorl.rewards.judge._comparative).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from olmorl.clients import AsyncRewardClient, OlmorlError, RewardServerError, VerifyResult

if TYPE_CHECKING:
    from olmorl.trainer._data import Prompt
    from olmorl.trainer.engines._types import Group

log = logging.getLogger("olmorl.trainer")
# verifiers (and aliases) that judge a prompt's completions together: their items carry the whole group
COMPARATIVE = frozenset({"group_judge", "group_rank", "pairwise_judge", "pairwise"})


class RewardServerGone(RuntimeError):
    pass


class GroupScorer:
    """Scores completions through the reward servers, retrying the same batch until it is scored."""

    def __init__(self, urls: list[str], *, api_key: str | None, timeout_s: float, batch_size: int,
                 max_wait_s: float) -> None:
        self.client = AsyncRewardClient(urls, api_key=api_key, timeout=timeout_s, max_batch_size=batch_size,
                                        max_concurrency=4, max_retries=2, on_error="zero")
        self.max_wait_s = max_wait_s
        self.latencies: list[float] = []
        self.retries = 0

    async def close(self) -> None:
        await self.client.aclose()

    async def score(self, items: list[dict[str, Any]]) -> list[VerifyResult]:
        """One result per item, in order. Waits (with backoff) while the servers are unreachable."""
        if not items:
            return []
        first_failure: float | None = None
        delay = 0.5
        while True:
            start = time.perf_counter()
            try:
                results = await self.client.verify(items)
                self.latencies.append(time.perf_counter() - start)
                return results
            except RewardServerError:
                raise  # the server refused the request itself: retrying cannot help
            except (OlmorlError, OSError) as exc:  # RewardServerUnavailable: no replica answered; retry the batch
                reason = f"{type(exc).__name__}: {exc}"
            now = time.monotonic()
            first_failure = first_failure or now
            if now - first_failure > self.max_wait_s:
                raise RewardServerGone(f"reward servers unreachable for {now - first_failure:.0f} s: {reason}")
            self.retries += 1
            log.warning("reward server unreachable (%s); retrying the same %d items in %.1f s", reason, len(items), delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)


async def score_completions(scorer: GroupScorer, prompts: list[Prompt], texts: list[str],
                            token_counts: list[int] | None = None) -> list[VerifyResult]:
    """One result per completion (`texts[i]` answers `prompts[i]`, `token_counts[i]` tokens long: the items'
    `completion_tokens`, for `overlong` and `length`), all checks of all completions in one call.

    The reward is the sum over the prompt's checks. Any check `invalid` or `error` makes the completion so
    (reward 0; not a wrong answer: callers drop it); a `timeout` check adds 0 and the completion stays scored.
    """
    items, owners = [], []
    counts = token_counts if token_counts is not None else [None] * len(texts)
    groups: dict[int, list[int]] = {}  # the completions of each prompt (one Prompt object per group)
    for k, prompt in enumerate(prompts):
        groups.setdefault(id(prompt), []).append(k)
    for k, (prompt, text, count) in enumerate(zip(prompts, texts, counts, strict=True)):
        if prompt.env:
            raise ValueError(f"{prompt.source} row {prompt.index}: a multi-turn row (env={prompt.env!r}) is scored by "
                             "its session's /verify, not /v1/verify")
        for check in prompt.checks:
            truth, options = check.ground_truth, check.options
            if check.verifier in COMPARATIVE:
                truth, options = _group_check(check, groups[id(prompt)], k, texts)
            item = {"verifier": check.verifier, "response": text, "ground_truth": truth,
                    "prompt": list(prompt.messages)}
            if options:
                item["options"] = options
            if count is not None:
                item["completion_tokens"] = count
            items.append(item)
            owners.append(k)
    per_completion: list[list[VerifyResult]] = [[] for _ in texts]
    for k, result in zip(owners, await scorer.score(items), strict=True):
        per_completion[k].append(result)
    return [results[0] if len(results) == 1 else _summed(prompt.verifier_label, results)
            for prompt, results in zip(prompts, per_completion)]


async def score_groups(scorer: GroupScorer, tokenizer, prompts: list[Prompt],
                       groups: list[Group]) -> list[list[VerifyResult]]:
    """Results per group, per completion. Completions that arrive with a Result (multi-turn) keep it; the
    others are decoded and scored in one `score_completions` call."""
    todo = [(p, c) for p, g in zip(prompts, groups, strict=True) for c in g.completions if c.result is None]
    texts = [tokenizer.decode(c.token_ids, skip_special_tokens=True) for _, c in todo]
    scored = iter(await score_completions(scorer, [p for p, _ in todo], texts, [len(c.token_ids) for _, c in todo]))
    return [[c.result if c.result is not None else next(scored) for c in g.completions] for g in groups]


def _group_check(check: Any, members: list[int], k: int, texts: list[str]) -> tuple[dict, dict]:
    """A comparative check's item fields: the whole group as ground truth (the row's ground_truth, a string, is the
    reference shown to the judge) and this completion's index in it."""
    truth: dict[str, Any] = {"completions": [texts[j] for j in members]}
    if isinstance(check.ground_truth, str) and check.ground_truth.strip():
        truth["reference"] = check.ground_truth
    return truth, {**(check.options or {}), "index": members.index(k)}


def judge_agreement(results: list[VerifyResult]) -> float | None:
    """A comparative group's agreement between the judge's orders (`details.agreement`, the same on every item of
    the group; a row's several checks each carry theirs, averaged), or None when no check judged it comparatively."""
    first = results[0] if results else None
    if first is None or first.status != "ok":
        return None
    checks = first.details.get("checks") or [{"verifier": first.verifier, "details": first.details}]
    found = [float(check["details"]["agreement"]) for check in checks
             if check.get("verifier") in COMPARATIVE and "agreement" in (check.get("details") or {})]
    return sum(found) / len(found) if found else None


def component_rewards(results: list[VerifyResult]) -> dict[str, tuple[float, list[float]]] | None:
    """A group's per-component rewards, name -> (weight, one reward per completion), when every completion is an
    ok `composite` result of the same weighted-sum components; else None (there is nothing to decompose)."""
    found: dict[str, tuple[float, list[float]]] = {}
    for k, result in enumerate(results):
        parts = result.details.get("components") if result.verifier == "composite" else None
        if result.status != "ok" or result.details.get("aggregate") != "weighted_sum" or not parts:
            return None
        names = [part["name"] for part in parts]
        if (k and names != list(found)) or any(part["reward"] is None for part in parts):
            return None
        for part in parts:
            found.setdefault(part["name"], (float(part["weight"]), []))[1].append(float(part["reward"]))
    return found or None


def _summed(label: str, results: list[VerifyResult]) -> VerifyResult:
    failed = [r for r in results if r.status in ("invalid", "error")]
    worst = failed[0] if failed else next((r for r in results if r.status == "timeout"), results[0])
    reward = 0.0 if failed else sum(r.reward or 0.0 for r in results)  # a failed completion scores as one item would
    return VerifyResult(verifier=label, reward=reward, status=worst.status,
                        error=None if worst.status == "ok" else f"{worst.verifier}: {worst.error}",
                        details={"checks": [r.model_dump(include={"verifier", "reward", "status", "details"})
                                            for r in results]},
                        elapsed_ms=sum(r.elapsed_ms for r in results))


def embedded_reward_server(cfg, multiturn: bool):
    """The reward server olmorl-train starts when no `reward_urls` are given (not started yet). With multi-turn
    rows its python pool holds one interpreter per rollout open at once (`_multiturn.warm_interpreters`), unless
    OLMORL_SESSIONS_WARM_INTERPRETERS is set in the environment."""
    import os

    from olmorl.rewards._settings import SessionSettings
    from olmorl.rewards.service._local import LocalRewardServer
    from olmorl.trainer._multiturn import warm_interpreters

    settings: dict[str, Any] = {}
    if multiturn and "OLMORL_SESSIONS_WARM_INTERPRETERS" not in os.environ:
        settings["sessions"] = SessionSettings(warm_interpreters=warm_interpreters(cfg))
    return LocalRewardServer(workers=cfg.local_reward_workers, log_path=f"{cfg.output_dir}/reward-server.log",
                             **settings)
