"""A yes/no (true/false) answer's verdict: `boolean_answer("Yes, because 7 is prime")` -> "yes". An answer
that names both verdicts as answers ("no, but it may be yes") has none: a hedge.
"""

from __future__ import annotations

import re

_BOOLEAN = {"yes": "yes", "true": "yes", "correct": "yes", "no": "no", "false": "no", "incorrect": "no"}
_BOOLEAN_LEAD_RE = re.compile(r"^(yes|no|true|false)\b\s*[,.;:!\-(]", re.IGNORECASE)
# "the answer (Yes or No) is most likely Yes": the yes/no named as the likelier is the answer, as "most likely B"
# names a choice (`_structure`); "probably yes" stays a hedge (`_extract`), and so does anything after the word.
_MOST_LIKELY_BOOLEAN_RE = re.compile(r"^(?:the\s+)?most\s+likely\s+(?=(?:yes|no|true|false)\b)", re.IGNORECASE)
# A verdict word standing as an answer: after a contrast or "be"/"say", or before a clause break ("it may be yes.",
# "but yes if ..."); not after "not" ("it is not true" agrees with "no").
_OTHER_VERDICT_RE = re.compile(
    r"(?:\b(?P<lead>but|or|be|say|yet|although|though)\s+)?(?<!\bnot )(?<![\w'-])(?P<word>yes|no|true|false)(?![\w'-])"
    r"(?P<end>(?=\s*(?:$|[.,;:!?)\"']))|\s+(?:if|when|unless|depending|in\s+some|for\s+some|too|as\s+well)\b)?",
    re.IGNORECASE,
)
_SAME_FAMILY = {"yes": ("yes", "no"), "no": ("yes", "no"), "true": ("true", "false"), "false": ("true", "false")}


def boolean_answer(answer: str) -> str | None:
    """yes/no of an answer, also with a justification after it ("Yes, because 7 is prime")."""
    if _MOST_LIKELY_BOOLEAN_RE.match(answer.strip()):  # only the word itself: "most likely no, but ..." is a hedge
        return _BOOLEAN.get(_MOST_LIKELY_BOOLEAN_RE.sub("", answer.strip()).lower().strip("."))
    if (value := _BOOLEAN.get(answer.lower().strip("."))) is not None:
        return value
    m = _BOOLEAN_LEAD_RE.match(answer)
    if m is None:
        return None
    value = _BOOLEAN.get(m.group(1).lower())
    # "no, but it may be yes", "No (or yes, depending ...)": the justification names the other verdict as an
    # answer, so the response names both (a hedge); "Yes, because no other ..." uses "no" as a determiner.
    for other in _OTHER_VERDICT_RE.finditer(answer, m.end()):
        word = other.group("word").lower()
        determiner = word == "no" and other.group("end") is None and re.match(r"\s+[a-z]", answer[other.end():])
        if (other.group("lead") or other.group("end") is not None) and not determiner \
                and word in _SAME_FAMILY[m.group(1).lower()] and _BOOLEAN[word] != value:
            return None
    return value


# "Would a CEO typically clean the toilets?" -> "typically No, the CEO would not ...": a frequency word the question
# itself asks with restates its scope, not a doubt (batch 42); without it in the question ("typically no" to "Is X
# safe?") the word qualifies the verdict and stays a hedge, as "probably yes" does.
_FREQUENCY_LEAD_RE = re.compile(
    r"^(typically|usually|generally|normally|commonly|ordinarily)\s+(?=(?:yes|no)\b)", re.IGNORECASE
)


def echoed_frequency(question: str, answer: str) -> str | None:
    """The answer without a leading frequency word that the question asks with; None when there is none."""
    m = _FREQUENCY_LEAD_RE.match(answer.strip())
    if m is None or not re.search(rf"\b{m.group(1)}\b", question, re.IGNORECASE):
        return None
    return answer.strip()[m.end():]
