"""Times of day: `4:30 PM`, `4:30 p.m.`, `\\text{4:30 p.m.}` and `4:30 in the afternoon` are one time.

A time with a.m./p.m. (any case, with or without dots, or "in the morning/afternoon/evening") is normalized to
`T16:30` (24-hour, ISO 8601's time designator), so the same time compares equal as text and a different time
never does. A bare 24-hour time is the same time only where its hour cannot be a 12-hour one (`16:30`,
`00:15`); a bare `4:30` says neither a.m. nor p.m. and equals no time that does (it may also be a ratio, and
bare `h:mm` against bare `h:mm` keeps comparing as before).

A question that fixes the answer's form as a bare clock reading ("Your answer should be in the form $h:m_1m_2,$
like 3:45", "in the form hh:mm") and names neither a.m. nor p.m. in that sentence asks for the time as a 12-hour
clock shows it: there a bare `1:03` answers a reference `\\text{1:03 PM}` (the reference's p.m. is beyond the form
asked). Only the same hour and minutes pass (`2:06`, equal to `1:03` as a ratio, does not), and an answer that
names the other half of the day (`1:03 AM`) still states another time.
"""

from __future__ import annotations

import re

_TWELVE_HOUR_RE = re.compile(
    r"^(?P<h>\d{1,2})(?::(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d))?)?\s*(?:~|\\\s)?\s*"
    r"(?:(?P<am>a\.?\s?m\b\.?)|(?P<pm>p\.?\s?m\b\.?)|in\s+the\s+(?P<part>morning|afternoon|evening))$",
    re.IGNORECASE,
)
_CANONICAL_RE = re.compile(r"^T(?P<h>[01]\d|2[0-3]):(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d))?$")
_TWENTY_FOUR_HOUR_RE = re.compile(r"^(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d))?$")
# "in the form $h:m_1m_2$", "in the form hh:mm", "in the form H:MM": the prompt asks for a clock reading.
_CLOCK_FORM_RE = re.compile(r"\bform\s+(?:of\s+)?\$?\s*h{1,2}\s*:\s*(?:m_\{?1\}?\s*m_\{?2\}?|mm)(?![a-z])",
                            re.IGNORECASE)
# Where the sentence naming the form ends: a plain stop or a line break (the answer rules' sentence splitting,
# `_anchors.SENTENCE_END_RE`, reads responses, not prompts).
_FORM_SENTENCE_END_RE = re.compile(r"\.(?=\s|$)|\n")
_MERIDIEM_WORD_RE = re.compile(r"(?<![a-z])[ap]\.?\s?m(?![a-z])|\b(?:morning|afternoon|evening|noon|midnight)\b",
                               re.IGNORECASE)


def _canonical(hour: int, minute: str | None, second: str | None) -> str:
    seconds = f":{second}" if second and second != "00" else ""
    return f"T{hour:02d}:{minute or '00'}{seconds}"


def canonical_time(text: str) -> str | None:
    """`4:30 p.m.` -> `T16:30`; None when the text is not a 12-hour time of day."""
    m = _TWELVE_HOUR_RE.match(text.strip())
    if m is None or not 1 <= int(m.group("h")) <= 12:
        return None
    afternoon = m.group("pm") is not None or (m.group("part") or "").lower() in ("afternoon", "evening")
    return _canonical(int(m.group("h")) % 12 + (12 if afternoon else 0), m.group("m"), m.group("s"))


def _time_value(text: str) -> str | None:
    """The canonical time of a normalized answer: a 12-hour time already normalized, or an unambiguous 24-hour one."""
    if _CANONICAL_RE.match(text):
        return text
    m = _TWENTY_FOUR_HOUR_RE.match(text)
    if m is None or 1 <= int(m.group("h")) <= 12:
        return None
    return _canonical(int(m.group("h")), m.group("m"), m.group("s"))


def times_equal(reference: str, answer: str) -> bool | None:
    """Whether two normalized answers are the same time of day; None when neither is a 12-hour time."""
    if not (_CANONICAL_RE.match(reference) or _CANONICAL_RE.match(answer)):
        return None
    ref, ans = _time_value(reference), _time_value(answer)
    return ref is not None and ref == ans


def bare_clock_reading(prompt: str, reference: str, answer: str) -> bool:
    """Whether a bare `h:mm` answer is the reference's time as a 12-hour clock shows it, where the prompt asks for
    that bare form (`1:03` for `T13:03` after "in the form $h:m_1m_2,$ like 3:45") and names no a.m./p.m. there."""
    ref, ans = _CANONICAL_RE.match(reference), _TWENTY_FOUR_HOUR_RE.match(answer.strip())
    form = _CLOCK_FORM_RE.search(prompt or "")
    if ref is None or ans is None or form is None:
        return False
    if _MERIDIEM_WORD_RE.search(_FORM_SENTENCE_END_RE.split(prompt[form.start():], maxsplit=1)[0]):
        return False  # "in the form hh:mm a.m. or p.m." asks for the half of the day too
    return (int(ans.group("h")) == (int(ref.group("h")) % 12 or 12) and ans.group("m") == ref.group("m")
            and (ans.group("s") or "00") == (ref.group("s") or "00"))
