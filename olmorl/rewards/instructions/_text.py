"""Text utilities shared by the instruction checkers: words, sentences, tokens, language.

Everything here carries its own data, so nothing is downloaded at run time:
- `split_sentences_regex` is Google's rule-based splitter (what IFEval-G and IFBench-Train call
  `split_into_sentences`).
- `split_sentences_punkt` is NLTK's punkt with the English model shipped in this package (IFEval's
  `count_sentences`, IFBench's `split_into_sentences`).
- `word_tokenize` is `nltk.word_tokenize` on those sentences.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache
from pathlib import Path
from typing import Any

PUNCTUATION = string.punctuation
STRIP_CHARS = PUNCTUATION + " "
_DROP_PUNCT = str.maketrans("", "", PUNCTUATION)

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """`\\w+` tokens (NLTK's RegexpTokenizer(r"\\w+"))."""
    return _WORD.findall(text)


def count_words(text: str) -> int:
    return len(_WORD.findall(text))


def drop_punctuation(text: str) -> str:
    return text.translate(_DROP_PUNCT)


# --- Google's regex sentence splitter --------------------------------------------------------
_ALPHA = "([A-Za-z])"
_PREFIXES = re.compile("(Mr|St|Mrs|Ms|Dr)[.]")
_WEBSITES = re.compile("[.](com|net|org|io|gov|edu|me)")
_DIGIT_DOT = re.compile("([0-9])[.]([0-9])")
_DOTS = re.compile(r"\.{2,}")
_STARTERS = r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s|However\s|That\s|This\s|Wherever)"
_SUFFIXES = "(Inc|Ltd|Jr|Sr|Co)"
_SINGLE_INITIAL = re.compile(r"\s" + _ALPHA + "[.] ")
_ACRONYM_STARTER = re.compile("([A-Z][.][A-Z][.](?:[A-Z][.])?) " + _STARTERS)
_THREE_INITIALS = re.compile(_ALPHA + "[.]" + _ALPHA + "[.]" + _ALPHA + "[.]")
_TWO_INITIALS = re.compile(_ALPHA + "[.]" + _ALPHA + "[.]")
_SUFFIX_STARTER = re.compile(" " + _SUFFIXES + "[.] " + _STARTERS)
_SUFFIX = re.compile(" " + _SUFFIXES + "[.]")
_SPACE_INITIAL = re.compile(" " + _ALPHA + "[.]")
_PRD, _STOP = "\x00", "\x01"  # markers that cannot occur in the regex-protected spans


def split_sentences_regex(text: str) -> list[str]:
    text = (" " + text + "  ").replace("\n", " ")
    text = _PREFIXES.sub("\\1" + _PRD, text)
    text = _WEBSITES.sub(_PRD + "\\1", text)
    text = _DIGIT_DOT.sub("\\1" + _PRD + "\\2", text)
    text = _DOTS.sub(lambda m: _PRD * len(m.group(0)) + _STOP, text)
    if "Ph.D" in text:
        text = text.replace("Ph.D.", f"Ph{_PRD}D{_PRD}")
    text = _SINGLE_INITIAL.sub(" \\1" + _PRD + " ", text)
    text = _ACRONYM_STARTER.sub("\\1" + _STOP + " \\2", text)
    text = _THREE_INITIALS.sub(f"\\1{_PRD}\\2{_PRD}\\3{_PRD}", text)
    text = _TWO_INITIALS.sub(f"\\1{_PRD}\\2{_PRD}", text)
    text = _SUFFIX_STARTER.sub(" \\1" + _STOP + " \\2", text)
    text = _SUFFIX.sub(" \\1" + _PRD, text)
    text = _SPACE_INITIAL.sub(" \\1" + _PRD, text)
    text = text.replace(".\u201d", "\u201d.").replace('."', '".').replace('!"', '"!').replace('?"', '"?')
    for mark in ".?!":
        text = text.replace(mark, mark + _STOP)
    sentences = [s.strip() for s in text.replace(_PRD, ".").split(_STOP)]
    if sentences and not sentences[-1]:
        sentences.pop()
    return sentences


# --- NLTK punkt + Treebank ----------------------------------------------------------------------
# The references call `nltk.sent_tokenize` / `nltk.word_tokenize`, which read NLTK's English punkt
# model from nltk_data (a download). The model's four files ship inside this package
# (nltk_data/, Apache-2.0) and are loaded from there, so nothing is downloaded at run time.
PUNKT_ENGLISH_DIR = Path(__file__).parent / "nltk_data" / "tokenizers" / "punkt_tab" / "english"


def _lines(name: str) -> list[str]:
    return [line for line in (PUNKT_ENGLISH_DIR / name).read_text(encoding="utf-8").split("\n") if line]


@lru_cache(maxsize=1)
def _punkt() -> Any:
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(_lines("abbrev_types.txt"))
    params.sent_starters = set(_lines("sent_starters.txt"))
    params.collocations = {tuple(line.split("\t")) for line in _lines("collocations.tab")}
    for line in _lines("ortho_context.tab"):
        word, flags = line.split("\t")
        params.ortho_context[word] = int(flags)
    return PunktSentenceTokenizer(params)  # a parameters object is taken as the trained model


@lru_cache(maxsize=1)
def _treebank() -> Any:
    from nltk.tokenize.destructive import NLTKWordTokenizer

    return NLTKWordTokenizer()


@lru_cache(maxsize=4096)
def _sentences_cached(text: str) -> tuple[str, ...]:
    return tuple(_punkt().tokenize(text))


def split_sentences_punkt(text: str) -> list[str]:
    """`nltk.sent_tokenize(text)`: NLTK's English punkt model."""
    return list(_sentences_cached(text))


@lru_cache(maxsize=4096)
def _word_tokenize_cached(text: str) -> tuple[str, ...]:
    tokenizer = _treebank()
    return tuple(tok for sent in _sentences_cached(text) for tok in tokenizer.tokenize(sent))


def word_tokenize(text: str) -> list[str]:
    """`nltk.word_tokenize(text)`: punkt sentences, then NLTK's improved Treebank tokenizer."""
    return list(_word_tokenize_cached(text))


def warm_up_tokenizers() -> None:
    """Import NLTK and load the punkt model now rather than on the first item."""
    word_tokenize("Warm up. The tokenizers.")


# --- stop words (NLTK English list) ---------------------------------------------------------
STOPWORDS_EN = frozenset(
    "a about above after again against ain all am an and any are aren aren't as at be because been before "
    "being below between both but by can couldn couldn't d did didn didn't do does doesn doesn't doing don "
    "don't down during each few for from further had hadn hadn't has hasn hasn't have haven haven't having "
    "he he'd he'll her here hers herself he's him himself his how i i'd if i'll i'm in into is isn isn't it "
    "it'd it'll it's its itself i've just ll m ma me mightn mightn't more most mustn mustn't my myself needn "
    "needn't no nor not now o of off on once only or other our ours ourselves out over own re s same shan "
    "shan't she she'd she'll she's should shouldn shouldn't should've so some such t than that that'll the "
    "their theirs them themselves then there these they they'd they'll they're they've this those through "
    "to too under until up ve very was wasn wasn't we we'd we'll we're were weren weren't we've what when "
    "where which while who whom why will with won won't wouldn wouldn't y you you'd you'll your you're "
    "yours yourself yourselves you've".split()
)


# --- language detection ---------------------------------------------------------------------
class LanguageUndetectable(Exception):
    """langdetect found no features (no letters); the references count this as a pass."""


def detect_language(text: str) -> str:
    """langdetect's top language, seeded so every process and run agrees."""
    from olmorl.rewards.instructions._langdetect import LangDetectException, detect

    try:
        return detect(text)
    except LangDetectException as exc:
        raise LanguageUndetectable(str(exc)) from None


def detect_languages(text: str) -> list[str]:
    """Candidate languages langdetect considers (probability > 0.1), seeded."""
    from olmorl.rewards.instructions._langdetect import LangDetectException, detect_langs

    try:
        return [c.lang for c in detect_langs(text) if c.prob > 0.1]
    except LangDetectException as exc:
        raise LanguageUndetectable(str(exc)) from None


def letter_count(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


def warm_up_language_detection() -> None:
    """Load langdetect's language profiles now rather than on the first item."""
    from langdetect import DetectorFactory
    from langdetect.detector_factory import init_factory

    DetectorFactory.seed = 0
    init_factory()
