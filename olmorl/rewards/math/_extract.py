"""Which answer counts: the final-answer anchor of a response.

The anchors are found by `_anchors` (boxes, answer tags, Minerva's closing line, answer phrases in several
languages, bold answer lines, a last `A: 18` line). Chat-template tokens ending a response are dropped first.
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

from olmorl.rewards.math._anchors import MINERVA_RE, SENTENCE_END_RE, Anchor, find_anchors, last_boxes
from olmorl.rewards.math._closing import closing_answer
from olmorl.rewards.math._indeterminate import contradicts_indeterminate
from olmorl.rewards.math._normalize import clean_text
from olmorl.rewards.math._number_words import asks_for_digits, restated_in_words
from olmorl.rewards.math._qualifiers import magnitude_after, qualified_boxes, qualified_statement
from olmorl.rewards.math._question_echo import ANCHOR_HEDGE_RE, opening_count
from olmorl.rewards.math._sentence_value import sentence_value, worked_value

# Hedge words: a cheap look before the hedge pattern runs (most responses have none).
_HEDGE_HINTS = ("maybe", "perhaps", "possibl", "probabl", "not sure", "not certain", "unsure", "guess")
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
# Chat-template tokens a response may end with ("... I hope it is correct. <|im_start|>user"): not part of it.
_TEMPLATE_TAIL_RE = re.compile(r"(?:\s*(?:<\|[A-Za-z_]{2,20}\|>(?:user|assistant|system)?|</s>))+\s*$")
# GSM8K's calculator annotation (`$<<9*2=18>>18`, `= <<2+1=3>>3 bolts`): models trained on GSM8K solutions write it
# before the value it computes; a reader sees the value, so the annotation is dropped before any anchor is read.
_CALCULATOR_RE = re.compile(r"<<[^<>\n]{1,200}?=[^<>\n]{1,60}?>>")
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
# A sentence in words inside a box: a capitalised word, at least two more words, one number, a full stop.
_BOXED_SENTENCE_RE = re.compile(r"^[A-Z][a-z]+(?:\s+[^\s\d]+)*\s+\$?\d[\d,]*(?:\.\d+)?(?:\s+[^\s\d]+)+\.$")
_CUT_LEAD_IN_RE = re.compile(r"\n[ \t]*(?:(?:so|thus|hence|therefore),?\s+)?the (?:final )?answer(?:\s+is)?\s*:?\s*$",
                             re.IGNORECASE)
# A sentence written in LaTeX pieces: its words in `\text{...}` (or `\mbox{...}`), e.g. "Pam \text{ pays } \$10 \text{ more
# than Susan}"; read as the same words once the pieces are unwrapped, when nothing but words and one number is left.
_TEXT_PIECE_RE = re.compile(r"\\(?:text|mbox)\{([^{}]*)\}")


@dataclass(frozen=True)
class Extraction:
    """The final answer of a response, or why there is none."""

    answer: str | None  # the answer text of the winning anchor (None: no answer)
    anchor: str | None = None  # boxed | answer_tag | minerva | phrase | bold | bare | closing | opening
    candidates: tuple[str, ...] = ()  # all final candidates (>1: several boxes or "X or Y")
    joiner: str | None = None  # "or" when the candidates were offered as alternatives
    reason: str | None = None  # no_answer | retracted (when answer is None)
    notes: dict[str, object] = field(default_factory=dict)


def strip_thinking(text: str) -> tuple[str, bool]:
    """The part after the last `</think>`; (text, False) when a `<think>` is never closed."""
    head, sep, tail = text.rpartition("</think>")
    if sep:
        return tail, True
    if "<think>" in text:
        return "", False
    return text, True


def _final_box_group(boxes: list[Anchor], text: str) -> tuple[list[Anchor], str | None]:
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


def _boxed_alternatives_before(text: str, last: Anchor, anchors: list[Anchor]) -> tuple[str, ...] | None:
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
        anchors = [Anchor(m.start(), m.end(), "minerva", m.group(1)) for m in MINERVA_RE.finditer(text)]
    else:
        anchors = find_anchors(text)
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
    if last.kind == "boxed" and tail.rstrip().endswith("="):
        # "&= \\boxed{6}.\n\\end{align*}\nEquality occurs when $x^2 = 2y^2,$ or $x =": the working went on past the box
        # and was cut inside an equation (the generation limit), so the response never finished: no final answer.
        return Extraction(None, last.kind, reason="truncated", notes={"truncated_answer": last.text.strip()})
    if (last.kind in ("phrase", "boxed", "answer_tag") and _is_hedged(text, last)) or _OR_NEXT_RE.match(tail):
        return Extraction(None, last.kind, reason="hedged", notes={"hedged_answer": last.text.strip()})
    if last.kind == "boxed":
        boxes = [a for a in anchors if a.kind == "boxed"]
        group, joiner = _final_box_group(boxes, text)
        rest = text[group[-1].end:group[-1].end + 200]
        rest = rest[:end.start()] if (end := SENTENCE_END_RE.search(rest)) else rest
        if (why := qualified_boxes(text, [(b.start, b.end, b.text) for b in group], rest, question)) is not None:
            return Extraction(None, "boxed", reason=why, notes={f"{why}_answer": group[-1].text.strip()})
        # A box holding a sentence ("\\boxed{Therefore $x \\geq 5$ is the solution.}", "\\boxed{Jim walks 200 feet
        # less than Martha.}") holds its value, read as a closing sentence is.
        candidates = tuple(_boxed_value(box.text.strip(), question) for box in group)
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
    inner_boxes = last_boxes(answer)
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


def _boxed_value(text: str, question: str) -> str:
    """A box's answer: its text, or the value of the sentence it holds (math in `$`, or words with one number that
    the closing-sentence reader takes as stated)."""
    if (words := _text_pieces_sentence(text)) is not None and _BOXED_SENTENCE_RE.match(words) \
            and (closing := closing_answer(words, question)) is not None and len(closing[0]) == 1:
        return closing[0][0]  # "Pam \\text{ pays } \\$10 \\text{ more than Susan}": the sentence's words, as stated
    if "$" in text:
        return sentence_value(text)
    if _BOXED_SENTENCE_RE.match(text) and (closing := closing_answer(text, question)) is not None \
            and len(closing[0]) == 1:
        return closing[0][0]  # what the sentence would state as the response's closing (no denial, condition, hedge)
    return text


def _text_pieces_sentence(text: str) -> str | None:
    """A box's sentence written in `\\text{...}` pieces, unwrapped to plain words ending in a full stop (the box closes
    it), or None: no piece, or a command, brace, power, index or equals sign left among the words."""
    if not _TEXT_PIECE_RE.search(text):
        return None
    plain = " ".join(_TEXT_PIECE_RE.sub(lambda m: f" {m.group(1)} ", text).replace("\\$", "$").split())
    if not plain or re.search(r"[\\{}^_=]", plain):
        return None
    return plain if plain.endswith(".") else plain + "."


def _is_hedged(text: str, anchor: Anchor) -> bool:
    """"Maybe the answer is 5, but I am not sure": a hedge word in the anchor's own sentence."""
    floor = max(0, anchor.start - 300)
    start = max(text.rfind(". ", floor, anchor.start), text.rfind("\n", floor, anchor.start), floor - 1) + 1
    window = text[start:min(len(text), anchor.end + 80)]
    lowered = window.lower()
    if not any(word in lowered for word in _HEDGE_HINTS):
        return False
    end = SENTENCE_END_RE.search(window, anchor.end - start)
    return bool(ANCHOR_HEDGE_RE.search(window[:end.start() if end else len(window)]))


def _is_retracted(tail: str) -> bool:
    tail = tail[:4000]
    match = _RETRACTION_RE.search(tail)
    if not match:
        return False
    # "Wait, let me double-check: ... yes, correct." keeps the answer.
    return not _CONFIRMATION_RE.search(tail[match.end():])
