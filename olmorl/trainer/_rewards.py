"""Scoring groups over HTTP: batch them through `AsyncRewardClient`, survive a reward server that goes away."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from olmorl.clients import SERVER_UNAVAILABLE, AsyncRewardClient, OlmorlError, RewardServerError, VerifyResult

log = logging.getLogger("olmorl.trainer")


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
                # items no server answered were never scored: retry the batch rather than drop them
                unscored = [r for r in results if r.details.get("reason") == SERVER_UNAVAILABLE]
                if not unscored:
                    self.latencies.append(time.perf_counter() - start)
                    return results
                reason = unscored[0].error
            except RewardServerError:
                raise  # the server refused the request itself: retrying cannot help
            except (OlmorlError, OSError) as exc:
                reason = f"{type(exc).__name__}: {exc}"
            now = time.monotonic()
            first_failure = first_failure or now
            if now - first_failure > self.max_wait_s:
                raise RewardServerGone(f"reward servers unreachable for {now - first_failure:.0f} s: {reason}")
            self.retries += 1
            log.warning("reward server unreachable (%s); retrying the same %d items in %.1f s", reason, len(items), delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)
