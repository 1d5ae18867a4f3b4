"""The form a question asks for besides the value: "Simplify ..." asks for the value in its simplest form.

An answer equal in value to the reference but with a decimal left under a radical sign (`2\\sqrt{60.5}` for
"Simplify $\\sqrt{242}$", `\\frac{\\sqrt{5.76}}{0.2}` for "Simplify: ...") has not done the simplification asked
for. Without such a question, or where the reference itself keeps a decimal under a radical, the value decides.
"""

from __future__ import annotations

import re

_SIMPLIFY_RE = re.compile(r"\bsimplif(?:y|ied)\b|\bsimplest\b", re.IGNORECASE)
_DECIMAL_RADICAND_RE = re.compile(r"\\sqrt(?:\[[^\]]*\])?\{[^{}]*\d\.\d")


def unsimplified(prompt: str, reference: str, compared: list[str]) -> bool:
    """Whether the prompt asks to simplify and the matched answer still has a decimal under a radical sign."""
    return (bool(_SIMPLIFY_RE.search(prompt)) and not _DECIMAL_RADICAND_RE.search(reference)
            and any(_DECIMAL_RADICAND_RE.search(answer) for answer in compared))
