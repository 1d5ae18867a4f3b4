"""Text utilities shared by the instruction checkers: words, sentences, tokens, language.

Everything here carries its own data, so nothing is downloaded at run time:
- `split_sentences_regex` is Google's rule-based splitter (what IFEval-G, IFBench-Train and the
  IFBench 26.3 checkers call `split_into_sentences`).
- `split_sentences_punkt` stands in for NLTK's English punkt model (`count_sentences` and
  `word_tokenize` in the references). It applies punkt's decision rules with the model's
  abbreviation list embedded; it agrees with punkt on the differential test corpus.
- `word_tokenize` is the NLTK/Treebank word tokenizer applied to those sentences.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache

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


# --- punkt stand-in ---------------------------------------------------------------------------
# Abbreviation types of NLTK's English punkt model (lower case, final period removed).
_ABBREVIATIONS = frozenset(
    "ct m.j t a.c n.h ms p.a.m dr pa p.m u.k st dec u.s.a lt g.k adm p h.m ga tenn yr sen n.c j.j d.h "
    "s.g inc vs s.p.a a.t n feb sr jan s.a.y n.y col g.f c.o.m.b d ft va r.k e.f chg r.i a.g minn a.h "
    "k n.j m l.f f.j gen i.m.s s.a aug j.p okla m.d.c ltd oct s vt r.a j.c ariz w.w b.v ore h w.r e.h "
    "mrs cie corp w n.v a.d r.j ok e.m w.c ill nov u.s prof conn u.s.s.r mg f.g ph.d g calif messrs h.f "
    "wash tues sw bros u.n l wis mr sep d.c ave e.l co s.s reps c r.t h.c r wed a.s v fla jr r.h c.v "
    "m.b.a rep a.a e c.i.t l.a b.f j.b d.w j.k ala f w.va sept mich n.m j.r l.p s.c colo fri a.m g.d "
    "kan maj ky a.m.e n.d t.j cos nev".split()
)
_SENT_STARTERS = frozenset(
    "most he since so both these it nevertheless this indeed however instead under similarly some though "
    "while when in despite although nonetheless thus there if the nor separately moreover but they yet "
    "many according sales among meanwhile even i".split()
)
# punkt's word tokens: runs of non-space, with sentence-final punctuation kept on the token.
_COMMON_WORDS = _SENT_STARTERS | frozenset(
    "yes no then now first finally also today we you she his her our my your what why how where who each "
    "every all one two three let please thanks here a an to of and or for with".split()
)
_PUNKT_TOKEN = re.compile(r"\S+")
_END_PUNCT = re.compile(r"""([.?!]+)(['"\u201d\u2019)\]}]*)$""")
_INITIAL = re.compile(r"^[^\W\d]$")
_NUMBER = re.compile(r"^-?[\.,]?\d[\d,\.-]*\.?$")


def split_sentences_punkt(text: str) -> list[str]:
    """Sentences as NLTK's English punkt model splits them (data-free approximation)."""
    tokens = [(m.start(), m.end(), m.group(0)) for m in _PUNKT_TOKEN.finditer(text)]
    sentences: list[str] = []
    start = 0
    for i, (tok_start, tok_end, tok) in enumerate(tokens):
        if i + 1 >= len(tokens) or not _is_break(tok, tokens[i + 1][2]):
            continue
        sentences.append(text[start:tok_end].strip())
        start = tokens[i + 1][0]
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return [s for s in sentences if s]


def _is_break(tok: str, nxt: str) -> bool:
    match = _END_PUNCT.search(tok)
    if not match:
        return False
    if match.group(1) in "?!" or ("?" in match.group(1) or "!" in match.group(1)):
        return True
    body = tok[: match.start()]
    word = body.lstrip("\"'(\u201c\u2018[{").lower()
    next_alpha = nxt.lstrip("\"'(\u201c\u2018[{*-")
    first_upper = bool(next_alpha) and next_alpha[0].isupper()
    common_next = first_upper and next_alpha.lower().strip(STRIP_CHARS) in _COMMON_WORDS
    if len(match.group(1)) >= 2:  # ellipsis: like an abbreviation (punkt's orthographic heuristic)
        return common_next
    if match.group(2):  # period inside a closing quote/bracket
        return True
    if word in _ABBREVIATIONS or _INITIAL.match(word):
        # punkt's orthographic heuristic: an abbreviation ends a sentence only when a capitalised
        # word follows that usually appears in lower case (approximated by common words).
        return common_next
    if next_alpha[:1] in ";:,.!?" and next_alpha:
        return False
    return True


# --- Treebank word tokenizer ------------------------------------------------------------------
_TB_START = [
    (re.compile("([«“‘„]|[`]+)"), r" \1 "),
    (re.compile(r"^\""), r"``"),
    (re.compile(r"(``)"), r" \1 "),
    (re.compile(r"([ \(\[{<])(\"|\'{2})"), r"\1 `` "),
    (re.compile(r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)"), r"\1 "),
]
_TB_PUNCT = [
    (re.compile(r'([^\.])(\.)([\]\)}>"\'»”’ ]*+)\s*$'), r"\1 \2 \3 "),
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}"), r" \g<0> "),
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (re.compile("[\u2012-\u2015]"), r" \g<0> "),
    (re.compile(r'([^\.])(\.)([\]\)}>"\']*)\s*$'), r"\1 \2\3 "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"[*]"), r" \g<0> "),
    (re.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> "),
    (re.compile(r"--"), r" -- "),
]
_TB_END = [
    (re.compile("([»”’])"), r" \1 "),
    (re.compile(r"''"), " '' "),
    (re.compile(r'"'), " '' "),
    (re.compile(r"\s+"), " "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
]
_TB_CONTRACTIONS = [
    re.compile(p)
    for p in (
        r"(?i)\b(can)(?#X)(not)\b", r"(?i)\b(d)(?#X)('ye)\b", r"(?i)\b(gim)(?#X)(me)\b",
        r"(?i)\b(gon)(?#X)(na)\b", r"(?i)\b(got)(?#X)(ta)\b", r"(?i)\b(lem)(?#X)(me)\b",
        r"(?i)\b(more)(?#X)('n)\b", r"(?i)\b(wan)(?#X)(na)(?=\s)", r"(?i) ('t)(?#X)(is)\b",
        r"(?i) ('t)(?#X)(was)\b",
    )
]


def _treebank(sentence: str) -> list[str]:
    text = sentence
    for rx, sub in _TB_START + _TB_PUNCT:
        text = rx.sub(sub, text)
    text = " " + text + " "
    for rx, sub in _TB_END:
        text = rx.sub(sub, text)
    for rx in _TB_CONTRACTIONS:
        text = rx.sub(r" \1 \2 ", text)
    return text.split()


@lru_cache(maxsize=4096)
def _word_tokenize_cached(text: str) -> tuple[str, ...]:
    return tuple(tok for sent in split_sentences_punkt(text) for tok in _treebank(sent))


def word_tokenize(text: str) -> list[str]:
    """NLTK's `word_tokenize` (punkt sentences, then the Treebank rules)."""
    return list(_word_tokenize_cached(text))


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
