"""`NotOkLog`: the warning that says how many items were not scored, so a failure never hides as a reward."""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Sequence

from olmorl.rewards._models import VerifyResult


class NotOkLog:
    """Logs how many items came back not `ok` (by status, with the latest reason), so a failure is never a
    silent reward: every call with failures when `every_s` is 0, else at most once per `every_s` seconds
    with the counts since the last line (verl calls once per sample)."""

    def __init__(self, logger: logging.Logger, label: str, every_s: float = 0.0) -> None:
        self.logger, self.label, self.every_s = logger, label, every_s
        self.seen = 0
        self.counts: Counter[str] = Counter()
        self.latest = ""
        self._last_line = float("-inf")

    def record(self, results: Sequence[VerifyResult], becomes: str) -> None:
        self.seen += len(results)
        for result in results:
            if result.status != "ok":
                self.counts[result.status] += 1
                self.latest = f"{result.verifier}: {result.error}"
        now = time.monotonic()
        if self.counts and now - self._last_line >= self.every_s:
            by_status = ", ".join(f"{status} {count}" for status, count in sorted(self.counts.items()))
            self.logger.warning("%s: %d of %d items not scored (%s) -> reward %s; latest: %s", self.label,
                                sum(self.counts.values()), self.seen, by_status, becomes, self.latest[:300])
            self.seen, self.counts, self._last_line = 0, Counter(), now
        elif not self.every_s:
            self.seen = 0
