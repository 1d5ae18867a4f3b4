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

import collections.abc
import functools
import warnings
from typing import TYPE_CHECKING, Any, Callable, Generator

from olmorl.clients._policy import OnError
from olmorl.clients._trl_rows import FAMILIES, completion_text, score_component, score_rows  # completion_text: kept importable from here

if TYPE_CHECKING:
    from olmorl.rewards.service._inprocess import InProcessVerifier

__all__ = ["FAMILIES", "ComponentReward", "code_reward", "ifeval_reward", "judge_reward", "math_reward",
           "olmorl_reward"]


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
    return await score_rows("math", prompts, completions, columns, base_url, api_key, on_error, timeout,
                            in_process)


@_reward_function
async def code_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                      api_key: str | None = None, on_error: OnError = "none", timeout: float = 600.0,
                      in_process: bool | InProcessVerifier = False, **columns: Any) -> list[float | None]:
    """Programs run against the row's tests in the server's sandbox (`code`, `code_stdio`, ...)."""
    return await score_rows("code", prompts, completions, columns, base_url, api_key, on_error, timeout,
                            in_process)


@_reward_function
async def ifeval_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                        api_key: str | None = None, on_error: OnError = "none", timeout: float = 600.0,
                        in_process: bool | InProcessVerifier = False, **columns: Any) -> list[float | None]:
    """Instruction-following constraints (`ifeval` and its aliases: IFEval, IFBench, IF-RLVR)."""
    return await score_rows("ifeval", prompts, completions, columns, base_url, api_key, on_error, timeout,
                            in_process)


@_reward_function
async def judge_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                       api_key: str | None = None, on_error: OnError = "none", timeout: float = 600.0,
                       in_process: bool | InProcessVerifier = False, **columns: Any) -> list[float | None]:
    """LM-judge score in [0, 1] (`judge` and open-instruct's `general-*` presets)."""
    return await score_rows("judge", prompts, completions, columns, base_url, api_key, on_error, timeout,
                            in_process)


@_reward_function
async def olmorl_reward(prompts: list[Any], completions: list[Any], *, base_url: str | list[str] | None = None,
                        api_key: str | None = None, on_error: OnError = "none", timeout: float = 600.0,
                        in_process: bool | InProcessVerifier = False, **columns: Any) -> list[float | None]:
    """Any verifier: each row's `verifier` (else `dataset`) column names it."""
    return await score_rows(None, prompts, completions, columns, base_url, api_key, on_error, timeout,
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
        return await score_component(prompts, completions, component=self.component, **self.config, **columns)


