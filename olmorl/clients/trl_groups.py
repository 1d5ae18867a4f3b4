"""Comparative judging for TRL's `GRPOTrainer`: the G completions of each prompt judged together.

    from olmorl.clients.trl_groups import group_judge_reward
    trainer = GRPOTrainer(..., reward_funcs=[group_judge_reward])  # OLMORL_URL names the reward server

TRL calls a reward function once per batch with every completion of it: each prompt appears
`num_generations` times in `prompts`, one row per completion. Rows with the same prompt (and the same
`ground_truth` column value, when there is one: a reference answer shown to the judge) form a group;
each group is sent as `group_judge` items (olmorl.rewards.judge._comparative), or `pairwise_judge`
with `verifier="pairwise_judge"` (G = 2), all in one request, so the judge makes one call per order
per group. Rewards are normalized ranks within the group (1 for the best, 0 for the worst). The mean agreement
between the two orders over the batch's groups goes to TRL's metrics as `olmorl/group_judge_reward/agreement`.
`functools.partial(group_judge_reward, base_url=..., seed=..., on_error=...)` configures it; errors
follow olmorl.clients.trl (a failed group gives its rows None, or as `on_error` says).
"""

from __future__ import annotations

import json
from typing import Any

from olmorl.clients._policy import OnError
from olmorl.clients._trl_rows import completion_text, row_rewards
from olmorl.clients._trl_scorer import scorer
from olmorl.clients.trl import _reward_function

__all__ = ["group_judge_reward"]


def _group_key(prompt: Any, reference: Any) -> str:
    return json.dumps([prompt, reference], sort_keys=True, ensure_ascii=False, default=str)


@_reward_function
async def group_judge_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                             api_key: str | None = None, on_error: OnError = "none", timeout: float = 600.0,
                             verifier: str = "group_judge", seed: int = 0, **columns: Any) -> list[float | None]:
    """Normalized rank of each completion among the completions of its prompt, by one LM-judge call per order."""
    references = columns.get("ground_truth") or columns.get("solution")
    texts = [completion_text(c) for c in completions]
    groups: dict[str, list[int]] = {}
    for row in range(len(completions)):
        groups.setdefault(_group_key(prompts[row], references[row] if references else None), []).append(row)
    items: list[dict[str, Any]] = []
    owner: list[int] = []
    starts: list[int] = []  # each group's first item
    for rows in groups.values():
        starts.append(len(items))
        truth: dict[str, Any] = {"completions": [texts[r] for r in rows]}
        reference = references[rows[0]] if references else None
        if isinstance(reference, str) and reference.strip():
            truth["reference"] = reference
        for index, row in enumerate(rows):
            items.append({"verifier": verifier, "response": texts[row], "prompt": prompts[row],
                          "ground_truth": truth, "options": {"index": index, "seed": seed}})
            owner.append(row)
    client, _ = await scorer(base_url, api_key, timeout, on_error, False)
    async with client:
        results = await client.verify(items) if items else []
    log_metric = columns.get("log_metric")
    agreements = [results[at].details["agreement"] for at in starts if results[at].status == "ok"]
    if callable(log_metric) and agreements:  # a low agreement between the orders: the judge follows positions
        log_metric("olmorl/group_judge_reward/agreement", sum(agreements) / len(agreements))
    return row_rewards("group_judge_reward", len(completions), owner, results, on_error, log_metric)


group_judge_reward.__module__ = __name__  # pickled by reference to this module (TRL's async trainer pickles it)
