"""IFBench's 58 held-out (OOD) instructions, as allenai/IFBench (`ifbench/instructions.py` at db69a6f)
implements them: sentences are NLTK punkt's (`nltk.sent_tokenize`), words NLTK's `word_tokenize`."""

from __future__ import annotations

import re
import string
from collections import Counter

from pydantic import Field

from olmorl.rewards.instructions._constraints import Count, Kwargs, NoKwargs, Source, constraint
from olmorl.rewards.instructions._text import (
    STOPWORDS_EN,
    STRIP_CHARS,
    count_words,
    drop_punctuation,
    split_sentences_punkt,
    words,
)

SRC: Source = "ifbench"
P = string.punctuation


class WordRange(Kwargs):
    min_words: Count
    max_words: Count


@constraint("count:word_count_range", SRC, WordRange)
def word_count_range(text: str, kw: WordRange, fixed: bool) -> bool:
    return kw.min_words <= count_words(text) <= kw.max_words


class N(Kwargs):
    N: Count


@constraint("count:unique_word_count", SRC, N)
def unique_word_count(text: str, kw: N, fixed: bool) -> bool:
    return len({w.strip(STRIP_CHARS) for w in text.lower().split()}) >= kw.N


class Percentage(Kwargs):
    percentage: float = Field(ge=0)


@constraint("ratio:stop_words", SRC, Percentage)
def stop_words(text: str, kw: Percentage, fixed: bool) -> bool:
    tokens = words(text)
    if not tokens:
        return False  # the reference divides by zero
    return sum(t.lower() in STOPWORDS_EN for t in tokens) / len(tokens) * 100 <= kw.percentage


def _endings(text: str) -> Counter[str]:
    return Counter(s[-1] for s in split_sentences_punkt(text) if s and s[-1] in ".?!")


@constraint("ratio:sentence_type", SRC)
def sentence_type(text: str, kw: NoKwargs, fixed: bool) -> bool:
    ends = _endings(text)
    return ends["."] == 2 * ends["?"] and (not fixed or ends["?"] > 0)


@constraint("ratio:sentence_balance", SRC)
def sentence_balance(text: str, kw: NoKwargs, fixed: bool) -> bool:
    ends = _endings(text)
    return ends["."] == ends["?"] == ends["!"] and (not fixed or ends["."] > 0)


class SmallN(Kwargs):
    small_n: Count


_CONJUNCTIONS = {"and", "but", "for", "nor", "or", "so", "yet"}


@constraint("count:conjunctions", SRC, SmallN)
def conjunctions(text: str, kw: SmallN, fixed: bool) -> bool:
    # The reference keeps the raw tokens in its set ("And" and "and," count twice).
    found = {w for w in text.split() if w.strip(STRIP_CHARS).lower() in _CONJUNCTIONS}
    if fixed:
        found = {w.strip(STRIP_CHARS).lower() for w in found}
    return len(found) >= kw.small_n


_NAMES = (
    "Emma Liam Sophia Jackson Olivia Noah Ava Lucas Isabella Mason Mia Ethan Charlotte Alexander Amelia "
    "Benjamin Harper Leo Zoe Daniel Chloe Samuel Lily Matthew Grace Owen Abigail Gabriel Ella Jacob Scarlett "
    "Nathan Victoria Elijah Layla Nicholas Audrey David Hannah Christopher Penelope Thomas Nora Andrew Aria "
    "Joseph Claire Ryan Stella Jonathan"
).split()


_NAME_PATTERNS = [re.compile(r"\b" + name + r"\b") for name in _NAMES]  # case-sensitive, whole names


@constraint("count:person_names", SRC, N)
def person_names(text: str, kw: N, fixed: bool) -> bool:
    return sum(1 for rx in _NAME_PATTERNS if rx.search(text)) >= kw.N


class Overlap(Kwargs):
    reference_text: str = Field(min_length=3)
    percentage: float = Field(ge=0)


def _trigrams(text: str) -> set[str]:
    return {text[i:i + 3] for i in range(len(text) - 2)}


@constraint("ratio:overlap", SRC, Overlap)
def overlap(text: str, kw: Overlap, fixed: bool) -> bool:
    grams = _trigrams(text)
    if not grams:
        return False
    share = len(grams & _trigrams(kw.reference_text)) / len(grams) * 100
    return kw.percentage - 2 <= share <= kw.percentage + 2


@constraint("count:numbers", SRC, N)
def numbers(text: str, kw: N, fixed: bool) -> bool:
    return len(re.findall(r"\d+", drop_punctuation(text))) == kw.N


@constraint("words:alphabet", SRC)
def alphabet(text: str, kw: NoKwargs, fixed: bool) -> bool:
    tokens = drop_punctuation(text).strip(STRIP_CHARS).split()
    if not tokens:
        return False
    letters = string.ascii_lowercase
    letter = tokens[0][0].lower()
    if letter not in letters:
        return False
    for token in tokens[1:]:
        token = token.strip(STRIP_CHARS).lower()
        if not token:
            continue
        letter = letters[(letters.index(letter) + 1) % 26]
        if token[0] != letter:
            return False
    return True


@constraint("words:vowel", SRC)
def vowel(text: str, kw: NoKwargs, fixed: bool) -> bool:
    lines = text.strip().split("\n")
    return len(lines) == 1 and len(set(lines[0].lower()) & set("aeiou")) <= 3


_CONSONANTS = set("bcdfghjklmnpqrstvwxyz")


@constraint("words:consonants", SRC)
def consonants(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return all(
        any(w[i] in _CONSONANTS and w[i + 1] in _CONSONANTS for i in range(len(w) - 1))
        for w in text.lower().strip().split()
    )


@constraint("sentence:alliteration_increment", SRC)
def alliteration_increment(text: str, kw: NoKwargs, fixed: bool) -> bool:
    previous = -1
    for sentence in split_sentences_punkt(text):
        tokens = [c for c in (w.lstrip(STRIP_CHARS) for w in sentence.lower().split()) if c]
        run, in_run = 0, False
        for a, b in zip(tokens, tokens[1:]):
            if a[0] == b[0]:
                run += 1 if in_run else 2
                in_run = True
            else:
                in_run = False
        if run <= previous:
            return False
        previous = run
    return True


@constraint("words:palindrome", SRC)
def palindrome(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return sum(1 for w in drop_punctuation(text).lower().split() if len(w) >= 5 and w == w[::-1]) >= 10


@constraint("count:punctuation", SRC)
def punctuation_cover(text: str, kw: NoKwargs, fixed: bool) -> bool:
    if not ("!?" in text or "?!" in text or "\u203d" in text):
        return False
    rest = text.replace("?!", "", 1)
    if len(rest) == len(text):
        rest = text.replace("!?", "", 1)
    return set(".,!?;:") <= set(rest)


_PAIRS = {")": "(", "]": "[", "}": "{"}


@constraint("format:parentheses", SRC)
def parentheses(text: str, kw: NoKwargs, fixed: bool) -> bool:
    stack: list[str] = []
    deepest = 0
    for ch in text:
        if ch in "([{":
            stack.append(ch)
            deepest = max(deepest, len(stack))
        elif ch in _PAIRS:
            if stack and stack[-1] == _PAIRS[ch]:
                stack.pop()
                if deepest >= 5 and len(stack) < deepest:
                    return True
            else:
                stack, deepest = [], 0
    return False


@constraint("format:quotes", SRC)
def quotes(text: str, kw: NoKwargs, fixed: bool) -> bool:
    stack: list[str] = []
    reached = depth = 0
    for ch in text:
        if stack and ch == stack[-1]:
            stack.pop()
            depth -= 1
            if reached - depth >= 3:
                return True
        elif ch in "\"'":
            stack.append(ch)
            depth += 1
            reached = max(reached, depth)
    return False


_PRIMES = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97}


@constraint("words:prime_lengths", SRC)
def prime_lengths(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return all(len(w) in _PRIMES for w in drop_punctuation(text).split())


class Options(Kwargs):
    options: str = Field(min_length=1)


@constraint("format:options", SRC, Options)
def options(text: str, kw: Options, fixed: bool) -> bool:
    spec = kw.options
    strict = re.match(r"\W*[aA]\W*[bB]\W*[cC]\W*", spec) is not None
    sep = "/" if "/" in spec else ("or" if "or" in spec else ",")
    choices = [o.strip() for o in spec.split(sep)]
    if strict:
        return text in choices
    value = text.strip(STRIP_CHARS).lower()
    return any(o.strip(STRIP_CHARS).lower() == value for o in choices)


@constraint("format:newline", SRC)
def newline(text: str, kw: NoKwargs, fixed: bool) -> bool:
    value = drop_punctuation(text)
    lines = [line for line in value.strip().split("\n") if line != ""]
    return len(lines) == len(value.strip().split())


def _is_emoji(ch: str) -> bool:
    import emoji

    return emoji.is_emoji(ch)


@constraint("format:emoji", SRC)
def emoji_sentences(text: str, kw: NoKwargs, fixed: bool) -> bool:
    sentences = split_sentences_punkt(text)
    for i, sentence in enumerate(sentences):
        stripped = drop_punctuation(sentence).strip()
        if not stripped:
            return False
        if _is_emoji(stripped[-1]) or _is_emoji(stripped[-2] if len(stripped) > 1 else stripped[-1]):
            continue
        if i == len(sentences) - 1:
            return False
        following = drop_punctuation(sentences[i + 1]).strip()
        if not following or not _is_emoji(following[0]):
            return False
    return True


@constraint("ratio:sentence_words", SRC)
def sentence_words(text: str, kw: NoKwargs, fixed: bool) -> bool:
    sentences = split_sentences_punkt(text)
    return len(sentences) == 3 and len({len(s.strip()) for s in sentences}) == 1


_JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


class Position(Kwargs):
    N: int = Field(ge=1)


@constraint("count:words_japanese", SRC, Position)
def words_japanese(text: str, kw: Position, fixed: bool) -> bool:
    for i, word in enumerate(text.split()):
        word = word.strip(STRIP_CHARS)
        if (i + 1) % kw.N == 0 and word and not word.isdigit() and not _JAPANESE.search(word):
            return False
    return True

