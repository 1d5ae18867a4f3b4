"""IFBench's `custom:*` instructions: fixed tasks named by the id, which take (and ignore) any kwargs
(allenai/IFBench db69a6f behaviour; see `_ifbench.py`)."""

from __future__ import annotations

import csv
import io
import re
import unicodedata

from olmorl.rewards.instructions._constraints import NoKwargs, Source, constraint
from olmorl.rewards.instructions._text import STRIP_CHARS, drop_punctuation, split_sentences_punkt

SRC: Source = "ifbench"


def _ascii_fold(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def custom(instruction_id: str):  # the `custom:*` ids take (and ignore) any kwargs
    return constraint(instruction_id, SRC, NoKwargs, accepts_any_kwargs=True)


@custom("custom:multiples")
def multiples(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return re.findall(r"\d+", text.replace(",", ", ")) == [str(i) for i in range(14, 51, 7)]


@custom("custom:mcq_count_length")
def mcq_count_length(text: str, kw: NoKwargs, fixed: bool) -> bool:
    if text[text.find("Question"):] != text:
        return False
    questions = re.split(r"\n*(?:Question \d+[\.|\):;]?\s*)", text)
    if questions[0] == "":
        questions = questions[1:]
    questions = [q.strip() for q in questions if q.strip()]
    if len(questions) != 4:
        return False
    lengths = []
    for q in questions:
        stem, options, done = "", 0, False
        for line in q.split("\n"):
            if re.match(r"^[A-Ea-e][\.|\)]\s*\w+", line.strip()):
                options += 1
                done = True
            elif not done:
                stem += " " + line.strip()
        if options != 5:
            return False
        lengths.append(len(stem.strip()))
    return all(a < b for a, b in zip(lengths, lengths[1:]))


@custom("custom:reverse_newline")
def reverse_newline(text: str, kw: NoKwargs, fixed: bool) -> bool:
    lines = [line.strip(STRIP_CHARS) for line in text.split("\n") if line.strip(STRIP_CHARS)]
    start = next((i for i, line in enumerate(lines) if "Zimbabwe" in line), None)
    if start is None or len(lines) - start < 52:
        return False
    folded = [_ascii_fold(line) for line in lines[start:]]
    return folded == sorted(folded, reverse=True)


@custom("custom:word_reverse")
def word_reverse(text: str, kw: NoKwargs, fixed: bool) -> bool:
    value = " ".join(drop_punctuation(text.lower().strip()).split()[::-1])
    return "bald eagle" in value and value in split_sentences_punkt(value)


@custom("custom:character_reverse")
def character_reverse(text: str, kw: NoKwargs, fixed: bool) -> bool:
    return "elgae dlab" in text.lower()


@custom("custom:sentence_alphabet")
def sentence_alphabet(text: str, kw: NoKwargs, fixed: bool) -> bool:
    sentences = split_sentences_punkt(text)
    return len(sentences) == 26 and all(s.lstrip().split()[0].lower()[0] == chr(97 + i) for i, s in enumerate(sentences))


_CAPITALS = (
    "Reykjavik Helsinki Oslo Tallinn Stockholm Riga Moscow Copenhagen Vilnius Minsk Dublin Berlin Amsterdam "
    "Warsaw London Brussels Prague Luxembourg Paris Vienna Bratislava Budapest Vaduz Chisinau Bern Ljubljana Zagreb"
).split()


@custom("custom:european_capitals_sort")
def european_capitals_sort(text: str, kw: NoKwargs, fixed: bool) -> bool:
    capitals = [c for c in _ascii_fold(text).split(",") if c.strip()]
    return len(capitals) == len(_CAPITALS) and all(c.strip() == w for c, w in zip(capitals, _CAPITALS))


@custom("custom:csv_city")
def csv_city(text: str, kw: NoKwargs, fixed: bool) -> bool:
    rows = list(csv.reader(io.StringIO(text)))
    return len(rows) == 8 and rows[0] == ["ID", "Country", "City", "Year", "Count"] and all(len(r) == 5 for r in rows[1:])


_PRODUCT_HEADER = re.compile(
    r'^(ProductID|"ProductID"),[ \t]*(Category|"Category"),[ \t]*(Brand|"Brand"),[ \t]*(Price|"Price"),[ \t]*(Stock|"Stock")$'
)


@custom("custom:csv_special_character")
def csv_special_character(text: str, kw: NoKwargs, fixed: bool) -> bool:
    if not _PRODUCT_HEADER.match(text.split("\n")[0].strip()):
        return False
    rows = list(csv.reader(io.StringIO(text.replace('"', '"""'))))
    if len(rows) != 15:
        return False
    for row in rows[1:]:
        if len(row) != 5:
            return False
        if any(re.match(r'".*[^\d\w\s].*"', field) for field in row):
            return True
    return False


_STUDENT_HEADER = re.compile(
    r'^(StudentID|"StudentID")\t *(Subject|"Subject")\t *(Grade|"Grade")\t *(Semester|"Semester")\t *(Score|"Score")$'
)


@custom("custom:csv_quotes")
def csv_quotes(text: str, kw: NoKwargs, fixed: bool) -> bool:
    if not _STUDENT_HEADER.match(text.split("\n")[0].strip()):
        return False
    rows = list(csv.reader(io.StringIO(text.replace('"', '"""')), delimiter="\t"))
    if len(rows) != 4:
        return False
    for row in rows:
        if len(row) != 5 or not all(f.strip()[0] == '"' and f.strip()[-1] == '"' for f in row):
            return False
    return True


_DAYS = {1: 31, 3: 31, 5: 31, 7: 31, 8: 31, 10: 31, 12: 31, 4: 30, 6: 30, 9: 30, 11: 30, 2: 29}


@custom("custom:date_format_list")
def date_format_list(text: str, kw: NoKwargs, fixed: bool) -> bool:
    for date in text.strip().split(","):
        date = date.strip()
        if not re.match(r"^\d{4}-\d{2}-\d{2}$", date):
            return False
        year, month, day = (int(p) for p in date.split("-"))
        if not 1769 <= year <= 1821 or month > 12 or day > _DAYS.get(month, 99):
            return False
    return True
