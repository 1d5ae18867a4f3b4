"""The math verifier's scans that start past the top of a response (at a key word, or where an end-anchored match
could start) find exactly what a scan of the whole text finds."""

from __future__ import annotations

import random

from olmorl.rewards.math import _closing as closing
from olmorl.rewards.math import _anchors as anchors_module
from olmorl.rewards.math import _rewritten_closing as rewritten

_WORDS = [" ", "\n", "\n\n", "\t", "**", "*", "Final Answer:", "final answer: ", "The final answer is", "FINAL ANSWER",
          "I hope it is correct", "I hope this is correct.", "Hope that helps!", "Let me know if you'd like more",
          "**Answer:", "Answer", "answer:", "the correct answer is", "option", "choice", "####", "final", "5", "1/8",
          "$5$", "\\boxed{7}", ".", ",", "x", "is", "are:", "- ", "This can be simplified to", "%", " percent", "pct",
          "ſ", "é"]
_EDGES = [
    "We start.\n \t ** final \n answer: 5",
    "the correct answer is 3",
    "  **Final Answer**\n\n$$4$$",
    "text\n\n**Answer:** 9**",
    "Result.\n#### 12",
    "The answer is 5.\n\nI hope this is correct.",
    "So 12.\n  \n  Let me know if you'd like more help!",
    "The solutions are:\n\n  * x = 5",
    "It is 3/24. This can be simplified to **1/8**.",
    "anſwer: 5",
]


def _texts() -> list[str]:
    rng = random.Random(7)
    return _EDGES + ["".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 14))) for _ in range(5000)]


def _full_listed_value(body: str) -> str:
    m = closing._LISTED_VALUE_RE.search(body)
    if m is None or not closing._STATEMENT_RE.match(m.group(1).strip() + " "):
        return body
    return f"{body[:m.start(1)]}{m.group(1).strip()} {m.group(2).rstrip('.')}."


def _spans(matches) -> list[tuple[int, int]]:  # noqa: ANN001
    return [(m.start(), m.end()) for m in matches]


def test_anchor_scans_find_what_the_whole_text_holds() -> None:
    for text in _texts():
        start = anchors_module._phrase_scan_start(text, text.lower()) if text.isascii() else 0
        found = _spans(anchors_module._PHRASE_RE.finditer(text, start)) if start is not None else []
        assert found == _spans(anchors_module._PHRASE_RE.finditer(text)), text
        anchors = anchors_module.find_anchors(text)
        for kind, pattern in (("minerva", anchors_module.MINERVA_RE), ("bold", anchors_module._BOLD_LINE_RE)):
            assert [(a.start, a.end, a.text) for a in anchors if a.kind == kind] == [
                (m.start(), m.end(), m.group(1)) for m in pattern.finditer(text)], text


def test_closing_end_scans_find_what_the_whole_text_holds() -> None:
    for text in _texts():
        text = text.rstrip()
        assert closing._without_sign_off(text) == closing._SIGN_OFF_RE.sub("", text), text
        body = text.strip()
        assert closing._listed_value(body) == _full_listed_value(body), body
        assert rewritten.ends_in_rewrite(body) == (rewritten._REWRITE_RE.search(body) is not None), body
