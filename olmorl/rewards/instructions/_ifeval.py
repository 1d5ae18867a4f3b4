"""IFEval's 25 instructions (Google's `instruction_following_eval`, as ported in lm-eval 0.4.13 and
copied into open-instruct's IFEvalG and IFBench)."""

from __future__ import annotations

import collections
import json
import re
from pydantic import Field, field_validator, model_validator

from olmorl.rewards.instructions._constraints import (
    Count,
    Kwargs,
    Relation,
    Source,
    compare,
    constraint,
    keyword_pattern,
)
from olmorl.rewards.instructions._text import (
    LanguageUndetectable,
    count_words,
    detect_language,
    detect_languages,
    letter_count,
    split_sentences_punkt,
    word_tokenize,
)

SRC: Source = "ifeval"
_SHORT_TEXT_LETTERS = 20  # below this, langdetect's answer is unreliable (`fixed` semantics)


class Keywords(Kwargs):
    keywords: list[str] = Field(min_length=1)


@constraint("keywords:existence", SRC, Keywords)
def keywords_existence(text: str, kw: Keywords, fixed: bool) -> bool:
    return all(keyword_pattern(k, fixed, plural=True).search(text) for k in kw.keywords)


class KeywordFrequency(Kwargs):
    keyword: str = Field(min_length=1)
    frequency: Count
    relation: Relation

    @field_validator("keyword")
    @classmethod
    def _strip(cls, v: str) -> str:
        return v.strip()


@constraint("keywords:frequency", SRC, KeywordFrequency)
def keywords_frequency(text: str, kw: KeywordFrequency, fixed: bool) -> bool:
    return compare(len(keyword_pattern(kw.keyword, fixed, plural=True).findall(text)), kw.relation, kw.frequency)


class ForbiddenWords(Kwargs):
    forbidden_words: list[str]


@constraint("keywords:forbidden_words", SRC, ForbiddenWords)
def keywords_forbidden_words(text: str, kw: ForbiddenWords, fixed: bool) -> bool:
    for word in kw.forbidden_words:
        rx = keyword_pattern(word, True, plural=True) if fixed else re.compile(r"\b" + word + r"\b", re.IGNORECASE)
        if rx.search(text):
            return False
    return True


class LetterFrequency(Kwargs):
    # Any one character: IFEval prompts ask for "#" or "!" too. For a non-letter the references draw a
    # random ASCII letter (a reward cannot be random); olmorl counts the character asked for.
    letter: str = Field(pattern=r"^\S$")
    let_frequency: Count
    let_relation: Relation


@constraint("keywords:letter_frequency", SRC, LetterFrequency)
def keywords_letter_frequency(text: str, kw: LetterFrequency, fixed: bool) -> bool:
    return compare(collections.Counter(text.lower())[kw.letter.lower()], kw.let_relation, kw.let_frequency)


class Language(Kwargs):
    language: str = Field(min_length=2)


def _language_is(text: str, language: str, fixed: bool) -> bool:
    if fixed:
        if letter_count(text) == 0:
            return False  # digits/emoji only: no language at all
        try:
            if letter_count(text) < _SHORT_TEXT_LETTERS:
                return language in detect_languages(text)
            return detect_language(text) == language
        except LanguageUndetectable:
            return False
    try:
        return detect_language(text) == language
    except LanguageUndetectable:
        return True  # the reference counts a detector error as followed


@constraint("language:response_language", SRC, Language)
def language_response_language(text: str, kw: Language, fixed: bool) -> bool:
    return _language_is(text, kw.language, fixed)


class NumSentences(Kwargs):
    num_sentences: Count
    relation: Relation


@constraint("length_constraints:number_sentences", SRC, NumSentences)
def length_number_sentences(text: str, kw: NumSentences, fixed: bool) -> bool:
    return compare(len(split_sentences_punkt(text)), kw.relation, kw.num_sentences)


class NumParagraphs(Kwargs):
    num_paragraphs: Count


def star_paragraph_count(text: str, separator: str = r"\s?\*\*\*\s?") -> int | None:
    """Paragraphs split on `separator` (default `***`); None when an inner paragraph is empty (the
    reference fails). Empty first and last parts do not count."""
    parts = re.split(separator, text)
    count = len(parts)
    for index, part in enumerate(parts):
        if not part.strip():
            if index in (0, len(parts) - 1):
                count -= 1
            else:
                return None
    return count


@constraint("length_constraints:number_paragraphs", SRC, NumParagraphs)
def length_number_paragraphs(text: str, kw: NumParagraphs, fixed: bool) -> bool:
    return star_paragraph_count(text) == kw.num_paragraphs


class NumWords(Kwargs):
    num_words: Count
    relation: Relation


@constraint("length_constraints:number_words", SRC, NumWords)
def length_number_words(text: str, kw: NumWords, fixed: bool) -> bool:
    return compare(count_words(text), kw.relation, kw.num_words)


class NthParagraph(Kwargs):
    num_paragraphs: Count
    nth_paragraph: int = Field(ge=1)
    first_word: str

    @model_validator(mode="after")
    def _nth_within(self) -> NthParagraph:
        # The reference draws a random paragraph index when nth_paragraph > num_paragraphs.
        if self.nth_paragraph > self.num_paragraphs:
            raise ValueError("nth_paragraph must not exceed num_paragraphs")
        return self


@constraint("length_constraints:nth_paragraph_first_word", SRC, NthParagraph)
def length_nth_paragraph_first_word(text: str, kw: NthParagraph, fixed: bool) -> bool:
    paragraphs = re.split(r"\n\n", text)
    count = sum(1 for p in paragraphs if p.strip())
    if kw.nth_paragraph > count:
        return False
    paragraph = paragraphs[kw.nth_paragraph - 1].strip()
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    first = ""
    for ch in word:
        if ch in ".,?!'\"":
            break
        first += ch.lower()
    return count == kw.num_paragraphs and first == kw.first_word.lower()


class Placeholders(Kwargs):
    num_placeholders: Count


@constraint("detectable_content:number_placeholders", SRC, Placeholders)
def content_number_placeholders(text: str, kw: Placeholders, fixed: bool) -> bool:
    return len(re.findall(r"\[.*?\]", text)) >= kw.num_placeholders


class Postscript(Kwargs):
    postscript_marker: str = Field(min_length=1)


@constraint("detectable_content:postscript", SRC, Postscript)
def content_postscript(text: str, kw: Postscript, fixed: bool) -> bool:
    marker = kw.postscript_marker.strip()
    if marker == "P.P.S":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif marker == "P.S.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + (re.escape(marker.lower()) if fixed else marker.lower()) + r".*$"
    return bool(re.findall(pattern, text.lower(), flags=re.MULTILINE))


class Bullets(Kwargs):
    num_bullets: Count


@constraint("detectable_format:number_bullet_lists", SRC, Bullets)
def format_number_bullet_lists(text: str, kw: Bullets, fixed: bool) -> bool:
    stars = re.findall(r"^\s*\*[^\*].*$", text, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", text, flags=re.MULTILINE)
    return len(stars) + len(dashes) == kw.num_bullets


_CONSTRAINED = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


@constraint("detectable_format:constrained_response", SRC)
def format_constrained_response(text: str, kw: Kwargs, fixed: bool) -> bool:
    stripped = text.strip()
    return any(option in stripped for option in _CONSTRAINED)


class Highlights(Kwargs):
    num_highlights: Count


@constraint("detectable_format:number_highlighted_sections", SRC, Highlights)
def format_number_highlighted_sections(text: str, kw: Highlights, fixed: bool) -> bool:
    count = sum(1 for h in re.findall(r"\*[^\n\*]*\*", text) if h.strip("*").strip())
    count += sum(1 for h in re.findall(r"\*\*[^\n\*]*\*\*", text) if h[2:-2].strip())
    return count >= kw.num_highlights


class Sections(Kwargs):
    section_spliter: str = Field(min_length=1)
    num_sections: Count


@constraint("detectable_format:multiple_sections", SRC, Sections)
def format_multiple_sections(text: str, kw: Sections, fixed: bool) -> bool:
    splitter = kw.section_spliter.strip()
    pattern = r"\s?" + (re.escape(splitter) if fixed else splitter) + r"\s?\d+\s?"
    return len(re.split(pattern, text)) - 1 >= kw.num_sections


def _reject_constant(name: str) -> float:
    raise ValueError(name)


@constraint("detectable_format:json_format", SRC)
def format_json(text: str, kw: Kwargs, fixed: bool) -> bool:
    value = text.strip()
    for prefix in ("```json", "```Json", "```JSON", "```"):
        if value.startswith(prefix):
            value = value[len(prefix):]
            break
    value = value.removesuffix("```").strip()
    try:
        parsed = json.loads(value, parse_constant=_reject_constant) if fixed else json.loads(value)
    except ValueError:
        return False
    return isinstance(parsed, (dict, list)) if fixed else True


@constraint("detectable_format:title", SRC)
def format_title(text: str, kw: Kwargs, fixed: bool) -> bool:
    return any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", text))


@constraint("combination:two_responses", SRC)
def combination_two_responses(text: str, kw: Kwargs, fixed: bool) -> bool:
    parts = text.split("******")
    valid = []
    for index, part in enumerate(parts):
        if not part.strip():
            if index not in (0, len(parts) - 1):
                return False
        else:
            valid.append(part)
    return len(valid) == 2 and valid[0].strip() != valid[1].strip()


class PromptToRepeat(Kwargs):
    prompt_to_repeat: str = Field(min_length=1)


@constraint("combination:repeat_prompt", SRC, PromptToRepeat)
def combination_repeat_prompt(text: str, kw: PromptToRepeat, fixed: bool) -> bool:
    return text.strip().lower().startswith(kw.prompt_to_repeat.strip().lower())


class EndPhrase(Kwargs):
    end_phrase: str = Field(min_length=1)


@constraint("startend:end_checker", SRC, EndPhrase)
def startend_end_checker(text: str, kw: EndPhrase, fixed: bool) -> bool:
    return text.strip().strip('"').lower().endswith(kw.end_phrase.strip().lower())


class CapitalFrequency(Kwargs):
    capital_frequency: Count
    capital_relation: Relation


@constraint("change_case:capital_word_frequency", SRC, CapitalFrequency)
def change_case_capital_word_frequency(text: str, kw: CapitalFrequency, fixed: bool) -> bool:
    capitals = sum(1 for token in word_tokenize(text) if token.isupper())
    return compare(capitals, kw.capital_relation, kw.capital_frequency)


def _english(text: str, fixed: bool) -> bool:
    if fixed and 0 < letter_count(text) < _SHORT_TEXT_LETTERS:
        # Too short for langdetect ("OK" is not English to it): accept Latin-script letters.
        return all(ch.isascii() for ch in text if ch.isalpha())
    return _language_is(text, "en", fixed)


@constraint("change_case:english_capital", SRC)
def change_case_english_capital(text: str, kw: Kwargs, fixed: bool) -> bool:
    if not fixed:
        try:
            return text.isupper() and detect_language(text) == "en"
        except LanguageUndetectable:
            return True
    return text.isupper() and _english(text, fixed)


@constraint("change_case:english_lowercase", SRC)
def change_case_english_lowercase(text: str, kw: Kwargs, fixed: bool) -> bool:
    if not fixed:
        try:
            return text.islower() and detect_language(text) == "en"
        except LanguageUndetectable:
            return True
    return text.islower() and _english(text, fixed)


_COMMAS_FIXED = re.compile("[,\uff0c\u060c\u3001\ufe50\ufe51\uff64]")  # ASCII, fullwidth, Arabic, ideographic, small


@constraint("punctuation:no_comma", SRC)
def punctuation_no_comma(text: str, kw: Kwargs, fixed: bool) -> bool:
    return not (_COMMAS_FIXED.search(text) if fixed else "," in text)


@constraint("startend:quotation", SRC)
def startend_quotation(text: str, kw: Kwargs, fixed: bool) -> bool:
    value = text.strip()
    wrapped = len(value) > 1 and value[0] == '"' and value[-1] == '"'
    return wrapped and (not fixed or bool(value[1:-1].strip()))

