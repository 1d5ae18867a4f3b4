"""The question as the answer rules read it: its end, where a long problem states what it asks."""

from __future__ import annotations

QUESTION_TAIL_CHARS = 2_000  # a long problem's setup is skipped; what is asked comes last


def question_tail(question: str) -> str:
    """The question's last QUESTION_TAIL_CHARS characters, as written."""
    return question[-QUESTION_TAIL_CHARS:]


def question_text(question: str) -> str:
    """The question's tail with math delimiters dropped ("How many $y$-intercepts" reads as "How many
    y-intercepts"), for rules that match the question's words."""
    return question_tail(question).replace("$", "")
