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

No server: `functools.partial(math_reward, in_process=True)` scores in the trainer's process, on one engine
shared by every such function and configured as a server is (OLMORL_* variables, e.g. OLMORL_WORKERS; its
workers fork from the trainer's process), or `in_process=olmorl.InProcessVerifier(workers=4)` on one of yours.
Results are the server's for the same items. `in_process=True` stays picklable.

Dataset columns read (TRL passes every column as a keyword list, one entry per completion):
- `ground_truth` (else `solution`): the reference, in the shape the verifier documents.
- `verifier` (else `dataset`): the verifier of each row, a name or alias such as open-instruct's
  `dataset` values. A list (open-instruct multi-verifier rows, with a list `ground_truth` of the same
  length) scores each pair and sums the rewards.
- `options` (optional): verifier options per row.
- `completion_ids` (TRL passes them): each completion's token count becomes the item's `completion_tokens`
  (the `overlong` and `length` verifiers read it).

A `composite` row (olmorl.rewards.engine._composite) gets its aggregate from `olmorl_reward`; `ComponentReward(name)`
makes one reward function per component instead, for TRL's `reward_weights`.

The family functions (`math_reward`, `code_reward`, `ifeval_reward`, `judge_reward`) score a row with
their own verifier when it has no verifier column, and give `None` (TRL: "not applicable") to rows
whose verifier belongs to another family, so several can share one multi-task dataset. The generic
`olmorl_reward` scores every row with the verifier its column names.

Completions in the conversational format are scored on the last assistant message.

Errors (`olmorl.clients` exceptions):
- A reward server no replica reaches after all retries raises `RewardServerUnavailable`: the step
  fails rather than train on rewards nobody computed.
- An item the server scored `invalid`, `timeout` or `error` gives that completion `None` (the default,
  `on_error="none"`): TRL leaves it out of the group's baseline and gives it no advantage. Each call
  logs a warning with the counts by status (logger `olmorl.clients`), and `log_metric` receives
  `olmorl/<name>/not_ok_frac`. `on_error="zero"` scores such items 0.0 instead (an explicit choice),
  `on_error="raise"` raises `ItemFailed`. A multi-verifier row with one failed check is None as a whole.
- No `ground_truth` (or `solution`) column is a configuration error, raised at the first call
  (`judge_reward` alone accepts rows without a reference).

These are coroutine functions: TRL awaits them. Outside TRL, `asyncio.run(math_reward(...))` or
`await math_reward(...)`; a call without either fails with a message saying so.
"""

from __future__ import annotations

import asyncio
import atexit
import collections.abc
import functools
import json
import logging
import threading
import warnings
from typing import TYPE_CHECKING, Any, Callable, Generator

from olmorl.clients._client import AsyncRewardClient
from olmorl.clients._policy import OnError, apply_on_error, resolve_urls
from olmorl.rewards._not_ok import NotOkLog
from olmorl.rewards._models import VerifierInfo, VerifyResult
from olmorl.rewards.engine._composite import COMPOSITE, Component

if TYPE_CHECKING:
    from olmorl.rewards.service._inprocess import InProcessVerifier

__all__ = ["FAMILIES", "ComponentReward", "code_reward", "ifeval_reward", "judge_reward", "math_reward",
           "olmorl_reward"]

# family -> (verifier sent for rows without a verifier column, test of a server-side canonical name)
FAMILIES: dict[str, tuple[str, Callable[[str], bool]]] = {
    "math": ("math", lambda name: name in {"math", "gsm8k", "strict_math", "math_verify"}),
    "code": ("code", lambda name: name == "code" or name.startswith("code_")),
    "ifeval": ("ifeval", lambda name: name == "ifeval"),
    "judge": ("judge", lambda name: name == "judge" or name.startswith("general-")),
}

_ALIASES: dict[tuple[str, ...], dict[str, str]] = {}  # server URLs (or in-process verifier) -> lower-cased name/alias -> name
log = logging.getLogger("olmorl.clients")
_NOT_OK: dict[str, NotOkLog] = {}  # function name -> its warning log


class PendingRewards(collections.abc.Coroutine):
    """What calling a reward function returns: a coroutine (TRL awaits it). Used as the list of rewards
    without being awaited, it fails naming the fix, instead of Python's "coroutine was never awaited"."""

    def __init__(self, name: str, coroutine: collections.abc.Coroutine) -> None:
        self._name, self._coroutine, self._started = name, coroutine, False

    def __await__(self) -> Generator[Any, None, list[float | None]]:
        self._started = True
        return self._coroutine.__await__()

    def send(self, value: Any) -> Any:
        self._started = True
        return self._coroutine.send(value)

    def throw(self, *args: Any) -> Any:
        return self._coroutine.throw(*args)

    def close(self) -> None:
        self._coroutine.close()

    def _not_awaited(self, *args: Any) -> Any:
        raise TypeError(f"{self._name} is a coroutine function (TRL awaits it): use `await {self._name}(...)` "
                        f"or `asyncio.run({self._name}(...))` to get the rewards")

    __iter__ = __len__ = __getitem__ = __bool__ = _not_awaited

    def __del__(self) -> None:
        if not self._started:
            self._coroutine.close()  # no second, vaguer "never awaited" warning from Python
            warnings.warn(f"{self._name}(...) was called but never awaited, so nothing was scored: use "
                          f"`await {self._name}(...)` or `asyncio.run({self._name}(...))`", RuntimeWarning,
                          stacklevel=2)


class RewardFunction(functools.partial):
    """A module-level coroutine function as TRL sees it (`inspect.iscoroutinefunction` is true, the name is
    the function's) whose call returns a `PendingRewards`; pickled by reference, like a function."""

    __name__: str  # set by _reward_function: a partial has no name of its own

    def __call__(self, /, *args: Any, **kwargs: Any) -> PendingRewards:
        return PendingRewards(self.__name__, super().__call__(*args, **kwargs))

    def __reduce__(self) -> str:
        return self.func.__name__


def _reward_function(func: Callable[..., Any]) -> RewardFunction:
    wrapped = RewardFunction(func)
    wrapped.__name__, wrapped.__doc__ = func.__name__, func.__doc__
    return wrapped


@_reward_function
async def math_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                      api_key: str | None = None, on_error: OnError = "none", timeout: float = 600.0,
                      in_process: bool | InProcessVerifier = False, **columns: Any) -> list[float | None]:
    """Math answers (`math` verifier and its relatives, e.g. `gsm8k`); other families' rows get None."""
    return await _score("math", prompts, completions, columns, base_url, api_key, on_error, timeout,
                        in_process)


@_reward_function
async def code_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                      api_key: str | None = None, on_error: OnError = "none", timeout: float = 600.0,
                      in_process: bool | InProcessVerifier = False, **columns: Any) -> list[float | None]:
    """Programs run against the row's tests in the server's sandbox (`code`, `code_stdio`, ...)."""
    return await _score("code", prompts, completions, columns, base_url, api_key, on_error, timeout,
                        in_process)


@_reward_function
async def ifeval_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                        api_key: str | None = None, on_error: OnError = "none", timeout: float = 600.0,
                        in_process: bool | InProcessVerifier = False, **columns: Any) -> list[float | None]:
    """Instruction-following constraints (`ifeval` and its aliases: IFEval, IFBench, IF-RLVR)."""
    return await _score("ifeval", prompts, completions, columns, base_url, api_key, on_error, timeout,
                        in_process)


@_reward_function
async def judge_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                       api_key: str | None = None, on_error: OnError = "none", timeout: float = 600.0,
                       in_process: bool | InProcessVerifier = False, **columns: Any) -> list[float | None]:
    """LM-judge score in [0, 1] (`judge` and open-instruct's `general-*` presets)."""
    return await _score("judge", prompts, completions, columns, base_url, api_key, on_error, timeout,
                        in_process)


@_reward_function
async def olmorl_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                        api_key: str | None = None, on_error: OnError = "none", timeout: float = 600.0,
                        in_process: bool | InProcessVerifier = False, **columns: Any) -> list[float | None]:
    """Any verifier: each row's `verifier` (else `dataset`) column names it."""
    return await _score(None, prompts, completions, columns, base_url, api_key, on_error, timeout,
                        in_process)


class ComponentReward:
    """One component of each row's composite ground truth as a TRL reward function of its own, named
    `<component>_reward` (TRL logs it so), so TRL weighs the components with `reward_weights` and logs each one:

        reward_funcs=[ComponentReward("math"), ComponentReward("format")], reward_weights=[1.0, 0.2]

    `component` is a component's name (its `name`, else its verifier). Each call scores that component alone
    (after its `correct_from` source, when it has one) and returns its reward: the component's `weight` and the
    row's aggregate are not applied (`olmorl_reward` returns the aggregate: gate, min, all_pass). Rows that are
    not composite, or have no such component, get None. `config`: `base_url`, `api_key`, `on_error`, `timeout`,
    as for the other functions. An async callable instance, picklable (TRL's async trainer pickles it)."""

    def __init__(self, component: str, **config: Any) -> None:
        self.component, self.config = component, config
        self.__name__ = f"{component}_reward"

    async def __call__(self, prompts: list[Any], completions: list[Any], **columns: Any) -> list[float | None]:
        return await _score_component(prompts, completions, component=self.component, **self.config, **columns)


async def _score_component(prompts: list[Any], completions: list[Any], *, component: str,
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
    return _row_rewards(f"{component}_reward", len(completions), owner, own, on_error, columns.get("log_metric"))


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


async def _score(family: str | None, prompts: list[Any], completions: list[Any], columns: dict[str, Any],
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
    client, server = await _scorer(base_url, api_key, timeout, on_error, in_process)
    async with client:
        aliases = await _alias_table(client, server) if family is not None and names is not None else {}
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
    return _row_rewards(label, len(completions), owner, results, on_error, columns.get("log_metric"))


def _row_rewards(label: str, rows: int, owner: list[int], results: list[VerifyResult], on_error: OnError,
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


async def _alias_table(client: AsyncRewardClient | _InProcessScorer, server: tuple[str, ...]) -> dict[str, str]:
    """Name and alias -> registered name, as the server says (fetched once per server)."""
    table = _ALIASES.get(server)
    if table is None:
        table = {}
        for info in await client.verifiers():
            table[info.name.lower()] = info.name
            for alias in info.aliases:
                table[alias.lower()] = info.name
        _ALIASES[server] = table
    return table


async def _scorer(base_url: str | list[str] | None, api_key: str | None, timeout: float, on_error: OnError,
                  in_process: bool | InProcessVerifier) -> tuple[AsyncRewardClient | _InProcessScorer, tuple[str, ...]]:
    """What scores the items (an HTTP client, or an in-process verifier) and a key naming its server."""
    if in_process is False:
        urls = tuple(resolve_urls(base_url))
        return AsyncRewardClient(list(urls), api_key=api_key, timeout=timeout, on_error=on_error), urls
    if base_url is not None:
        raise ValueError("pass base_url (a reward server) or in_process (no server), not both")
    verifier = await asyncio.to_thread(_shared_verifier) if in_process is True else in_process
    from olmorl.rewards.service._inprocess import InProcessVerifier

    if not isinstance(verifier, InProcessVerifier):
        raise TypeError(f"in_process must be True or an olmorl.InProcessVerifier, not {type(in_process).__name__} "
                        f"(an AsyncInProcessVerifier is bound to the event loop it started on, not TRL's)")
    return _InProcessScorer(verifier, on_error), ("in-process", str(id(verifier)))


class _InProcessScorer:
    """An InProcessVerifier behind the two calls `_score` makes of a client, awaitable on any event loop (TRL scores
    on one of its own); the verifier outlives the call."""

    def __init__(self, verifier: InProcessVerifier, on_error: OnError) -> None:
        self.verifier, self.on_error = verifier, on_error

    async def verifiers(self) -> list[VerifierInfo]:
        return await asyncio.to_thread(self.verifier.verifiers)

    async def verify(self, items: list[dict[str, Any]]) -> list[VerifyResult]:
        return apply_on_error(await asyncio.wrap_future(self.verifier.submit(items)), self.on_error)

    async def __aenter__(self) -> "_InProcessScorer":
        return self

    async def __aexit__(self, *exc: object) -> None:
        pass


_SHARED: list[InProcessVerifier] = []  # the verifier of `in_process=True`, started at its first use
_SHARED_LOCK = threading.Lock()


def _shared_verifier() -> InProcessVerifier:
    """One in-process engine for every `in_process=True` function of this process, configured as a server is (OLMORL_*
    environment variables: OLMORL_WORKERS, OLMORL_SANDBOX_BACKEND, ...), closed at exit."""
    from olmorl.rewards.service._inprocess import InProcessVerifier

    with _SHARED_LOCK:
        if not _SHARED:
            _SHARED.append(InProcessVerifier())
            atexit.register(_SHARED[0].close)
        return _SHARED[0]
