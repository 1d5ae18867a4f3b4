"""A duration written in hours and minutes answers a "how long" question: `3:45` is 3 hours 45 minutes.

GPT-3 answers "how long will it take ...?" with `3:45` after working out "225 minutes is equal to 3 hours and 45
minutes"; the reference counts the same duration in minutes (225) or in hours (3.75). Only where the question
asks how long (or how much time), and only a bare `h:mm` (minutes 00-59): elsewhere `3:45` may be a time of day
or a ratio, and it equals no number.
"""

from __future__ import annotations

import re

from olmorl.rewards.math._normalize import normalize_answer

_HOW_LONG_RE = re.compile(r"\bhow\s+(?:long|much\s+time)\b", re.IGNORECASE)
_HOURS_MINUTES_RE = re.compile(r"^(?P<h>\d{1,3}):(?P<m>[0-5]\d)$")


def duration_values(prompt: str, answer: str) -> tuple[str, str] | None:
    """The (minutes, hours) an `h:mm` answer to a how-long question stands for, as exact numbers; else None."""
    m = _HOURS_MINUTES_RE.match(normalize_answer(answer).rstrip("."))
    if m is None or not _HOW_LONG_RE.search(prompt or ""):
        return None
    hours, minutes = int(m.group("h")), int(m.group("m"))
    return str(hours * 60 + minutes), f"{hours * 60 + minutes}/60"
