"""Reward functions for TRL's `GRPOTrainer`, scored by an olmorl reward server.

    from olmorl.clients.trl import math_reward, ifeval_reward
    trainer = GRPOTrainer(..., reward_funcs=[math_reward, ifeval_reward])

or from the command line, with the server URL in the environment:

    OLMORL_URL=http://127.0.0.1:8000 trl grpo ... --reward_funcs olmorl.clients.trl.olmorl_reward

Each function is a module-level `async def` (TRL runs those concurrently, and pickles them for its
async trainer) named after what it scores, so TRL logs `rewards/math_reward/mean` etc. Configure one
with `functools.partial(math_reward, base_url=..., api_key=..., on_error="none")`: still picklable,
still detected as async, still logged under its own name. Unset, `base_url` and `api_key` come from
`OLMORL_URL` / `OLMORL_API_KEY`.

Dataset columns read (TRL passes every column as a keyword list, one entry per completion):
- `ground_truth` (else `solution`): the reference, in the shape the verifier documents.
- `verifier` (else `dataset`): the verifier of each row, a name or alias such as open-instruct's
  `dataset` values. A list (open-instruct multi-verifier rows, with a list `ground_truth` of the same
  length) scores each pair and sums the rewards.
- `options` (optional): verifier options per row.

The family functions (`math_reward`, `code_reward`, `ifeval_reward`, `judge_reward`) score a row with
their own verifier when it has no verifier column, and give `None` (TRL: "not applicable") to rows
whose verifier belongs to another family, so several can share one multi-task dataset. The generic
`olmorl_reward` scores every row with the verifier its column names.

Completions in the conversational format are scored on the last assistant message. An item the
server could not score gets reward 0 (`on_error="zero"`, the default) or `None` (`on_error="none"`,
which TRL leaves out of that row's reward); `log_metric` receives the fraction of items not `ok`.
"""

from __future__ import annotations

from typing import Any, Callable

from olmorl.clients._client import AsyncRewardClient
from olmorl.clients._policy import OnError, resolve_urls

__all__ = ["FAMILIES", "code_reward", "ifeval_reward", "judge_reward", "math_reward", "olmorl_reward"]

# family -> (verifier sent for rows without a verifier column, test of a server-side canonical name)
FAMILIES: dict[str, tuple[str, Callable[[str], bool]]] = {
    "math": ("math", lambda name: name in {"math", "gsm8k", "strict_math", "math_verify"}),
    "code": ("code", lambda name: name == "code" or name.startswith("code_")),
    "ifeval": ("ifeval", lambda name: name == "ifeval"),
    "judge": ("judge", lambda name: name == "judge" or name.startswith("general-")),
}

_ALIASES: dict[tuple[str, ...], dict[str, str]] = {}  # server URLs -> lower-cased name/alias -> name


async def math_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                      api_key: str | None = None, on_error: OnError = "zero", timeout: float = 600.0,
                      **columns: Any) -> list[float | None]:
    """Math answers (`math` verifier and its relatives, e.g. `gsm8k`); other families' rows get None."""
    return await _score("math", prompts, completions, columns, base_url, api_key, on_error, timeout)


async def code_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                      api_key: str | None = None, on_error: OnError = "zero", timeout: float = 600.0,
                      **columns: Any) -> list[float | None]:
    """Programs run against the row's tests in the server's sandbox (`code`, `code_stdio`, ...)."""
    return await _score("code", prompts, completions, columns, base_url, api_key, on_error, timeout)


async def ifeval_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                        api_key: str | None = None, on_error: OnError = "zero", timeout: float = 600.0,
                        **columns: Any) -> list[float | None]:
    """Instruction-following constraints (`ifeval` and its aliases: IFEval, IFBench, IF-RLVR)."""
    return await _score("ifeval", prompts, completions, columns, base_url, api_key, on_error, timeout)


async def judge_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                       api_key: str | None = None, on_error: OnError = "zero", timeout: float = 600.0,
                       **columns: Any) -> list[float | None]:
    """LM-judge score in [0, 1] (`judge` and open-instruct's `general-*` presets)."""
    return await _score("judge", prompts, completions, columns, base_url, api_key, on_error, timeout)


async def olmorl_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                        api_key: str | None = None, on_error: OnError = "zero", timeout: float = 600.0,
                        **columns: Any) -> list[float | None]:
    """Any verifier: each row's `verifier` (else `dataset`) column names it."""
    return await _score(None, prompts, completions, columns, base_url, api_key, on_error, timeout)


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


async def _score(family: str | None, prompts: list[Any], completions: list[Any], columns: dict[str, Any],
                 base_url: str | list[str] | None, api_key: str | None, on_error: OnError,
                 timeout: float) -> list[float | None]:
    urls = tuple(resolve_urls(base_url))
    names = _column(columns, "verifier", "dataset")
    truths = _column(columns, "ground_truth", "solution")
    options = columns.get("options")
    items: list[dict[str, Any]] = []
    owner: list[int] = []  # row of each item
    async with AsyncRewardClient(list(urls), api_key=api_key, timeout=timeout, on_error=on_error) as client:
        aliases = await _alias_table(client, urls) if family is not None and names is not None else {}
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
                items.append(item)
                owner.append(row)
        results = await client.verify(items) if items else []

    rewards: list[float | None] = [None] * len(completions)
    for row, result in zip(owner, results):
        if result.reward is not None:
            rewards[row] = (rewards[row] or 0.0) + result.reward
    log_metric = columns.get("log_metric")
    if callable(log_metric) and results:
        label = f"{family}_reward" if family else "olmorl_reward"
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


async def _alias_table(client: AsyncRewardClient, urls: tuple[str, ...]) -> dict[str, str]:
    """Name and alias -> registered name, as the server says (fetched once per set of URLs)."""
    table = _ALIASES.get(urls)
    if table is None:
        table = {}
        for info in await client.verifiers():
            table[info.name.lower()] = info.name
            for alias in info.aliases:
                table[alias.lower()] = info.name
        _ALIASES[urls] = table
    return table
