"""Where a response states an answer: its anchors, each with the text it gives.

A box (`\\boxed{}` / `\\fbox{}`, the last MAX_BOXES of them), an answer tag (also a mangled one), Minerva's closing
line, an answer phrase ("the answer is", "Final answer:", "Answer:", "####", in other languages too, with a
parenthetical naming the form), a bold answer line and the last `A:` line of a Q/A few-shot response. A phrase gives
the statement after it: a leading math span, else its sentence. Which anchor counts, and whether it is taken back or
hedged, is `_extract`'s policy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from olmorl.rewards.math._deferred import LESS_IMPORTANT, deferred_answer_start
from olmorl.rewards.math._normalize import matching_brace, whitespace_start

MAX_BOXES = 64  # only the last boxes matter; thousands of boxes are skipped past cheaply
MAX_ANSWER_CHARS = 2_000
RARE_ANCHOR_WINDOW = 3_000  # "Result =" and other-language anchors are looked for in the last 3000 characters

_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*(\{)|\\boxed\s+([^\s$]+)")
# An opening tag written again before the answer (`<answer> <answer> 3/8 </answer>`) opens the same answer.
_ANSWER_TAG_RE = re.compile(r"<answer>(?:\s*<answer>)*(.*?)</answer>", re.DOTALL | re.IGNORECASE)
# An opening tag written with a wrong or missing bracket (`@answer 10 </answer>`, `<answer 10 </answer>`): the
# closing tag still marks what precedes it as the answer. Looked for only where no well-formed tag is; a tag
# with attributes (`<answer content="1"></answer>`) is not one (its body is empty).
_MANGLED_ANSWER_TAG_RE = re.compile(
    r"(?<![\w/<])(?:@answer|\[answer\]|answer>|<answer(?=\s[^<>]*</answer>))((?:(?!<answer>).)*?)</answer>",
    re.DOTALL | re.IGNORECASE,
)
MINERVA_RE = re.compile(
    r"Final Answer:\s*The final answer is\s*(.*?)\.?\s*I hope it is correct", re.DOTALL | re.IGNORECASE
)
_PHRASE_RE = re.compile(
    r"(?:\bfinal answer\b\s*(?:is|:|=|\*\*:?|-)?|\bthe (?:correct |final )?(?:answer|option|choice)"
    # "the answer (arabic numerals) is 63": a parenthetical naming the answer's form.
    # "is not 5" negates; "is not as important as the explanation." may defer to it (`_deferred`), else it is skipped.
    r"(?:\s*\([^()\n]{1,40}\))?(?: to (?:this|the) (?:problem|question))? (?:is|should be|would be|=)"
    rf"(?!\s+(?!{LESS_IMPORTANT})not\b)|"
    # "Answer:" at a line start, or "Answer" on its own followed by math ("**Answer**\n\n$$9$$", "Answer \\[ 9 \\]").
    r"^\s*\**(?:final\s+)?answer\**(?:\s*[:=]|[ \t]*(?=\s*(?:\$|\\\[|\\\()))|"
    r"\banswer\s*:|####)\s*\**:?\**",
    re.IGNORECASE | re.MULTILINE,
)
_PHRASE_KEYS = ("answer", "option", "choice", "####")  # one is in every `_PHRASE_RE` match

# Rarer anchors, searched only when a cheap look for their key words finds one (most responses have none).
_RARE_PHRASE_HINTS = ("result:", "result =", "result=", "result**", "final result", "respuesta", "antwort", "resposta",
                      "risposta", "réponse", "reponse", "ответ", "答", "정답", "إجابة", "اجابة", "جواب", "उत्तर")
_RARE_PHRASE_RE = re.compile(
    # "Result = 17" / "Final result: 17" (a line that starts with it, or "final result" anywhere).
    r"(?:^[ \t]*\**(?:the\s+)?(?:final\s+)?result\**\s*[:=]|\bfinal result\b\s*(?:is|:|=)|"
    # The answer phrase in other languages.
    r"\b(?:la\s+)?r[ée]ponse(?:\s+finale)?\s*(?:est\b|:)|\b(?:la\s+)?respuesta(?:\s+final)?\s*(?:es\b|:)|"
    r"\b(?:die\s+)?(?:endg[üu]ltige\s+)?antwort\s*(?:ist\b|lautet\b|:)|\b(?:a\s+)?resposta(?:\s+final)?\s*(?:é|:)|"
    r"\b(?:la\s+)?risposta(?:\s+finale)?\s*(?:è|:)|\bответ\s*(?::|—|-|равен\b|(?=\s[-\d$\\]))|答案(?:是|为|為|：|:)|答えは|정답은|"
    # Arabic "الإجابة هي" / "الجواب:"; Hindi "उत्तर:" and the verb-final "उत्तर 12 है" (the verb is dropped).
    r"(?:ال)?(?:إجابة|اجابة|جواب)(?:\s+(?:ال)?نهائي(?:ة)?)?\s*(?:هي|هو|:|=)|(?:अंतिम\s+)?उत्तर\s*(?:है|:|=|(?=[-\d$\\])))"
    r"\s*\**:?\**",
    re.IGNORECASE | re.MULTILINE,
)
# Q/A few-shot format: the response's last line is "A: 18" (a "Q:" line may follow: the model went on to the
# next question).
_QA_LINE_RE = re.compile(r"^[ \t]*\**A\**[ \t]*:[ \t]*(?=\S)", re.MULTILINE)
_QA_TAIL_RE = re.compile(r"[^\n]*(?:\s*$|\n\s*Q:)")
# An anchor that ends its line, its value alone on the next non-blank line (checked to be the response's last). A
# lone period before the line's end is an empty sentence, not an answer ("is  . " then "15 + 30 + 60 = 105 pounds").
_NEXT_LINE_VALUE_RE = re.compile(r"[ \t]*(?:\.[ \t]*)?\n\s*([^\n]+)")
_BOLD_LINE_RE = re.compile(r"^\s*\*\*(?:final answer|answer)\s*:?\s*(.+?)\*\*\s*\.?\s*$", re.IGNORECASE | re.MULTILINE)

# "Let's check our answer:", "To verify the answer:": a check of the answer follows (its working, the question's
# own equation with the value put in), not the answer itself.
_CHECK_LEAD_RE = re.compile(r"\b(?:check|verify|confirm|double-check|test)(?:ing)?\s+(?:our|my|the|this|your)\s*$",
                            re.IGNORECASE)
# An inline `$...$` does not close right before a digit (as in Pandoc, and `_closing`'s reader): the dollar signs of
# currency amounts after an answer phrase (`is $2200 - $1980 = $220.`) open no math span.
_MATH_SPAN_RE = re.compile(r"^\s*(\$\$(.+?)\$\$|\$((?:\\.|[^$\\])+)\$(?!\d)|\\\((.+?)\\\)|\\\[(.+?)\\\])", re.DOTALL)
SENTENCE_END_RE = re.compile(r"(?<!\d)\.(?=\s|$)|\.(?=\s+[A-Z])|\n|。|।|(?<=\S)\s+(?=(?:I hope|Therefore|So|Thus|Hence)\b)")

_LESS_IMPORTANT_RE = re.compile(rf"\s*{LESS_IMPORTANT}", re.IGNORECASE)
_HINDI_COPULA_RE = re.compile(r"\s+(?:है|हैं)\s*$")
# "The final answer is consistent with the given information.": a verdict on an answer stated before it, no value
# of its own, so it does not replace that answer (a statement that holds a digit or math is read as before).
_VERDICT_ON_ANSWER_RE = re.compile(r"^\W*(?:consistent|correct|accurate|reasonable|verified|confirmed)\b", re.IGNORECASE)
_VALUE_MARK_RE = re.compile(r"[\d$\\]")
# "the answer (arabic numerals) is" closing its line, then "3 x 68 = 204", "2 x 80 = 160", ...: lines of working,
# each an equation, not one answer; the phrase states none (a sentence after them may).
_LINE_END_RE = re.compile(r"[ \t]*\n")
_WORKING_LINES_RE = re.compile(r"\s*[^\n=]+=[^\n=]+\n[ \t]*[^\n=]+=[^\n=]+(?:\n|$)")


@dataclass(frozen=True)
class Anchor:
    """A place in the response that states an answer: its span, its kind, the answer text it gives."""

    start: int
    end: int
    kind: str
    text: str


def last_boxes(text: str) -> list[Anchor]:
    """The last MAX_BOXES boxes (scanning from the end keeps thousands of boxes cheap)."""
    found: list[Anchor] = []
    search_to = len(text)
    while len(found) < MAX_BOXES:
        start = max(text.rfind("\\boxed", 0, search_to), text.rfind("\\fbox", 0, search_to))
        if start < 0:
            break
        match = _BOX_RE.match(text, start)
        search_to = start
        if not match:
            continue
        if match.group(2) is not None:  # `\boxed 5`
            found.append(Anchor(start, match.end(), "boxed", match.group(2)))
            continue
        close = matching_brace(text, match.start(1), limit=MAX_ANSWER_CHARS)
        if close < 0:
            continue
        found.append(Anchor(start, close + 1, "boxed", text[match.start(1) + 1:close]))
    found.reverse()
    # Drop boxes nested inside a later-found outer box (`\boxed{\boxed{5}}`).
    outer = [a for a in found if not any(b is not a and b.start < a.start and a.end <= b.end for b in found)]
    return outer


def _statement(text: str, start: int) -> tuple[str, int]:
    """The answer text that follows an anchor phrase: a leading math span, else up to sentence end."""
    rest = text[start:start + MAX_ANSWER_CHARS]
    span = _MATH_SPAN_RE.match(rest)
    if span:
        inner = next(g for g in span.groups()[1:] if g is not None)
        tail = rest[span.end():]
        # "$x$ cm" / "$5$ dollars": keep a short unit word after the math span.
        unit = re.match(r"[ \t]*(?:\\?%|[a-zA-Z]+(?: [a-zA-Z]+)?)?", tail)
        if unit and unit.group(0).strip() and len(unit.group(0)) < 20 and not re.match(r"\s*(?:or|and)\b", tail):
            inner = inner + " " + unit.group(0).strip()
        elif re.match(r"\s*(?:or|and|,)\s*\$", tail):
            end = SENTENCE_END_RE.search(rest)
            cut = end.start() if end else len(rest)
            return rest[:cut], start + cut
        return inner, start + span.end()
    if (lead := _NEXT_LINE_VALUE_RE.match(rest)) and not text[start + lead.end():].strip():
        # "the answer (Yes or No) is:" then the value alone on the response's last line.
        start += lead.start(1)
        rest = text[start:start + MAX_ANSWER_CHARS]
    end = SENTENCE_END_RE.search(rest)
    cut = end.start() if end else len(rest)
    # In prose a final "!" is an exclamation ("The answer is 5!"); inside math it is a factorial.
    statement = rest[:cut]
    if "ह" in statement:
        statement = _HINDI_COPULA_RE.sub("", statement)
    return (statement.rstrip().removesuffix("!") if "!" in statement else statement), start + cut


def find_anchors(text: str) -> list[Anchor]:
    anchors = last_boxes(text)
    lowered = text.lower()
    # On ASCII text a lowercase find sees what IGNORECASE matches (elsewhere case folding reaches further: 'ſ' is
    # 's'), so the scans below may start at their key words instead of at the top.
    ascii_text = text.isascii()
    tag_matches = list(_ANSWER_TAG_RE.finditer(text))
    if not tag_matches and "/answer>" in lowered:  # a mangled opening needs a closing tag (cheap look first)
        tag_matches = list(_MANGLED_ANSWER_TAG_RE.finditer(text))
    for m in tag_matches:
        anchors.append(Anchor(m.start(), m.end(), "answer_tag", m.group(1)))
    if (minerva_start := lowered.find("final answer:") if ascii_text else 0) >= 0:
        for m in MINERVA_RE.finditer(text, minerva_start):
            anchors.append(Anchor(m.start(), m.end(), "minerva", m.group(1)))
    if (bold_start := text.find("**")) >= 0:  # a bold line opens with "**" after a line start and spaces
        for m in _BOLD_LINE_RE.finditer(text, whitespace_start(text, bold_start)):
            anchors.append(Anchor(m.start(), m.end(), "bold", m.group(1)))
    phrase_start = _phrase_scan_start(text, lowered) if ascii_text else 0
    phrases = list(_PHRASE_RE.finditer(text, phrase_start)) if phrase_start is not None else []
    tail_start = max(0, len(text) - RARE_ANCHOR_WINDOW)
    tail_lowered = text[tail_start:].lower()  # not `lowered[tail_start:]`: lowercasing may change non-ASCII lengths
    if any(hint in tail_lowered for hint in _RARE_PHRASE_HINTS):
        phrases += _RARE_PHRASE_RE.finditer(text, tail_start)
    if (qa := _last_qa_line(text)) is not None:
        phrases.append(qa)
    # An answer tag holds the answer: an answer phrase inside it ("<answer> The answer is 10 </answer>") is read
    # as part of the tag's text, not as a later anchor whose statement runs past the tag.
    tags = [(a.start, a.end) for a in anchors if a.kind == "answer_tag"]
    for m in phrases:
        if any(start < m.start() < end for start, end in tags):
            continue
        if _CHECK_LEAD_RE.search(text, max(0, m.start() - 40), m.start()):
            continue
        if _ends_its_line(text, m) and _WORKING_LINES_RE.match(text, m.end()):
            continue
        answer, end = _statement(text, m.end())
        if (deferred := deferred_answer_start(answer, text, end)) is not None:
            answer, end = _statement(text, deferred)  # "is followed by an explanation." then "Yes, it is ..."
        elif _LESS_IMPORTANT_RE.match(answer):
            continue  # "is not as important as ..." with no answer after it: a negation, as "is not 5"
        if _VERDICT_ON_ANSWER_RE.match(answer) and not _VALUE_MARK_RE.search(answer):
            continue
        if answer.strip(" *:.\n"):
            anchors.append(Anchor(m.start(), end, "phrase", answer))
    return anchors


def _ends_its_line(text: str, phrase: re.Match[str]) -> bool:
    """Whether nothing but spaces follows the answer phrase on its line."""
    return phrase.group(0).rstrip(" \t").endswith("\n") or _LINE_END_RE.match(text, phrase.end()) is not None


def _phrase_scan_start(text: str, lowered: str) -> int | None:
    """Where `_PHRASE_RE` may first match in ASCII `text` (None: nowhere), so its scan skips the reasoning before
    the first key word. Every match holds "answer", "option", "choice" or "####" at most 12 characters after its
    start ("the correct answer") or after a line start and a run of spaces, asterisks and "final" ("  **Final
    Answer")."""
    found = [at for key in _PHRASE_KEYS if (at := lowered.find(key)) >= 0]
    if not found:
        return None
    first = back = min(found)
    while True:
        while back > 0 and (text[back - 1].isspace() or text[back - 1] == "*"):
            back -= 1
        if not lowered.endswith("final", 0, back):
            break
        back -= len("final")
    return max(0, min(back, first - 12))


def _last_qa_line(text: str) -> re.Match[str] | None:
    """The "A:" line that ends the response (or ends it but for a following "Q:"), else None."""
    window = max(0, len(text) - MAX_ANSWER_CHARS)
    if text.find("A:", window) < 0 and text.find("A :", window) < 0 and text.find("A**", window) < 0:
        return None
    last = None
    for last in _QA_LINE_RE.finditer(text, window):
        pass
    return last if last is not None and _QA_TAIL_RE.match(text, last.end()) else None
