"""From TRL's dataset columns to reward items and back to one reward per row (see `olmorl.clients.trl`): a family's
or any verifier's rows (`score_rows`), or one component of composite rows (`score_component`)."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Callable

from olmorl.clients._client import AsyncRewardClient
from olmorl.clients._policy import OnError
from olmorl.clients._trl_scorer import alias_table, scorer
from olmorl.rewards._not_ok import NotOkLog
from olmorl.rewards._models import VerifyResult
from olmorl.rewards.engine._composite import COMPOSITE, Component

if TYPE_CHECKING:
    from olmorl.rewards.service._inprocess import InProcessVerifier

# family -> (verifier sent for rows without a verifier column, test of a server-side canonical name)
FAMILIES: dict[str, tuple[str, Callable[[str], bool]]] = {
    "math": ("math", lambda name: name in {"math", "gsm8k", "strict_math", "math_verify"}),
    "code": ("code", lambda name: name == "code" or name.startswith("code_")),
    "ifeval": ("ifeval", lambda name: name == "ifeval"),
    "judge": ("judge", lambda name: name == "judge" or name.startswith("general-")),
}

log = logging.getLogger("olmorl.clients")
_NOT_OK: dict[str, NotOkLog] = {}  # function name -> its warning log


async def score_component(prompts: list[Any], completions: list[Any], *, component: str,
                          base_url: str | list[str] | None = None, api_key: str | None = None,
                          on_error: OnError = "none", timeout: float = 600.0, **columns: Any) -> list[float | None]:
    names = _column(columns, "verifier", "dataset")
    truths = _column(columns, "ground_truth", "solution")
    if names is None or truths is None:
        raise ValueError(f"component_reward({component!r}) needs `verifier` (else `dataset`) and `ground_truth` (else "
                         f"`solution`) columns; the dataset's columns are: {', '.join(sorted(columns)) or 'none'}")
    options, token_ids = columns.get("options"), columns.get("completion_ids")
    items, owner = [], []
    for row, completion in enumerate(completions):
        if not isinstance(names[row], str) or names[row].strip().lower() != COMPOSITE:
            continue
        parts = _components_of(truths[row], component)
        if not parts:
            continue
        threshold = (options[row] or {}).get("pass_threshold", 1.0) if options is not None else 1.0
        item = {"verifier": COMPOSITE, "response": completion_text(completion), "ground_truth": parts,
                "options": {"pass_threshold": threshold}, "prompt": prompts[row] if prompts is not None else None}
        if token_ids is not None:
            item["completion_tokens"] = len(token_ids[row])
        items.append(item)
        owner.append(row)
    async with AsyncRewardClient(base_url, api_key=api_key, timeout=timeout, on_error=on_error) as client:
        results = await client.verify(items) if items else []
    own = [result if result.status != "ok" else
           result.model_copy(update={"reward": next(part["reward"] for part in result.details["components"]
                                                    if part["name"] == component)})
           for result in results]
    return row_rewards(f"{component}_reward", len(completions), owner, own, on_error, columns.get("log_metric"))


def _components_of(truth: Any, component: str) -> Any:
    """The named component of a row's composite ground truth (list, or its JSON text) as one to send alone, after
    its correct_from source; [] when the row has no such component. A malformed ground truth is returned as it
    is: the server scores it `invalid`, naming the problem, and the row gets what `on_error` says."""
    try:
        spec = json.loads(truth) if isinstance(truth, str) else truth
        parsed = [Component.model_validate(entry) for entry in spec] if isinstance(spec, list) else None
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        return truth
    if parsed is None:
        return truth
    by_label = {part.label: part for part in parsed}
    wanted = by_label.get(component)
    if wanted is None:
        return []
    alone = [wanted.model_copy(update={"weight": 1.0, "gate": False})]
    if wanted.correct_from is not None and wanted.correct_from in by_label:
        alone.insert(0, by_label[wanted.correct_from].model_copy(update={"weight": 1.0, "gate": False}))
    return [part.model_dump(exclude_none=True) for part in alone]


def completion_text(completion: Any) -> str:
    """The text to score: the completion itself, or the last assistant message of a conversation."""
    if isinstance(completion, str):
        return completion
    messages = [m for m in completion if isinstance(m, dict)]
    replies = [m for m in messages if m.get("role") == "assistant"] or messages
    if not replies:
        return ""
    content = replies[-1].get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _column(columns: dict[str, Any], *names: str) -> list[Any] | None:
    for name in names:
        if columns.get(name) is not None:
            return columns[name]
    return None


async def score_rows(family: str | None, prompts: list[Any], completions: list[Any], columns: dict[str, Any],
                     base_url: str | list[str] | None, api_key: str | None, on_error: OnError,
                     timeout: float, in_process: bool | InProcessVerifier) -> list[float | None]:
    label = f"{family}_reward" if family else "olmorl_reward"
    names = _column(columns, "verifier", "dataset")
    truths = _column(columns, "ground_truth", "solution")
    if family != "judge" and "ground_truth" not in columns and "solution" not in columns:
        raise ValueError(f"{label} needs a `ground_truth` (or `solution`) column with each row's reference; "
                         f"the dataset's columns are: {', '.join(sorted(columns)) or 'none'}")
    options = columns.get("options")
    token_ids = columns.get("completion_ids")  # TRL passes each completion's token ids: `overlong` and `length` count them
    items: list[dict[str, Any]] = []
    owner: list[int] = []  # row of each item
    client, server = await scorer(base_url, api_key, timeout, on_error, in_process)
    async with client:
        aliases = await alias_table(client, server) if family is not None and names is not None else {}
        for row, completion in enumerate(completions):
            for verifier, truth in _pairs(family, names, truths, row):
                if family is not None and verifier is not None:
                    canonical = aliases.get(str(verifier).strip().lower(), "")
                    if not FAMILIES[family][1](canonical):
                        continue  # another family's row
                if verifier is None and family is None:
                    raise ValueError("olmorl_reward needs a `verifier` or `dataset` column naming each row's "
                                     "verifier; or use a family function such as math_reward")
                item = {"verifier": verifier or FAMILIES[family][0],  # type: ignore[index]
                        "response": completion_text(completion), "ground_truth": truth,
                        "prompt": prompts[row] if prompts is not None else None}
                if options is not None and options[row]:
                    item["options"] = options[row]
                if token_ids is not None:
                    item["completion_tokens"] = len(token_ids[row])
                items.append(item)
                owner.append(row)
        results = await client.verify(items) if items else []
    return row_rewards(label, len(completions), owner, results, on_error, columns.get("log_metric"))


def row_rewards(label: str, rows: int, owner: list[int], results: list[VerifyResult], on_error: OnError,
                log_metric: Any) -> list[float | None]:
    """Each row's summed reward; None for rows with no item of this family, and (on_error="none") for rows
    with a check that was not scored, which are logged with counts."""
    rewards: list[float | None] = [None] * rows
    failed: set[int] = set()
    for row, result in zip(owner, results):
        if result.reward is None:
            failed.add(row)
        else:
            rewards[row] = (rewards[row] or 0.0) + result.reward
    for row in failed:
        rewards[row] = None
    if results:
        _NOT_OK.setdefault(label, NotOkLog(log, f"olmorl.clients.trl.{label}")).record(
            results, "None" if on_error == "none" else "0.0")
        if callable(log_metric):
            log_metric(f"olmorl/{label}/not_ok_frac", sum(r.status != "ok" for r in results) / len(results))
    return rewards


def _pairs(family: str | None, names: list[Any] | None, truths: list[Any] | None,
           row: int) -> list[tuple[str | None, Any]]:
    """(verifier, ground truth) pairs of one row: one, or one per entry of a multi-verifier row."""
    name = names[row] if names is not None else None
    truth = truths[row] if truths is not None else None
    if isinstance(name, list):
        if isinstance(truth, list) and len(truth) == len(name):
            return list(zip(name, truth))
        return [(n, truth) for n in name]
    return [(name, truth)]

