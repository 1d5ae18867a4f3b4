"""Plain-text verifiers from open-instruct (`ground_truth_utils.py`): normalized exact match and token F1
with SQuAD normalization, in the answer forms its datasets use.

| name | answer read from the response | score |
|---|---|---|
| `string_match` | the last `<answer>...</answer>` after `</think>` | exact match, any reference |
| `string_f1` | text after `</think>`, `<answer>` tags removed | best token F1 over the references |
| `puzzle` | text after `</think>`, `<answer>` tags removed | exact match, any reference |
| `flan` | text after the last "The answer is: " | exact match, any reference |
| `re_search` | the first `<finish>...</finish>` | exact match, any reference |
| `re_search_f1` | the last `<finish>...</finish>` | best F1; 0.1 when tagged but F1 is 0 |

"Exact match" compares SQuAD-normalized text: lower case, ASCII punctuation and articles removed,
whitespace collapsed.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter

from olmorl.rewards.engine._registry import InvalidInput, Score, Task, Verifier, register

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_ANSWER_TAGS = re.compile(r"</?answer>")
_FINISH_TAG = re.compile(r"<finish>(.*?)</finish>", re.DOTALL | re.IGNORECASE)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def strip_thinking(text: str) -> str:
    """The text after the last `</think>` (the whole text when there is none)."""
    head, sep, tail = text.rpartition("</think>")
    return tail if sep else text


def answer_text(response: str) -> str:
    """open-instruct's `remove_thinking_section`: `<|assistant|>` dropped, the text after the last
    `</think>`, `<answer>`/`</answer>` tags removed, stripped."""
    return _ANSWER_TAGS.sub("", strip_thinking(response.replace("<|assistant|>", ""))).strip()


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
    references = [ground_truth] if isinstance(ground_truth, str) else list(ground_truth)
    if not references:
        raise InvalidInput("ground_truth: no reference answer")
    return references


def _json_references(ground_truth: str | list[str]) -> list[str]:
    """Search-R1 labels: a JSON list or value in a string, or the string itself."""
    if isinstance(ground_truth, str):
        try:
            parsed = json.loads(ground_truth)
        except json.JSONDecodeError:
            return [ground_truth.strip()]
        return [str(x) for x in parsed] if isinstance(parsed, list) else [str(parsed)]
    return _references(ground_truth)


def _exact(answer: str, references: list[str]) -> Score:
    normalized = normalize_squad(answer)
    matched = any(normalized == normalize_squad(ref) for ref in references)
    return Score(float(matched), {"extracted": answer, "reason": None if matched else "mismatch"})


class _TextVerifier(Verifier):
    ground_truth_type = str | list[str]


@register
class StringMatchVerifier(_TextVerifier):
    name = "string_match"
    aliases = ("string_matcher",)
    description = "Normalized exact match of the <answer>...</answer> content against any reference."

    def score(self, task: Task) -> Score:
        found = _ANSWER_TAG.findall(strip_thinking(task.response))
        if not found:
            return Score(0.0, {"reason": "no_answer"})
        return _exact(found[-1].strip(), _references(task.ground_truth))


@register
class StringF1Verifier(_TextVerifier):
    name = "string_f1"
    description = "Token F1 (SQuAD normalization) of the answer after </think> (<answer> tags removed), best over the references."

    def score(self, task: Task) -> Score:
        answer = answer_text(task.response)
        best = max(token_f1(answer, ref) for ref in _references(task.ground_truth))
        return Score(best, {"f1": best})


@register
class PuzzleVerifier(_TextVerifier):
    name = "puzzle"
    description = "Logic puzzles: normalized exact match of the whole answer after </think> (<answer> tags removed)."

    def score(self, task: Task) -> Score:
        return _exact(answer_text(task.response), _references(task.ground_truth))


@register
class FlanVerifier(_TextVerifier):
    name = "flan"
    description = 'Normalized exact match of the text after the last "The answer is: ".'

    def score(self, task: Task) -> Score:
        return _exact(task.response.split("The answer is: ")[-1].strip(), _references(task.ground_truth))


@register
class ReSearchVerifier(_TextVerifier):
    name = "re_search"
    description = "Search-R1: normalized exact match of the first <finish>...</finish> against any reference."

    def score(self, task: Task) -> Score:
        match = _FINISH_TAG.search(task.response)
        answer = match.group(1).strip() if match else ""
        if not answer:
            return Score(0.0, {"reason": "no_answer"})
        return _exact(answer, _json_references(task.ground_truth))


@register
class ReSearchF1Verifier(_TextVerifier):
    name = "re_search_f1"
    description = "ReSearch: token F1 of the <finish>...</finish> answer, 0.1 when the format is right but F1 is 0."

    def score(self, task: Task) -> Score:
        response = task.response
        if "<finish>" not in response and "</finish>" not in response:
            return Score(0.0, {"reason": "no_answer"})
        answer = response.split("<finish>")[-1].split("</finish>")[0]
        if not answer:
            return Score(0.0, {"reason": "no_answer"})
        best = max(token_f1(answer, ref) for ref in _json_references(task.ground_truth))
        return Score(best if best > 0 else 0.1, {"f1": best})
