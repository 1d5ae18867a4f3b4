"""What scores the rows of a TRL reward function: an HTTP client of the reward server, or an in-process engine
(`in_process=`), and the server's table of verifier names and aliases (see `olmorl.clients.trl`)."""

from __future__ import annotations

import asyncio
import atexit
import threading
from typing import TYPE_CHECKING, Any

from olmorl.clients._client import AsyncRewardClient
from olmorl.clients._policy import OnError, apply_on_error, resolve_urls
from olmorl.rewards._models import VerifierInfo, VerifyResult

if TYPE_CHECKING:
    from olmorl.rewards.service._inprocess import InProcessVerifier

_ALIASES: dict[tuple[str, ...], dict[str, str]] = {}  # server URLs (or in-process verifier) -> lower-cased name/alias -> name


async def alias_table(client: AsyncRewardClient | _InProcessScorer, server: tuple[str, ...]) -> dict[str, str]:
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


async def scorer(base_url: str | list[str] | None, api_key: str | None, timeout: float, on_error: OnError,
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
    """An InProcessVerifier behind the two calls `_trl_rows.score_rows` makes of a client, awaitable on any event
    loop (TRL scores on one of its own); the verifier outlives the call."""

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
