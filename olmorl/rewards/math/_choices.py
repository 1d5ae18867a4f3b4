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


# An inline option list after the question: "Answer Choices: (A) car (B) city or town (C) park".
_INLINE_OPTION_RE = re.compile(r"\(([A-J])\)\s*(.*?)\s*(?=\([A-J]\)|$)", re.DOTALL)


def _listed_options(prompt: str) -> dict[str, str]:
    """The prompt's options by letter, one per line or inline after "Answer Choices:"; else none."""
    if options := prompt_options(prompt):
        return options
    found = _INLINE_OPTION_RE.findall(prompt.rsplit("Answer Choices:", 1)[-1])
    letters = [letter for letter, _ in found]
    if len(found) < 2 or letters != [chr(ord("A") + i) for i in range(len(found))]:
        return {}
    return dict(found)


def _plain(text: str) -> str:
    return " ".join(text.strip(" \t\n.,;:'\"").casefold().split())


def names_own_option(prompt: str, answer: str) -> bool:
    """True for a choice followed by its own option's full text as the prompt lists it: "B, city or town" where
    option B is "city or town". An "or" inside that text is the option's, not a second answer."""
    if (choice := st.as_letter(answer)) is None or not choice[1]:
        return False
    own = _listed_options(prompt).get(choice[0])
    return own is not None and _plain(own) == _plain(choice[1])


def chosen_letter(prompt: str, answer: str, rel_tol: float) -> str | None:
    """The letter of the only option whose content the answer equals; None for a letter answer, for no option
    or for several."""
    if st.as_letter(answer) is not None or not (options := prompt_options(prompt)):
        return None
    normalized = normalize_answer(answer)
    equal = [letter for letter, content in options.items()
             if equivalent(normalize_answer(content), normalized, rel_tol).match]
    return equal[0] if len(equal) == 1 else None
