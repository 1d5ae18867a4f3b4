"""The vectorized detector answers exactly what seeded langdetect answers."""

from __future__ import annotations

import random

import pytest
from langdetect import DetectorFactory
from langdetect import detect as reference_detect
from langdetect import detect_langs as reference_detect_langs
from langdetect.lang_detect_exception import LangDetectException

from _ifeval_corpus import response
from olmorl.rewards.instructions._langdetect import detect, detect_langs

SAMPLES = [
    "Bonjour tout le monde, comment allez-vous aujourd'hui?", "Hola amigo, ¿cómo estás?", "Guten Tag! Wie geht es dir?",
    "これは日本語の文章です。", "OK", "HELLO WORLD", "12345", "😀😀", "Привет, как дела?", "ciao",
    "Dit is een Nederlandse zin.", "a b c", "",
]


def _outcome(fn, text):
    DetectorFactory.seed = 0
    try:
        return str(fn(text))
    except LangDetectException as exc:
        return f"error: {exc}"


def texts() -> list[str]:
    rng = random.Random(7)
    words = ["the", "le", "der", "el", "il", "de", "och", "ja", "ocean", "wasser", "agua", "mer"]
    return SAMPLES + [response(rng) for _ in range(60)] + [
        " ".join(rng.choice(words) for _ in range(rng.randint(1, 10))) for _ in range(60)]


@pytest.mark.parametrize("ours, reference", [(detect, reference_detect), (detect_langs, reference_detect_langs)])
def test_same_answers_as_langdetect(ours, reference):
    corpus = texts()
    mismatches = [t for t in corpus if _outcome(ours, t) != _outcome(reference, t)]
    assert mismatches == []
