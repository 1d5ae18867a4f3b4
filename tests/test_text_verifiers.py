"""The open-instruct text verifiers. Cases: open-instruct's own tests for `puzzle` and `string_f1`
(open_instruct/test_ground_truth_utils.py), the rest derived by reading `ground_truth_utils.py`."""

from __future__ import annotations

import pytest

from olmorl.rewards import InvalidInput
from olmorl.rewards.engine._registry import canonical_name, load_verifiers
from olmorl.rewards._settings import Settings


def _score(name: str, response: str, ground_truth) -> float:
    verifier = load_verifiers()[canonical_name(name)](Settings())
    return verifier.score(verifier.make_task(response, ground_truth, {}, None)).reward


PUZZLE = [
    ("The answer is 42", "answer is 42", 1.0),
    ("<think>Let me solve this</think>Paris", "paris", 1.0),
    ("<answer>New York City!</answer>", "new york city", 1.0),
    ("Wrong answer", "correct answer", 0.0),
    ("<think>This is about geography</think><answer>The capital of France is Paris.</answer>", "capital of france is paris", 1.0),
    ("Hello World", "hello world", 1.0),
    ("<think>Analysis...</think>Wrong Answer", "42", 0.0),
    ("A simple test.", "simple test", 1.0),
    ("hello\tworld\n", "hello world", 1.0),
    ("42", "43", 0.0),
    ("<think>Animal question</think>The elephant", "elephant", 1.0),
    ("<|assistant|><answer>Red, Blue</answer>", ["blue red", "red blue"], 1.0),  # any of several references
]

F1 = [
    ("hello world", "hello world", 1.0),
    ("hello world", "hello", 2 / 3),
    ("hello world", "goodbye", 0.0),
    ("<think>Analysis</think>hello world", "hello", 2 / 3),
    ("<answer>hello world</answer>", "hello world", 1.0),  # the tags are not answer tokens
    ("<think>Thinking...</think><answer>hello world</answer>", "hello world", 1.0),
    ("hello world", ["goodbye", "hello world"], 1.0),
    ("hello world", ["hello", "world"], 2 / 3),
    ("hello world", ["foo", "bar", "baz"], 0.0),
]

OTHERS = [
    ("flan", "Let me think. The answer is: Yes.", "yes", 1.0),
    ("flan", "The answer is: no. The answer is: maybe", "maybe", 1.0),  # the last one
    ("flan", "Yes", "yes", 1.0),  # no marker: the whole text
    ("re_search", "<search>q</search><finish> The Eiffel Tower </finish>", "eiffel tower", 1.0),
    ("re_search", "<FINISH>Paris</FINISH>", '["Lyon", "Paris"]', 1.0),  # a JSON list label
    ("re_search", "<finish>  </finish>", "paris", 0.0),
    ("re_search", "Paris", "paris", 0.0),
    ("re_search_f1", "<finish>new york city</finish>", "new york", 0.8),
    ("re_search_f1", "<finish>Lyon</finish>", "paris", 0.1),  # right format, wrong answer
    ("re_search_f1", "Paris", "paris", 0.0),
    ("re_search_f1", "<finish>Paris</finish>", '["paris", "france"]', 1.0),
]


@pytest.mark.parametrize(("response", "ground_truth", "expected"), PUZZLE)
def test_puzzle(response, ground_truth, expected):
    assert _score("puzzle", response, ground_truth) == expected


@pytest.mark.parametrize(("response", "ground_truth", "expected"), F1)
def test_string_f1(response, ground_truth, expected):
    assert _score("string_f1", response, ground_truth) == pytest.approx(expected)


@pytest.mark.parametrize(("name", "response", "ground_truth", "expected"), OTHERS)
def test_other_text_verifiers(name, response, ground_truth, expected):
    assert _score(name, response, ground_truth) == pytest.approx(expected)


@pytest.mark.parametrize("name", ["puzzle", "string_f1", "string_match", "flan", "re_search"])
def test_no_reference_is_invalid_not_zero(name):
    with pytest.raises(InvalidInput):
        _score(name, "<answer>x</answer><finish>x</finish>", [])
