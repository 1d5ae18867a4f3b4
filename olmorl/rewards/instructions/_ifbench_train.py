"""The 29 IFBench-Train instructions that open-instruct's IFEvalG registry adds to IFEval's 25
(IF-RLVR training constraints; open-instruct at e6c3044)."""

from __future__ import annotations

import re

from pydantic import Field

from olmorl.rewards.instructions._constraints import (
    Count,
    Kwargs,
    NoKwargs,
    Relation,
    Source,
    WordOrList,
    compare,
    constraint,
    keyword_pattern,
)
from olmorl.rewards.instructions._ifeval import LetterFrequency, star_paragraph_count
from olmorl.rewards.instructions._text import split_sentences_regex, word_tokenize

SRC: Source = "ifbench_train"


class Phrase(Kwargs):
    phrase: str = Field(min_length=1)
    small_n: Count


@constraint("copy:repeat_phrase", SRC, Phrase)
def repeat_phrase(text: str, kw: Phrase, fixed: bool) -> bool:
    reference = kw.phrase.strip().split()
    first, last = re.escape(reference[0]) if fixed else reference[0], re.escape(reference[-1]) if fixed else reference[-1]
    found = re.findall(rf"{first} .*? {last}", text)
    if len(found) != kw.small_n:
        return False
    differences = 0
    for phrase in found:
        tokens = phrase.split()
        if len(tokens) != len(reference):
            return False
        differences = sum(a != b for a, b in zip(tokens, reference))
        if differences > 1:
            return False
    if fixed:  # every repetition must change exactly one word
        return all(sum(a != b for a, b in zip(p.split(), reference)) == 1 for p in found)
    return differences == 1  # the reference looks at the last repetition only


class PromptToRepeat(Kwargs):
    prompt_to_repeat: str = Field(min_length=1)


@constraint("copy:copy", SRC, PromptToRepeat)
def copy_copy(text: str, kw: PromptToRepeat, fixed: bool) -> bool:
    return text.strip().lower() == kw.prompt_to_repeat.strip().lower()


class Span(Kwargs):
    prompt_to_repeat: str = Field(min_length=1)
    n_start: Count
    n_end: Count


@constraint("new:copy_span_idx", SRC, Span)
def copy_span_idx(text: str, kw: Span, fixed: bool) -> bool:
    end = kw.n_end + 1 if fixed else kw.n_end  # the instruction says "(and including)"
    return text.strip().lower() == kw.prompt_to_repeat[kw.n_start:end].strip().lower()


@constraint("detectable_format:sentence_hyphens", SRC)
def sentence_hyphens(text: str, kw: NoKwargs, fixed: bool) -> bool:
    gold = split_sentences_regex(text.replace("-", " "))
    return all(part.strip() == part and part == g for part, g in zip(text.split("-"), gold))


@constraint("keywords:no_adjacent_consecutive", SRC)
def no_adjacent_consecutive(text: str, kw: NoKwargs, fixed: bool) -> bool:
    tokens = text.split()
    return all(ord(b[0].lower()) - ord(a[0].lower()) != 1 for a, b in zip(tokens, tokens[1:]))


@constraint("detectable_format:square_brackets", SRC)
def square_brackets(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return all(w.startswith("[") and w.endswith("]") for w in text.split())


class Keyword(Kwargs):
    keyword: str = Field(min_length=1)


@constraint("keywords:word_once", SRC, Keyword)
def word_once(text: str, kw: Keyword, fixed: bool) -> bool:
    return len(keyword_pattern(kw.keyword.strip(), fixed).findall(text)) == 1


class KeywordFrequency(Kwargs):
    keyword: str = Field(min_length=1)
    frequency: Count
    relation: Relation


@constraint("keywords:word_count_different_numbers", SRC, KeywordFrequency)
def word_count_different_numbers(text: str, kw: KeywordFrequency, fixed: bool) -> bool:
    return compare(len(keyword_pattern(kw.keyword.strip(), fixed).findall(text)), kw.relation, kw.frequency)


@constraint("keywords:exclude_word_harder", SRC, Keyword)
def exclude_word_harder(text: str, kw: Keyword, fixed: bool) -> bool:
    if fixed:  # word-bounded and case-insensitive, also at the start/end and before punctuation
        return keyword_pattern(kw.keyword.strip(), True).search(text) is None
    return " " + kw.keyword.strip() + " " not in text


@constraint("paragraphs:paragraphs", SRC)
def paragraphs(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return star_paragraph_count(text) == 2


@constraint("paragraphs:paragraphs2", SRC)
def paragraphs2(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return star_paragraph_count(text, separator=r"\n\n") == 2


class FirstWord(Kwargs):
    first_word: WordOrList


@constraint("first_word:first_word_sent", SRC, FirstWord)
def first_word_sent(text: str, kw: FirstWord, fixed: bool) -> bool:
    target = kw.first_word.strip().lower()
    for sentence in split_sentences_regex(text):
        if not sentence.strip():
            return False
        first = sentence.split()[0].strip().lower()
        if fixed:
            first = first.strip("\"'([{*")
            first = re.sub(r"[^\w]+$", "", first)
        if first != target:
            return False
    return True


@constraint("first_word:first_word_answer", SRC, FirstWord)
def first_word_answer(text: str, kw: FirstWord, fixed: bool) -> bool:
    if not text.strip():
        return False
    first = text.split()[0].strip().lower()
    if fixed:
        first = re.sub(r"[^\w]+$", "", first.strip("\"'([{*"))
    return first == kw.first_word.strip().lower()


class LastWord(Kwargs):
    last_word: str = Field(min_length=1)


@constraint("last_word:last_word_sent", SRC, LastWord)
def last_word_sent(text: str, kw: LastWord, fixed: bool) -> bool:
    for sentence in split_sentences_regex(text):
        if not sentence.strip():
            return False
        if re.sub(r"[^\w\s]", "", sentence.split()[-1].strip()).lower() != kw.last_word.strip().lower():
            return False
    return True


@constraint("last_word:last_word_answer", SRC, LastWord)
def last_word_answer(text: str, kw: LastWord, fixed: bool) -> bool:
    return re.sub(r"[^\w\s]", "", text.split()[-1].strip()).lower() == kw.last_word.strip().lower()


@constraint("detectable_format:bigram_wrapping", SRC)
def bigram_wrapping(text: str, kw: NoKwargs, fixed: bool) -> bool:
    tokens = text.split()
    return all(tokens[i].startswith("<<") and tokens[i + 1].endswith(">>") for i in range(0, len(tokens) - 1, 2))


@constraint("copy:copying_simple", SRC, PromptToRepeat)
def copying_simple(text: str, kw: PromptToRepeat, fixed: bool) -> bool:
    return text.strip().lower() == kw.prompt_to_repeat.strip().lower()


class CopyingMultiple(Kwargs):
    prompt_to_repeat: str = Field(min_length=1)
    N: int = Field(ge=1)


@constraint("copy:copying_multiple", SRC, CopyingMultiple)
def copying_multiple(text: str, kw: CopyingMultiple, fixed: bool) -> bool:
    copies = text.split("******")
    target = kw.prompt_to_repeat.strip().lower()
    return len(copies) == kw.N and all(c.strip().lower() == target for c in copies)


@constraint("punctuation:punctuation_dot", SRC)
def punctuation_dot(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return "." not in text


@constraint("punctuation:punctuation_exclamation", SRC)
def punctuation_exclamation(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return "!" not in text


class MaxCount(Kwargs):
    N: Count


@constraint("count:lowercase_counting", SRC, MaxCount)
def lowercase_counting(text: str, kw: MaxCount, fixed: bool) -> bool:
    return len(re.findall(r"\b[a-z]+\b", text)) <= kw.N


class LetterCounting(Kwargs):
    N: Count
    relation: Relation


@constraint("letters:letter_counting", SRC, LetterCounting)
def letter_counting(text: str, kw: LetterCounting, fixed: bool) -> bool:
    return compare(len(re.findall(r"[a-zA-Z]", text)), kw.relation, kw.N)


@constraint("letters:letter_counting2", SRC, LetterFrequency)
def letter_counting2(text: str, kw: LetterFrequency, fixed: bool) -> bool:
    return compare(text.lower().count(kw.letter.lower()), kw.let_relation, kw.let_frequency)


class Composition(Kwargs):
    n_sent: Count
    n_words: Count


@constraint("count:counting_composition", SRC, Composition)
def counting_composition(text: str, kw: Composition, fixed: bool) -> bool:
    splitter = r"\s?\*\s?\*\s?\*\s?" if fixed else r"\s?\*\*\*\s?"  # the instruction shows "* * *"
    parts = re.split(splitter, text)
    count = len(parts)
    for index, part in enumerate(parts):
        if not part.strip():
            if index in (0, len(parts) - 1):
                count -= 1
            else:
                return False
            if fixed:
                continue
        sentences = split_sentences_regex(part)
        if len(sentences) != kw.n_sent:
            return False
        for sentence in sentences:
            tokens = word_tokenize(sentence)
            if fixed:
                tokens = [t for t in tokens if any(ch.isalnum() for ch in t)]
            if len(tokens) != kw.n_words:
                return False
    return count == 3


@constraint("count:count_unique", SRC)
def count_unique(text: str, kw: NoKwargs, fixed: bool) -> bool:
    tokens = word_tokenize(text)
    if fixed:
        tokens = [t.lower() for t in tokens if any(ch.isalnum() for ch in t)]
    return len(tokens) == len(set(tokens))


class TwoKeywords(Kwargs):
    keyword1: str = Field(min_length=1)
    keyword2: str = Field(min_length=1)


@constraint("count:count_increment_word", SRC, TwoKeywords)
def count_increment_word(text: str, kw: TwoKeywords, fixed: bool) -> bool:
    once = len(keyword_pattern(kw.keyword1.strip(), fixed).findall(text))
    twice = len(keyword_pattern(kw.keyword2.strip(), fixed).findall(text))
    return once == 1 and twice == 2


@constraint("keywords:palindrome", SRC)
def palindrome_basic(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return any(w == w[::-1] for w in text.split())


class KeywordPosition(Kwargs):
    keyword: WordOrList
    n: int = Field(ge=1)
    m: int = Field(ge=1)


@constraint("keywords:keyword_specific_position", SRC, KeywordPosition)
def keyword_specific_position(text: str, kw: KeywordPosition, fixed: bool) -> bool:
    sentences = split_sentences_regex(text)
    if len(sentences) < kw.n:
        return False
    tokens = word_tokenize(sentences[kw.n - 1])
    return len(tokens) >= kw.m and tokens[kw.m - 1] == kw.keyword.strip()


@constraint("keywords:start_end", SRC)
def start_end(text: str, kw: NoKwargs, fixed: bool) -> bool:
    tokens = word_tokenize(text)
    return len(tokens) >= 2 and tokens[0].lower() == tokens[-1].lower()
