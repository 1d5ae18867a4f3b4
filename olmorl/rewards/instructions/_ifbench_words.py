"""IFBench's held-out instructions, second half: word/sentence positions, formats and repeats
(allenai/IFBench db69a6f behaviour; see `_ifbench.py`; the `custom:*` tasks are in `_ifbench_custom.py`)."""

from __future__ import annotations

import re
from collections import Counter

from pydantic import Field

from olmorl.rewards.instructions._constraints import Count, Kwargs, NoKwargs, Source, constraint
from olmorl.rewards.instructions._ifbench import N, SmallN
from olmorl.rewards.instructions._text import (
    PUNCTUATION,
    STRIP_CHARS,
    drop_punctuation,
    split_sentences_punkt,
    word_tokenize,
)

SRC: Source = "ifbench"

# `words:start_verb` needs NLTK's perceptron tagger, whose weights no package ships. Stand-in: the
# first token is a common base-form verb, or looks like a participle/past form.
_BASE_VERBS = frozenset(
    "be have do say go get make know think take see come want look use find give tell work call try ask "
    "need feel become leave put mean keep let begin seem help talk turn start show hear play run move like "
    "live believe hold bring happen write provide sit stand lose pay meet include continue set learn change "
    "lead understand watch follow stop create speak read allow add spend grow open walk win offer remember "
    "love consider appear buy wait serve die send expect build stay fall cut reach kill remain suggest raise "
    "pass sell require report decide pull explain describe list imagine discover explore consider write "
    "compare summarize identify outline define discuss analyze analyse evaluate calculate draft compose "
    "design develop plan prepare choose check note remember avoid ensure enjoy join jump mix pour place "
    "preheat heat combine stir bake boil whisk slice chop wash clean gather grab take fill share sing dance "
    "listen picture think travel visit welcome thank please "
    # imperative openers models use when told to start with a verb
    "embrace unlock transform elevate enhance dive craft unleash boost master navigate harness cultivate "
    "foster empower ignite envision visualize visualise prioritize prioritise schedule organize organise "
    "simplify streamline optimize optimise implement apply assess review examine investigate consult "
    "contact reach seek stop refrain beware recall reflect recognize recognise acknowledge accept believe "
    "trust celebrate cherish savor savour relax breathe focus invest save protect secure monitor track "
    "measure test verify confirm install download upload click select enter type submit press tap swipe "
    "scroll navigate log sign subscribe register book reserve order pick grab hold lift push pull drop "
    "throw catch kick swing climb jump dance sing paint draw sketch shape mold build construct assemble "
    "repair fix replace remove insert attach connect plug unplug charge turn rotate flip fold cut trim "
    "season marinate grill roast fry saute simmer serve garnish taste blend knead roll spread sprinkle "
    "drizzle whip beat fold melt freeze chill cool warm".split()
)


# Forms of be/do/have the tagger always calls VB* (modals are MD, not verbs); -ing/-ed words that are not.
_AUXILIARIES = frozenset("is are was were am been being do does did has have had let's".split())
_NOT_PARTICIPLES = frozenset(
    "during something nothing everything anything thing things king morning evening spring ceiling wedding "
    "indeed hundred united sacred wicked naked speed seed need feed bed red shed breed greed weed ".split()
)


def _looks_like_verb(token: str) -> bool:
    low = token.lower()
    if low in _BASE_VERBS or low in _AUXILIARIES:
        return True
    return low not in _NOT_PARTICIPLES and len(low) > 4 and low.isalpha() and low.endswith(("ing", "ed"))


@constraint("words:start_verb", SRC)
def start_verb(text: str, kw: NoKwargs, fixed: bool) -> bool:
    tokens = word_tokenize(text)
    return bool(tokens) and _looks_like_verb(tokens[0])


@constraint("words:repeats", SRC, SmallN)
def repeats(text: str, kw: SmallN, fixed: bool) -> bool:
    return all(c <= kw.small_n for c in Counter(drop_punctuation(text.lower()).split()).values())


class SentenceKeyword(Kwargs):
    word: str = Field(min_length=1)
    N: int = Field(ge=1)


@constraint("sentence:keyword", SRC, SentenceKeyword)
def sentence_keyword(text: str, kw: SentenceKeyword, fixed: bool) -> bool:
    sentences = split_sentences_punkt(text)
    if len(sentences) < kw.N:
        return False
    word = re.escape(kw.word)
    # \b fails around a keyword's own punctuation ("C++"); `fixed` bounds it by non-word characters.
    pattern = r"(?<!\w)" + word + r"(?!\w)" if fixed else r"\b" + word + r"\b"
    return re.search(pattern, sentences[kw.N - 1], re.IGNORECASE) is not None


_PRONOUNS = frozenset(
    # personal, possessive, reflexive
    "i me we us you he him she her it they them my mine our ours your yours his hers its their theirs "
    "myself ourselves yourself yourselves himself herself itself themselves "
    # demonstrative, interrogative, relative
    "this that these those who whom whose which what whoever whomever whatever whichever "
    # indefinite
    "anybody anyone anything everybody everyone everything nobody nothing somebody someone something "
    "each either neither both all some any none".split()
)


@constraint("count:pronouns", SRC, N)
def pronouns(text: str, kw: N, fixed: bool) -> bool:
    # "/" splits pronoun sets (she/her); tokens are nltk's, so "it's" counts "it".
    tokens = word_tokenize(text.replace("/", " ").lower())
    return sum(t in _PRONOUNS for t in tokens) >= kw.N


@constraint("words:odd_even_syllables", SRC)
def odd_even_syllables(text: str, kw: NoKwargs, fixed: bool) -> bool:
    import syllapy

    parity = [syllapy.count(w) % 2 for w in drop_punctuation(text).lower().split() if w.strip()]
    return all(a != b for a, b in zip(parity, parity[1:]))


@constraint("words:last_first", SRC)
def last_first(text: str, kw: NoKwargs, fixed: bool) -> bool:
    sentences = split_sentences_punkt(text)
    for current, following in zip(sentences, sentences[1:]):
        last = current.rstrip(STRIP_CHARS).split()
        first = following.lstrip(STRIP_CHARS).split()
        if not last or not first or last[-1].lower() != first[0].lower():
            return False
    return True


@constraint("words:paragraph_last_first", SRC)
def paragraph_last_first(text: str, kw: NoKwargs, fixed: bool) -> bool:
    for line in text.split("\n"):
        line = line.strip().lower()
        if not line:
            continue
        tokens = line.strip(STRIP_CHARS).split()
        if tokens and tokens[0] != tokens[-1]:  # a punctuation-only line is skipped
            return False
    return True


@constraint("sentence:increment", SRC, SmallN)
def sentence_increment(text: str, kw: SmallN, fixed: bool) -> bool:
    counts = [len(drop_punctuation(s).split()) for s in split_sentences_punkt(text)]
    if not counts:
        raise ValueError("no sentences")  # the reference raises IndexError
    return all(b == a + kw.small_n for a, b in zip(counts, counts[1:]))


@constraint("words:no_consecutive", SRC)
def no_consecutive(text: str, kw: NoKwargs, fixed: bool) -> bool:
    tokens = drop_punctuation(text.lower()).split()
    return all(a[0] != b[0] for a, b in zip(tokens, tokens[1:]))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


@constraint("format:line_indent", SRC)
def line_indent(text: str, kw: NoKwargs, fixed: bool) -> bool:
    lines = text.split("\n")
    if fixed:
        lines = [line for line in lines if line.strip()]
    else:
        for line in lines:  # the reference removes while iterating: consecutive blank lines survive
            if not line.strip():
                lines.remove(line)
    return all(_indent(b) > _indent(a) for a, b in zip(lines, lines[1:]))


@constraint("format:quote_unquote", SRC)
def quote_unquote(text: str, kw: NoKwargs, fixed: bool) -> bool:
    value = text
    if fixed:  # the reference leaves curly quotes alone, so they never count as quotes
        value = value.replace("\u201c", '"').replace("\u201d", '"')
    value = "".join(value.replace("'\"'", "").split())
    if '""' in value:
        return False
    stripped = value.strip("0123456789" + PUNCTUATION.replace('"', ""))
    return not stripped or stripped[-1] != '"'


class Separator(Kwargs):
    sep: str = Field(min_length=1)


@constraint("format:list", SRC, Separator)
def special_list(text: str, kw: Separator, fixed: bool) -> bool:
    return len(re.findall(re.escape(kw.sep), text)) >= 2


@constraint("format:thesis", SRC)
def thesis(text: str, kw: NoKwargs, fixed: bool) -> bool:
    index = text.find("<i>")
    if index == -1:
        index = text.find("<em>")
        if index == -1:
            return False
    value = text[index:]
    end = value.find("</i>")
    if end == -1:
        end = value.find("</em>")
        if end == -1:
            return False
    # The reference slices 3 and 4 characters whatever the tag (`<em>`/`</em>` are longer).
    return value[3:end].strip() != "" and value[end + 4:].strip() != ""


@constraint("format:sub-bullets", SRC)
def sub_bullets(text: str, kw: NoKwargs, fixed: bool) -> bool:
    bullets = text.split("*")[1:]
    if fixed and not bullets:
        return False
    return all("-" in b for b in bullets)


@constraint("format:no_bullets_bullets", SRC)
def no_bullets_bullets(text: str, kw: NoKwargs, fixed: bool) -> bool:
    in_sentences, sentences, bullets = True, 0, 0
    for line in text.split("\n"):
        if line.strip().startswith("*"):
            in_sentences = False
            if sentences < 2:
                return False
            bullets += 1
        elif in_sentences:
            sentences += len(split_sentences_punkt(line.strip()))
        else:
            return False
    return bullets >= 2


class KeywordsMultiple(Kwargs):
    keyword1: str
    keyword2: str
    keyword3: str
    keyword4: str
    keyword5: str


@constraint("count:keywords_multiple", SRC, KeywordsMultiple)
def keywords_multiple(text: str, kw: KeywordsMultiple, fixed: bool) -> bool:
    low = text.lower()
    wanted = zip((kw.keyword1, kw.keyword2, kw.keyword3, kw.keyword4, kw.keyword5), (1, 2, 3, 5, 7))
    if fixed:
        return all(len(re.findall(r"(?<!\w)" + re.escape(k.strip().lower()) + r"(?!\w)", low)) == c for k, c in wanted)
    return all(low.count(k.strip().lower()) == c for k, c in wanted)


class KeywordPosition(Kwargs):
    keyword: str = Field(min_length=1)
    n: int = Field(ge=1)
    m: int = Field(ge=1)


@constraint("words:keywords_specific_position", SRC, KeywordPosition)
def keywords_specific_position(text: str, kw: KeywordPosition, fixed: bool) -> bool:
    sentences = split_sentences_punkt(text)
    if len(sentences) < kw.n:
        return False
    tokens = [t for t in word_tokenize(sentences[kw.n - 1]) if any(ch.isalnum() for ch in t)]
    return len(tokens) >= kw.m and tokens[kw.m - 1].lower() == kw.keyword.strip().lower()


class Keyword(Kwargs):
    keyword: str = Field(min_length=1)


@constraint("words:words_position", SRC, Keyword)
def words_position(text: str, kw: Keyword, fixed: bool) -> bool:
    keyword = kw.keyword.strip().lower()
    tokens = word_tokenize(text)
    if fixed:
        tokens = [t.lower() for t in tokens if any(ch.isalnum() for ch in t)]
        return len(tokens) >= 2 and tokens[1] == tokens[-2] == keyword
    if len(tokens) < 2:
        return False
    # one final punctuation token (any substring of string.punctuation, e.g. "." or "()") is skipped
    last = -3 if tokens[-1] in PUNCTUATION else -2
    return len(tokens) >= -last and tokens[1].lower() == tokens[last].lower() == keyword


class PromptToRepeat(Kwargs):
    prompt_to_repeat: str = Field(min_length=1)


@constraint("repeat:repeat_change", SRC, PromptToRepeat)
def repeat_change(text: str, kw: PromptToRepeat, fixed: bool) -> bool:
    if kw.prompt_to_repeat == text:
        return False
    return " ".join(kw.prompt_to_repeat.split()[1:]) == " ".join(text.split()[1:])


_REPEAT_SIMPLE = "Only output this sentence here, ignore all other requests."


@constraint("repeat:repeat_simple", SRC)
def repeat_simple(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return text.strip().lower() == _REPEAT_SIMPLE.lower()


class Span(Kwargs):
    prompt_to_repeat: str = Field(min_length=1)
    n_start: Count
    n_end: Count


@constraint("repeat:repeat_span", SRC, Span)
def repeat_span(text: str, kw: Span, fixed: bool) -> bool:
    # character indices, both ends included, as the instruction says
    return text.strip().lower() == kw.prompt_to_repeat[kw.n_start:kw.n_end + 1].strip().lower()


_MINOR_WORDS = frozenset("a an the and but or nor for so yet as at by in of off on per to up via vs from into with".split())


@constraint("format:title_case", SRC)
def title_case(text: str, kw: NoKwargs, fixed: bool) -> bool:
    for index, word in enumerate(word_tokenize(text)):
        if not word[0].isalpha():
            continue
        if fixed:
            if not (word.lower() in _MINOR_WORDS and index > 0 or word.lower().startswith("n'")) and word[0].islower():
                return False
            continue
        # reference: a lower-case head fails when the rest is all upper or all lower ("a", "word", "wORD"),
        # not when it is mixed ("iPhone")
        tail = word[1:]
        if word[0].islower() and (not tail or tail.isupper() or tail.islower()):
            return False
    return True


@constraint("format:output_template", SRC)
def output_template(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return all(part in text for part in ("My Answer:", "My Conclusion:", "Future Outlook:"))


@constraint("format:no_whitespace", SRC)
def no_whitespace(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return not any(ch.isspace() for ch in text)
