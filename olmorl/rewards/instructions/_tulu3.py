"""Tulu 3's `func_name` constraints (open-instruct's `ifeval_old`, `if_functions.IF_FUNCTIONS_MAP`).

Each function gets the answer and the row's non-null arguments; the reward is 0 or 1.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from olmorl.rewards.instructions._text import LanguageUndetectable, detect_language


def _quantified(actual: int, n: int, quantifier: str, around: int) -> bool:
    if quantifier == "at least":
        return actual >= n
    if quantifier == "at most":
        return actual <= n
    if quantifier == "around":
        return abs(actual - n) <= around
    return False


def verify_keywords(text: str, keyword_list: list[str]) -> bool:
    low = text.lower()
    return all(k.lower() in low for k in keyword_list)


def verify_keyword_frequency(text: str, word: str, N: int) -> bool:
    return sum(1 for w in re.findall(r"\b\w+\b", text.lower()) if w == word.lower()) == N


def validate_forbidden_words(text: str, forbidden_words: list[str]) -> bool:
    low = text.lower()
    return not any(w.lower() in low for w in forbidden_words)


def verify_letter_frequency(text: str, letter: str, N: int) -> bool:
    if len(letter) != 1:
        raise ValueError("letter must be a single character")
    return text.count(letter) == N


def validate_response_language(text: str, language: str) -> bool:
    try:
        return detect_language(text) == language
    except LanguageUndetectable:
        return False  # the Tulu 3 function lets the detector error propagate


def verify_paragraph_count(text: str, N: int) -> bool:
    cleaned = "\n".join(line.strip() for line in text.splitlines()).strip()
    parts = cleaned.split("* * *")
    return all(p.strip() for p in parts) and len(parts) == N


def validate_word_constraint(text: str, N: int, quantifier: str) -> bool:
    return _quantified(len(text.strip().split()), N, quantifier, max(round(N * 0.1), 1))


def verify_sentence_constraint(text: str, N: int, quantifier: str) -> bool:
    sentences = re.split(r"(?<!\w\.\w.)(?<![A-Z][a-z]\.)(?<=\.|\?|!)\s", text)
    return _quantified(len(sentences), N, quantifier, 1)


def validate_paragraphs(text: str, N: int, first_word: str, i: int) -> bool:
    parts = text.split("\n\n")
    return len(parts) == N and parts[i - 1].strip().startswith(first_word)


def verify_postscript(text: str, postscript_marker: str) -> bool:
    if postscript_marker not in text:
        return False
    return len(text[text.find(postscript_marker):].strip()) > len(postscript_marker)


def validate_placeholders(text: str, N: int) -> bool:
    return len(re.findall(r"\[(.*?)\]", text)) >= N


def verify_bullet_points(text: str, N: int) -> bool:
    return sum(1 for line in text.split("\n") if line.strip().startswith(("*", "-"))) == N


def validate_title(text: str) -> bool:
    return bool(re.findall(r"<<(.*?)>>", text))


def validate_choice(text: str, options: list[str]) -> bool:
    return any(option in text for option in options)


def validate_highlighted_sections(text: str, N: int) -> bool:
    return len(re.findall(r"\*(.*?)\*", text)) >= N


def validate_sections(text: str, N: int, section_splitter: str) -> bool:
    pattern = r"\s?" + re.escape(section_splitter) + r"\s?\d+\s?"
    return len(re.split(pattern, text, flags=re.IGNORECASE)) - 1 >= N


def validate_json_format(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def validate_repeat_prompt(text: str, original_prompt: str) -> bool:
    return text.startswith(original_prompt)


def validate_two_responses(text: str) -> bool:
    if text.count("******") != 1:
        return False
    first, second = (p.strip() for p in text.split("******"))
    return first != second


def validate_uppercase(text: str) -> bool:
    return text == text.upper()


def validate_lowercase(text: str) -> bool:
    return text == text.lower()


def validate_frequency_capital_words(text: str, N: int, quantifier: str) -> bool:
    return _quantified(len(re.findall(r"\b[A-Z]+\b", text)), N, quantifier, max(round(N * 0.1), 1))


def validate_end(text: str, end_phrase: str) -> bool:
    return text.endswith(end_phrase)


def validate_quotation(text: str) -> bool:
    return text.startswith('"') and text.endswith('"')


def validate_no_commas(text: str) -> bool:
    return "," not in text


TULU3_FUNCTIONS: dict[str, Callable[..., bool]] = {
    fn.__name__: fn
    for fn in (
        verify_keywords, verify_keyword_frequency, validate_forbidden_words, verify_letter_frequency,
        validate_response_language, verify_paragraph_count, validate_word_constraint,
        verify_sentence_constraint, validate_paragraphs, verify_postscript, validate_placeholders,
        verify_bullet_points, validate_title, validate_choice, validate_highlighted_sections,
        validate_sections, validate_json_format, validate_repeat_prompt, validate_two_responses,
        validate_uppercase, validate_lowercase, validate_frequency_capital_words, validate_end,
        validate_quotation, validate_no_commas,
    )
}


def call_tulu3(name: str, text: str, args: dict[str, Any]) -> bool:
    """Raises KeyError for an unknown function and TypeError for arguments it does not take."""
    return bool(TULU3_FUNCTIONS[name](text, **args))
