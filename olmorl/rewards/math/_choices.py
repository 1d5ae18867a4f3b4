"""A multiple-choice question answered by an option's content rather than its letter.

A careful grader reads `\\boxed{6}` for "... 中位数为（ ） A. 5 B. 6 C. 8 D. 9", reference `B`, as option B: the
answer is the content of exactly one option listed in the prompt. An answer equal to no option, or to several
(two options with one value), names no letter; without the prompt's options the letter alone decides.
"""

from __future__ import annotations

import re

from olmorl.rewards.math import _structure as st
from olmorl.rewards.math._equivalence import equivalent
from olmorl.rewards.math._normalize import normalize_answer

# An option line: `A. 5`, `(B) 4\sqrt{5}`, `C、8`, `D: \frac{\sqrt{65}}{2}`.
_OPTION_LINE_RE = re.compile(r"^\s*\(?([A-H])\s*(?:[.．、:：]|\))\s*(\S.*?)\s*$", re.MULTILINE)


def prompt_options(prompt: str) -> dict[str, str]:
    """The options the prompt lists, by letter: at least two, lettered A, B, ... in order; else none."""
    found = _OPTION_LINE_RE.findall(prompt)
    letters = [letter for letter, _ in found]
    if len(found) < 2 or letters != [chr(ord("A") + i) for i in range(len(found))]:
        return {}
    return dict(found)


def chosen_letter(prompt: str, answer: str, rel_tol: float) -> str | None:
    """The letter of the only option whose content the answer equals; None for a letter answer, for no option
    or for several."""
    if st.as_letter(answer) is not None or not (options := prompt_options(prompt)):
        return None
    normalized = normalize_answer(answer)
    equal = [letter for letter, content in options.items()
             if equivalent(normalize_answer(content), normalized, rel_tol).match]
    return equal[0] if len(equal) == 1 else None
