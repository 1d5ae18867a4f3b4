"""An answer labelled with the expression the question asks for: "Compute $a+b+c$" answered `a + b + c =
\\frac{6}{5}` (or `a + b + c = 7 + (-2) + 0 = 5`) states the value on its last side, as `x = 5` does for "Find $x$".

The label must be an expression the prompt quotes right after an asking verb ("compute", "find", "evaluate",
"determine", "calculate", "what is", optionally "the value of"): another expression on the left (`a + b = 5` for
"Compute $a+b+c$"), or a question that only mentions the expression, leaves the answer as it was.
"""

from __future__ import annotations

import re

from olmorl.rewards.math._requested_form import math_key
from olmorl.rewards.math._structure import top_level_split

_ASKED_RE = re.compile(
    r"\b(?:compute|find|evaluate|determine|calculate|what\s+is)\s+(?:the\s+value\s+of\s+)?"
    r"(?:\$\$?(.+?)\$\$?|\\\((.+?)\\\))", re.IGNORECASE | re.DOTALL)


def asked_value(prompt: str, answer: str) -> str | None:
    """The last side of an answer `E = ... = v` whose left side E is the expression the prompt asks for, or None."""
    sides = top_level_split(answer, ("=",))
    if len(sides) < 2 or not sides[-1].strip():
        return None
    asked = {math_key((a or b).strip().rstrip(",.;?:").strip()) for a, b in _ASKED_RE.findall(prompt)}
    if math_key(sides[0]) not in asked - {""}:
        return None
    return sides[-1].strip()
