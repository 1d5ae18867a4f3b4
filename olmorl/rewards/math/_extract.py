"""Which answer counts: the final-answer anchor of a response.

Anchors: `\\boxed{}` / `\\fbox{}`, `<answer>...</answer>`, Minerva's "Final Answer: The final answer is X.
I hope it is correct.", "final answer", "the answer is" (also "the answer (Yes or No) is"), "Answer:", "Answer"
followed by math, `####`, bold answer lines, "Result =", the answer phrase in other languages (Arabic and Hindi
included), and a last `A: 18` line (Q/A few-shot format). Chat-template tokens ending a response are dropped.
The last anchor in the response wins; an anchor followed by a sentence gives the sentence's value. With no
anchor at all, the closing statement of the response may state the answer (`_closing`). Text inside
`<think>...</think>` never counts, a number that only appears in the reasoning is not an answer, an answer
followed by a retraction does not count, nor a value stated as a bound or followed by a second answer
(`_qualifiers`), nor one given right after a conclusion that the value is not determined (`_indeterminate`), and
several different final candidates ("4 or 6", `\\boxed{A}` `\\boxed{C}`) are reported so the caller can call it a
hedge (unless the reference itself has that many parts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from olmorl.rewards.math._closing import closing_answer
from olmorl.rewards.math._deferred import deferred_answer_start
from olmorl.rewards.math._indeterminate import contradicts_indeterminate
from olmorl.rewards.math._normalize import clean_text, matching_brace, whitespace_start
from olmorl.rewards.math._number_words import asks_for_digits, restated_in_words
from olmorl.rewards.math._qualifiers import magnitude_after, qualified_boxes, qualified_statement
from olmorl.rewards.math._question_echo import ANCHOR_HEDGE_RE, opening_count
from olmorl.rewards.math._sentence_value import sentence_value, worked_value

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
_MINERVA_RE = re.compile(
    r"Final Answer:\s*The final answer is\s*(.*?)\.?\s*I hope it is correct", re.DOTALL | re.IGNORECASE
)
_PHRASE_RE = re.compile(
    r"(?:\bfinal answer\b\s*(?:is|:|=|\*\*:?|-)?|\bthe (?:correct |final )?(?:answer|option|choice)"
    # "the answer (arabic numerals) is 63": a parenthetical naming the answer's form.
    r"(?:\s*\([^()\n]{1,40}\))?(?: to (?:this|the) (?:problem|question))? (?:is|should be|would be|=)(?!\s+not\b)|"
    # "Answer:" at a line start, or "Answer" on its own followed by math ("**Answer**\n\n$$9$$", "Answer \\[ 9 \\]").
    r"^\s*\**(?:final\s+)?answer\**(?:\s*[:=]|[ \t]*(?=\s*(?:\$|\\\[|\\\()))|"
    r"\banswer\s*:|####)\s*\**:?\**",
    re.IGNORECASE | re.MULTILINE,
)
_PHRASE_KEYS = ("answer", "option", "choice", "####")  # one is in every `_PHRASE_RE` match
# Rarer anchors, searched only when a cheap look for their key words finds one (most responses have none).
_HEDGE_HINTS = ("maybe", "perhaps", "possibl", "probabl", "not sure", "not certain", "unsure", "guess")
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
# An anchor that ends its line, its value alone on the next non-blank line (checked to be the response's last).
_NEXT_LINE_VALUE_RE = re.compile(r"[ \t]*\n\s*([^\n]+)")
_BOLD_LINE_RE = re.compile(r"^\s*\*\*(?:final answer|answer)\s*:?\s*(.+?)\*\*\s*\.?\s*$", re.IGNORECASE | re.MULTILINE)
_RETRACTION_RE = re.compile(
    r"\b(?:wait|hold on|scratch that|hmm,? no|actually,? no|that'?s (?:wrong|incorrect|not right|not correct)|"
    r"(?:is|was) (?:wrong|incorrect|not correct|not right)|i made (?:a|an) (?:mistake|error)|"
    r"(?:this|that) (?:can'?t|cannot) be right|let me (?:redo|recompute|recalculate|reconsider))\b",
    re.IGNORECASE,
)
# A value its own statement disowns: "135 // definitely not correct", "The answer is 135, not correct." (a bare
# "wrong" / "incorrect" after a comma may be a choice's text, "C, wrong", so it needs a copula or an adverb).
_DISOWNED_RE = re.compile(
    r"^(?:(?!//)[^,;(\n]){1,60}?\s*(?:,|;|//|\(|--?)\s*(?:"
    r"(?:(?:definitely|surely|clearly|certainly|obviously|probably|likely)\s+)?not\s+(?:correct|right)|"
    r"(?:definitely|surely|clearly|certainly|obviously|probably|likely|this is|that is|that's|it's|it is|is)\s+"
    r"(?:incorrect|wrong))\b",
    re.IGNORECASE,
)
# A response that ends as it begins to conclude ("... 163 post-it notes. \n\nTherefore, the"): cut off.
_UNFINISHED_CONCLUSION_RE = re.compile(
    r"(?:^|[.!?:\n])\s*(?:therefore|thus|hence|so)\b,?(?:\s+(?:the|our|my))?(?:\s+(?:final\s+)?answer"
    r"(?:\s*\([^()\n]{1,40}\))?(?:\s+is)?)?\s*$",
    re.IGNORECASE,
)
# "The answer is no. Or yes.": the next sentence offers another answer.
_OR_NEXT_RE = re.compile(r"^[\s.!*)\]}$]*\bOr\b(?!\s*,?\s*(?:in\s+(?:words|other\s+words)|equivalently)\b)")
_CONFIRMATION_RE = re.compile(
    r"\b(?:yes|correct|confirm(?:s|ed)?|indeed|consistent|checks out|verified|is right|holds|matches)\b",
    re.IGNORECASE,
)
# "The final answer is consistent with the given information.": a verdict on an answer stated before it, no value
# of its own, so it does not replace that answer (a statement that holds a digit or math is read as before).
_VERDICT_ON_ANSWER_RE = re.compile(r"^\W*(?:consistent|correct|accurate|reasonable|verified|confirmed)\b", re.IGNORECASE)
_VALUE_MARK_RE = re.compile(r"[\d$\\]")
# "Let's check our answer:", "To verify the answer:": a check of the answer follows (its working, the question's
# own equation with the value put in), not the answer itself.
_CHECK_LEAD_RE = re.compile(r"\b(?:check|verify|confirm|double-check|test)(?:ing)?\s+(?:our|my|the|this|your)\s*$",
                            re.IGNORECASE)
# An inline `$...$` does not close right before a digit (as in Pandoc, and `_closing`'s reader): the dollar signs of
# currency amounts after an answer phrase (`is $2200 - $1980 = $220.`) open no math span.
_MATH_SPAN_RE = re.compile(r"^\s*(\$\$(.+?)\$\$|\$((?:\\.|[^$\\])+)\$(?!\d)|\\\((.+?)\\\)|\\\[(.+?)\\\])", re.DOTALL)
_SENTENCE_END_RE = re.compile(r"(?<!\d)\.(?=\s|$)|\.(?=\s+[A-Z])|\n|。|।|(?<=\S)\s+(?=(?:I hope|Therefore|So|Thus|Hence)\b)")
# Chat-template tokens a response may end with ("... I hope it is correct. <|im_start|>user"): not part of it.
_TEMPLATE_TAIL_RE = re.compile(r"(?:\s*(?:<\|[A-Za-z_]{2,20}\|>(?:user|assistant|system)?|</s>))+\s*$")
# GSM8K's calculator annotation (`$<<9*2=18>>18`, `= <<2+1=3>>3 bolts`): models trained on GSM8K solutions write it
# before the value it computes; a reader sees the value, so the annotation is dropped before any anchor is read.
_CALCULATOR_RE = re.compile(r"<<[^<>\n]{1,200}?=[^<>\n]{1,60}?>>")
_HINDI_COPULA_RE = re.compile(r"\s+(?:है|हैं)\s*$")
_OR_SPLIT_RE = re.compile(r"\s+(?:or|\\text\{\s*or\s*\}|\\vee|\\lor)\s+|\\text\{\s*or\s*\}", re.IGNORECASE)
_GAP_NOISE_RE = re.compile(
    r"\\(?:quad|qquad|[,;:! ]|hspace\{[^{}]*\}|text\{\s*(?:and|or)\s*\}|mbox\{\s*(?:and|or)\s*\}|text\{\s*,?\s*\}|"
    r"\[|\]|\(|\))|\$|~"
)
_WORD_RE = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{2,}")
_BARE_ANSWER_RE = re.compile(r"^[\s$\\(\[]*[-+]?[\w\\{}^().,/+\-*= ]{1,40}[\s$\\)\].]*$", re.ASCII)
_BARE_PERCENT_RE = re.compile(r"[ \t$]*(?:\\?%|\bpercent|\bpct)\s*$")  # "28 pct", "$28$ %": a bare percentage
# Between a sentence's last box and the answer line after it: closing delimiters, its full stop, a "Final Answer:".
_ALTERNATIVES_GAP_RE = re.compile(r"[\s$.!]*(?:(?:final\s+)?answer\s*:?\s*)?$", re.IGNORECASE)
# "... = \\boxed{(15, -11)}$.\nThe answer": a last line that opens the closing answer statement and stops before its
# value was cut at the generation limit; the response never finished, so what it boxed before is no final answer.
_CUT_LEAD_IN_RE = re.compile(r"\n[ \t]*(?:(?:so|thus|hence|therefore),?\s+)?the (?:final )?answer(?:\s+is)?\s*:?\s*$",
                             re.IGNORECASE)


@dataclass(frozen=True)
class Extraction:
    """The final answer of a response, or why there is none."""

    answer: str | None  # the answer text of the winning anchor (None: no answer)
    anchor: str | None = None  # boxed | answer_tag | minerva | phrase | bold | bare | closing | opening
    candidates: tuple[str, ...] = ()  # all final candidates (>1: several boxes or "X or Y")
    joiner: str | None = None  # "or" when the candidates were offered as alternatives
    reason: str | None = None  # no_answer | retracted (when answer is None)
    notes: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class _Anchor:
    start: int
    end: int
    kind: str
    text: str


def strip_thinking(text: str) -> tuple[str, bool]:
    """The part after the last `</think>`; (text, False) when a `<think>` is never closed."""
    head, sep, tail = text.rpartition("</think>")
    if sep:
        return tail, True
    if "<think>" in text:
        return "", False
    return text, True


def _boxes(text: str) -> list[_Anchor]:
    """The last MAX_BOXES boxes (scanning from the end keeps thousands of boxes cheap)."""
    found: list[_Anchor] = []
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
            found.append(_Anchor(start, match.end(), "boxed", match.group(2)))
            continue
        close = matching_brace(text, match.start(1), limit=MAX_ANSWER_CHARS)
        if close < 0:
            continue
        found.append(_Anchor(start, close + 1, "boxed", text[match.start(1) + 1:close]))
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
            end = _SENTENCE_END_RE.search(rest)
            cut = end.start() if end else len(rest)
            return rest[:cut], start + cut
        return inner, start + span.end()
    if (lead := _NEXT_LINE_VALUE_RE.match(rest)) and not text[start + lead.end():].strip():
        # "the answer (Yes or No) is:" then the value alone on the response's last line.
        start += lead.start(1)
        rest = text[start:start + MAX_ANSWER_CHARS]
    end = _SENTENCE_END_RE.search(rest)
    cut = end.start() if end else len(rest)
    # In prose a final "!" is an exclamation ("The answer is 5!"); inside math it is a factorial.
    statement = rest[:cut]
    if "ह" in statement:
        statement = _HINDI_COPULA_RE.sub("", statement)
    return (statement.rstrip().removesuffix("!") if "!" in statement else statement), start + cut


def _anchors(text: str) -> list[_Anchor]:
    anchors = _boxes(text)
    lowered = text.lower()
    # On ASCII text a lowercase find sees what IGNORECASE matches (elsewhere case folding reaches further: 'ſ' is
    # 's'), so the scans below may start at their key words instead of at the top.
    ascii_text = text.isascii()
    tag_matches = list(_ANSWER_TAG_RE.finditer(text))
    if not tag_matches and "/answer>" in lowered:  # a mangled opening needs a closing tag (cheap look first)
        tag_matches = list(_MANGLED_ANSWER_TAG_RE.finditer(text))
    for m in tag_matches:
        anchors.append(_Anchor(m.start(), m.end(), "answer_tag", m.group(1)))
    if (minerva_start := lowered.find("final answer:") if ascii_text else 0) >= 0:
        for m in _MINERVA_RE.finditer(text, minerva_start):
            anchors.append(_Anchor(m.start(), m.end(), "minerva", m.group(1)))
    if (bold_start := text.find("**")) >= 0:  # a bold line opens with "**" after a line start and spaces
        for m in _BOLD_LINE_RE.finditer(text, whitespace_start(text, bold_start)):
            anchors.append(_Anchor(m.start(), m.end(), "bold", m.group(1)))
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
        answer, end = _statement(text, m.end())
        if (deferred := deferred_answer_start(answer, text, end)) is not None:
            answer, end = _statement(text, deferred)  # "is followed by an explanation." then "Yes, it is ..."
        if _VERDICT_ON_ANSWER_RE.match(answer) and not _VALUE_MARK_RE.search(answer):
            continue
        if answer.strip(" *:.\n"):
            anchors.append(_Anchor(m.start(), end, "phrase", answer))
    return anchors


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


def _final_box_group(boxes: list[_Anchor], text: str) -> tuple[list[_Anchor], str | None]:
    """The last box plus the boxes right before it (separated only by short connective text)."""
    group = [boxes[-1]]
    joiner = None
    for previous in reversed(boxes[:-1]):
        # `\\boxed{-2} \\quad \\text{and} \\quad \\boxed{1}`: spacing, delimiters and a textual "and" join boxes.
        gap = _GAP_NOISE_RE.sub(" ", text[previous.end:group[0].start])
        if len(gap) > 40 or "\n\n" in gap or re.search(r"[a-zA-Z]{4,}", gap.replace("and", "")):
            break
        if re.search(r"\bor\b", gap):
            joiner = "or"
        group.insert(0, previous)
    return group, joiner


def _boxed_alternatives_before(text: str, last: _Anchor, anchors: list[_Anchor]) -> tuple[str, ...] | None:
    """The boxes the sentence right before the final answer line offers as alternatives ("$\\boxed{2}$ or
    $\\boxed{3}$."), or None: boxes mark final answers, so an answer line that picks one of them after they were
    offered joined by "or" leaves the hedge standing (the verifier scores it as the "or" it is)."""
    boxes = [a for a in anchors if a.kind == "boxed" and a.end <= last.start]
    if len(boxes) < 2 or not _ALTERNATIVES_GAP_RE.match(text, boxes[-1].end, last.start):
        return None
    group, joiner = _final_box_group(boxes, text)
    return tuple(box.text.strip() for box in group) if joiner == "or" and len(group) > 1 else None


def extract_answer(response: str, *, minerva_only: bool = False, question: str = "") -> Extraction:
    """The final answer of a response under the anchor policy (see module docstring); `question`, the item's
    prompt, lets a closing sentence answer a "which"/"who" question in its own words."""
    text, closed = strip_thinking(response)
    if not closed:
        return Extraction(None, reason="no_answer", notes={"think": "unterminated"})
    text = clean_text(text)
    if "<<" in text:
        text = _CALCULATOR_RE.sub("", text)
    if text[-40:].rstrip().endswith((">", ">user", ">assistant", ">system")):
        text = _TEMPLATE_TAIL_RE.sub("", text)
    if _CUT_LEAD_IN_RE.search(text[-60:]):
        return Extraction(None, reason="no_answer", notes={"cut": "answer lead-in"})
    if minerva_only:
        anchors = [_Anchor(m.start(), m.end(), "minerva", m.group(1)) for m in _MINERVA_RE.finditer(text)]
    else:
        anchors = _anchors(text)
    if not anchors:
        bare = text.strip()
        core = _BARE_PERCENT_RE.sub("", bare) if bare.endswith(("%", "percent", "pct")) else bare  # cheap look first
        if core and "\n" not in bare and _BARE_ANSWER_RE.match(core) and not _WORD_RE.search(core):
            return Extraction(bare, "bare", (bare,))
        if minerva_only or (closing := closing_answer(text, question)) is None:
            if not minerva_only and (count := opening_count(text, question)) is not None:
                return Extraction(count, "opening", (count,))  # an answer-first response, only explained after
            return Extraction(None, reason="no_answer")
        candidates, joiner = closing
        if not candidates:
            return Extraction(None, "closing", reason="hedged")
        return Extraction(", ".join(candidates), "closing", candidates, joiner)
    last = max(anchors, key=lambda a: (a.start, a.end))
    # "The answer (arabic numerals) is 99. The answer (words) is ninety-nine.": the words say the answer again (not
    # where the words are what the statement that asks for digits gives: "The answer is 37. The answer (arabic
    # numerals) is thirty-seven.").
    if last.kind == "phrase" and not asks_for_digits(text, last.start) and (
            earlier := [a for a in anchors if a.end <= last.start]):
        previous = max(earlier, key=lambda a: (a.start, a.end))
        if restated_in_words(sentence_value(previous.text.strip().strip("*").strip()), last.text):
            anchors, last = [a for a in anchors if a is not last], previous
    # Anchors that contain the winner (a phrase whose statement holds the box) yield to the inner box.
    tail = text[max(a.end for a in anchors if a.start >= last.start or a.end >= last.end):]
    if _is_retracted(tail):
        return Extraction(None, last.kind, reason="retracted", notes={"retracted_answer": last.text.strip()})
    if contradicts_indeterminate(text[:last.start], last.text):  # "... can be any real number.\nThe answer is: 0"
        return Extraction(None, last.kind, reason="hedged", notes={"hedged_answer": last.text.strip()})
    if last.kind != "boxed" and (offered := _boxed_alternatives_before(text, last, anchors)):
        # "... is $\\boxed{2}$ or $\\boxed{3}$.\nThe answer is: 2": the line picks one, taking no other back
        return Extraction(", ".join(offered), "boxed", offered, "or")
    if len(last.text.split()) > 8 and _UNFINISHED_CONCLUSION_RE.search(tail[-200:]):
        # "is it notes remaining overall, so we can say that she started with 23 + 140 = 163 post-it notes.
        # Therefore, the": a sentence of working where the answer goes, then cut off as it began to conclude, so it
        # has no answer (a short answer, "E.", stands however the working after it ends).
        return Extraction(None, last.kind, reason="truncated", notes={"truncated_answer": last.text.strip()})
    if (last.kind in ("phrase", "boxed", "answer_tag") and _is_hedged(text, last)) or _OR_NEXT_RE.match(tail):
        return Extraction(None, last.kind, reason="hedged", notes={"hedged_answer": last.text.strip()})
    if last.kind == "boxed":
        boxes = [a for a in anchors if a.kind == "boxed"]
        group, joiner = _final_box_group(boxes, text)
        rest = text[group[-1].end:group[-1].end + 200]
        rest = rest[:end.start()] if (end := _SENTENCE_END_RE.search(rest)) else rest
        if (why := qualified_boxes(text, [(b.start, b.end, b.text) for b in group], rest, question)) is not None:
            return Extraction(None, "boxed", reason=why, notes={f"{why}_answer": group[-1].text.strip()})
        # A box holding a sentence ("\\boxed{Therefore $x \\geq 5$ is the solution.}") holds its value.
        candidates = tuple(sentence_value(box.text.strip()) if "$" in box.text else box.text.strip() for box in group)
        if len(candidates) == 1 and (word := magnitude_after(text[group[-1].end:])):
            candidates = (f"{candidates[0]} {word}",)  # "\\boxed{3} hundred"
        if len(candidates) == 1:
            parts = tuple(p.strip() for p in _OR_SPLIT_RE.split(candidates[0]) if p.strip())
            if len(parts) > 1:
                return Extraction(candidates[0], "boxed", parts, "or")
        return Extraction(candidates[-1] if len(candidates) == 1 else ", ".join(candidates), "boxed",
                          candidates, joiner if len(candidates) > 1 else None)
    answer = re.sub(r"(?<!\.)\.$", "", last.text.strip().strip("*").strip()).strip()
    if _DISOWNED_RE.match(answer):
        return Extraction(None, last.kind, reason="retracted", notes={"retracted_answer": answer})
    statement = answer
    inner_boxes = _boxes(answer)
    if inner_boxes:
        answer = inner_boxes[-1].text.strip()
    elif last.kind in ("phrase", "minerva", "bold", "answer_tag"):
        if (worked := worked_value(answer)) is not None:  # "35. (20 + 15 = 35": the value, then its working
            answer = statement = worked
        # An answer tag holding a sentence ("<answer> 5 hours x $12 = $60. </answer>") holds its value, as a box does.
        ended = text[last.end:last.end + 1] in (".", "!")  # a cut-off sentence may not qualify its value yet
        answer = sentence_value(answer, ended=ended, question=question)
        # "The answer is 5, wait, that is wrong.": the statement itself takes its value back.
        if _is_retracted(statement[statement.rfind(answer) + len(answer):]):
            return Extraction(None, last.kind, reason="retracted", notes={"retracted_answer": answer})
    # A bound ("at least 360") or a second answer ("12, but it could be 13") around the value; a magnitude word.
    why, answer = qualified_statement(statement, answer, question)
    if why is not None:
        return Extraction(None, last.kind, reason=why, notes={f"{why}_answer": answer})
    parts = tuple(p.strip() for p in _OR_SPLIT_RE.split(answer) if p.strip())
    if len(parts) > 1:
        return Extraction(answer, last.kind, tuple(parts), "or")
    return Extraction(answer, last.kind, (answer,))


def _is_hedged(text: str, anchor: _Anchor) -> bool:
    """"Maybe the answer is 5, but I am not sure": a hedge word in the anchor's own sentence."""
    floor = max(0, anchor.start - 300)
    start = max(text.rfind(". ", floor, anchor.start), text.rfind("\n", floor, anchor.start), floor - 1) + 1
    window = text[start:min(len(text), anchor.end + 80)]
    lowered = window.lower()
    if not any(word in lowered for word in _HEDGE_HINTS):
        return False
    end = _SENTENCE_END_RE.search(window, anchor.end - start)
    return bool(ANCHOR_HEDGE_RE.search(window[:end.start() if end else len(window)]))


def _is_retracted(tail: str) -> bool:
    tail = tail[:4000]
    match = _RETRACTION_RE.search(tail)
    if not match:
        return False
    # "Wait, let me double-check: ... yes, correct." keeps the answer.
    return not _CONFIRMATION_RE.search(tail[match.end():])
