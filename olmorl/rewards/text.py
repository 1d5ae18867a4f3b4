"""Plain-text verifiers from open-instruct: normalized exact match and token F1 (SQuAD normalization)."""

from __future__ import annotations

import re
import string
from collections import Counter

from olmorl.rewards._registry import Score, Task, Verifier, register

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def strip_thinking(text: str) -> str:
    """The text after the last `</think>` (the whole text when there is none)."""
    head, sep, tail = text.rpartition("</think>")
    return tail if sep else text


def normalize_squad(text: str) -> str:
    """SQuAD answer normalization: lower case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in string.punctuation)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def token_f1(prediction: str, reference: str) -> float:
    pred, ref = normalize_squad(prediction).split(), normalize_squad(reference).split()
    common = Counter(pred) & Counter(ref)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(pred), overlap / len(ref)
    return 2 * precision * recall / (precision + recall)


def _references(ground_truth: str | list[str]) -> list[str]:
    return [ground_truth] if isinstance(ground_truth, str) else list(ground_truth)


@register
class StringMatchVerifier(Verifier):
    name = "string_match"
    aliases = ("string_matcher",)
    description = "Normalized exact match of the <answer>...</answer> content against any reference."
    ground_truth_type = str | list[str]

    def score(self, task: Task) -> Score:
        found = _ANSWER_TAG.findall(strip_thinking(task.response))
        if not found:
            return Score(0.0, {"reason": "no_answer"})
        answer = normalize_squad(found[-1])
        matched = any(answer == normalize_squad(ref) for ref in _references(task.ground_truth))
        return Score(float(matched), {"extracted": found[-1].strip(), "reason": None if matched else "mismatch"})


@register
class StringF1Verifier(Verifier):
    name = "string_f1"
    description = "Token F1 (SQuAD normalization) of the text after </think>, best over the references."
    ground_truth_type = str | list[str]

    def score(self, task: Task) -> Score:
        answer = strip_thinking(task.response)
        best = max(token_f1(answer, ref) for ref in _references(task.ground_truth)) if task.ground_truth else 0.0
        return Score(best, {"f1": best})
