"""Final answers stated without an anchor: the closing statement of a response.

Used only when a response has no anchor at all (no box, no "the answer is", no Minerva line). What counts:

- the last math span when it ends the response (`... so $x = 5$.`, a last display equation `\\[ A = 189 \\]`),
  with at most a short unit after it; an equation chain gives its last side (`$3 + 4 = 7$` -> `7`);
- a closing sentence that opens with a conclusion word (Therefore, Thus, So, Hence, In total, Together, Donc, Por lo
  tanto, 所以, ...) and ends with a number (`Therefore, the total is 42 dollars.`, `So it rose by 25 percent.`,
  `所以，小明一共有11个苹果。`), or states a count as its only number (`Therefore, there are 12 sequences
  that ...`); of several numbers, a restated given ("all 12 racquets") is not the answer (`_restated`);
- a last sentence that names a quantity and states its value (`The total number of apples is 7.`, `Mary's
  average speed is 6 miles per hour.`, after a reason: `Since ..., the least number is 90.`; with a math span it may end the response without a full stop: `The solution is $x \neq 5$`); a tuple may be
  written in plain text (`The polar coordinates are (3, π/2).`), then right after the copula and ending the
  sentence;
- the short closing after a program's output block (tool-integrated reasoning): `Janet has 18 apples left.`, its
  count in words at its head (`Four containers were imported on the second day.`), or the count the program
  printed at its head with givens after it (`3.0`, then `Three trucks will be needed to transport 80 flagstones.`);
- a closing sentence whose subject is a name and whose number follows its verb (`Jojo scored 54 points.`, `Kylar
  needs to pay $64 for the 16 glasses.`: other numbers only restating givens), a companion named through the name
  included (`Edward and his friend spent 54 dollars in total.`);
- a closing sentence that computes its value in one plain-text arithmetic chain and ends with the result (`She
  makes 9 * $2 = $18 per day at the farmers' market.`: the chain's last side, as a math span's; not after a
  condition or a denial, nor with a second chain);
- for a question that asks a difference ("How much more ... than Grant?"), a closing sentence whose value comes
  before that comparative: `Therefore, Juanita spends $60.00 more annually on the newspaper than Grant.`;
- a response that is nothing but a value and its unit (`2 shelves.`);
- for a question "Which student has the greatest average speed?" (or "Who ...?"), a closing sentence that names
  one in the question's own words: `Evelyn has the greatest average speed at approximately 3.6 miles per hour.`
  gives Evelyn (not when the sentence goes on with a contrast, a denial or an alternative);
- for a question "How many possible numbers ...?", a closing count in the question's own words (`There are four
  possible numbers that ...`, `The graph has two y-intercepts: ...`), in digits or a number word.
- for a question with a slot for its number ("The square of what other number is 225?"), the question's own sentence
  with the slot filled by one number, every other word copied (`The square of -15 is also 225.` gives -15).

The end is read as rendered: Markdown emphasis is dropped (`is **5 * 45 = 225**.`), a statement ending in "are:"
with one listed item after it reads as one sentence ("The solutions are:" then `* **x = 5**`), and an offer
on its own last line ("Let me know if you'd like ...") is passed over.

What never counts: a number or math span that is followed by more reasoning (only the very end of the
response is read), a closing sentence with none of the above ("12 apples minus 5 is 7 apples."), a
question, a denied or bounded value ("The total is not 5.", "between 3 and 5", "at least 5" unless the question
asks for the least: `_qualifiers`), and a hedge ("maybe 5",
"either 6 or 8", "$4$ or $6$": reported as several candidates, which the verifier scores as a hedge), and
several values that nothing singles out ("So he spent 20 minutes on 4 tasks.").
"""

from __future__ import annotations

import re

from olmorl.rewards.math._normalize import whitespace_start
from olmorl.rewards.math._qualifiers import bound_stated, magnitude_after
from olmorl.rewards.math._question_echo import (
    ENDED_RE as _ENDED_RE,
    UNIT_WORD as _UNIT_WORD,
    asked_difference,
    echoed_count,
    echoed_fraction,
    filled_question,
    named_answer,
    unasked_comparison,
)
from olmorl.rewards.math._restated import plain_tail, restates_given, stated_value
from olmorl.rewards.math._rewritten_closing import ends_in_rewrite, rewritten_closing
from olmorl.rewards.math._tool_closing import DENIAL_RE as _DENIAL_RE
from olmorl.rewards.math._tool_closing import after_tool_output, opening_count, printed_count, worded_count

# An inline `$...$` does not close right before a digit (as in Pandoc): the dollar signs of currency amounts
# (`$5 * 0.6 = $3`, `$40 + $24 = $64`) pair into no math span.
_MATH_RE = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|\$((?:\\.|[^$\\])+?)\$(?!\d)", re.DOTALL)
_SIGN_OFF_RE = re.compile(
    r"\s*(?:I hope (?:it|this) is correct|Hope (?:this|that) helps)[.!]?\s*$|"
    # an offer on its own last line ("Let me know if you'd like to explore other problems!") adds no answer
    r"\n\s*Let me know if you(?:'d| would)? [^\n]*$",
    re.IGNORECASE,
)
# "The solutions are:" then one listed item ending the response ("* **x = 5**") or one bare line ("5 - 2 = 3").
_LISTED_VALUE_RE = re.compile(r"(?:^|\n)([^\n]*?\b(?:is|are)):[ \t]*\n\s*(?:[*\-\u2022][ \t]+)?([^\n]+?)[ \t]*$")
# What may follow the final value: punctuation and up to three short words ("square units", "dollars a day"),
# a word may be a rate unit ("km/h", "m/s"). (Or a few CJK characters: a counter and its noun, "11个苹果".)
_AFTER_FINAL_RE = re.compile(
    rf"^[ \t]*(?:\\?%|{_UNIT_WORD}(?:[ \t]+{_UNIT_WORD}){{0,2}}|[\u4e00-\u9fff]{{1,6}})?[ \t]*[.!。]?\s*$"
)

_SENTENCE_BOUNDARY_RE = re.compile(r"(?<=[.!?。])\s+|\n")
_CONCLUSION_RE = re.compile(
    r"^\W*(?:therefore|thus|so|hence|consequently|finally|overall|altogether|together(?!\s+with\b)|"
    r"in (?:total|conclusion|summary|all)|"
    r"as a result|this (?:means|gives)|that means|donc|ainsi|par cons[ée]quent|por lo tanto|entonces|as[ií] que|"
    r"daher|somit|portanto|quindi|pertanto|итак|следовательно|поэтому|таким образом|значит|因此|所以|故)\b",
    re.IGNORECASE,
)

_HEDGE_RE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|might be|could be|either|not (?:sure|certain)|unsure|i guess)\b",
    re.IGNORECASE,
)
_NUMBER_RE = re.compile(
    r"(?<![A-Za-z0-9_.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?(?:\s*(?:\\?%|percent\b|per cent\b))?|"
    # a bare LaTeX value outside math delimiters: `\sqrt{17}`, `3\sqrt{2}`, `\frac{3}{4}`
    r"(?<![\w.])[-+]?(?:\d+\s*)?\\sqrt\s*\{\w+\}|(?<![\w.])[-+]?\\[dt]?frac\s*\{\d+\}\s*\{\d+\}"
)
# "The total number of apples is 7.": a sentence that names a quantity and states its value, ending the
# response (a definite subject and a copula; "12 apples minus 5 is 7 apples." is arithmetic, not a statement).
_STATEMENT_RE = re.compile(
    # a reason may come first: "Since M must be an integer (...), the least possible number ... is 90."
    r"^\W*(?:(?i:since|because)\b[^.!?]{1,160}?,\s+)?(?:(?i:the|this|our|her|his|their|its)|"
    # a name's possessive as the determiner: "Mary's average speed is 6 miles per hour." (not "Let's", "It's")
    r"(?!(?:Let|It|That|There|Here|What|Who|He|She|This)['’]s\b)[A-Z][a-z]+['’]s)"
    r"\s+[^.!?]{1,120}?\b(?i:is|are|was|were|equals|comes to|will be)\s",
)
# A tuple written in plain text rather than in a math span ("(3, π/2)", read as "(3, \\pi /2)"; "(2, -6)"): its
# terms are numbers, fractions and multiples of \\pi or of a root.
_PLAIN_TERM = r"[-+]?(?:(?:\d+(?:\.\d+)?)?\s*(?:\\pi\b|\\sqrt\s*\{?\d+\}?)|\d+(?:\.\d+)?)\s*(?:/\s*\d+)?"
_PLAIN_TUPLE_RE = re.compile(rf"[ \t]*(\(\s*{_PLAIN_TERM}(?:\s*,\s*{_PLAIN_TERM})+\s*\))")

_COUNT_RE = re.compile(
    r"\bthere (?:are|is|were|was|will be|would be) (?:exactly |a total of )?\d[\d,]*\b", re.IGNORECASE
)
# "Jojo scored 54 points.": a closing sentence whose subject is a name, its value right after the verb (an auxiliary
# may come first: "Tim will need 48 lemons."; or "to" and a second verb: "Kylar needs to pay $64"; or a second
# name the verb takes: "Mandy should give Benedict $106."). The name may have a companion named through it ("Edward
# and his friend spent 54 dollars in total."). Words that open reasoning are not names.
_NAMED_SUBJECT_RE = re.compile(
    r"^(?!(?:If|When|Then|So|But|And|Now|First|Next|Since|After|Before|Let|We|It|He|She|They|You|There|This|"
    r"That|These|Those|Each|Every|All|Both|Total|Step)\b)[A-Z][a-z]+"
    r"(?:\s+(?:and\s+)?[A-Z][a-z]+|\s+and\s+(?:his|her|their)\s+[a-z]{2,12})?"
    r"\s+(?:(?:will|would|can|could|must|should|did)\s+)?[a-z]{2,12}(?:\s+to\s+[a-z]{2,12})?(?:\s+[A-Z][a-z]+)?"
    r"\s+(?:a total of\s+|exactly\s+)?\$?(?=\d)"
)
# A response that is one short sentence: a value and its unit ("2 shelves.", "6 cupcakes"); words that make it
# a comment on the value ("5 is wrong.", "7 or more") rule it out.
_LONE_VALUE_WORDS_RE = re.compile(
    r"\b(?:is|are|was|were|be|not|no|or|and|but|than|too|wrong|incorrect|right|correct)\b", re.IGNORECASE
)
# A program's output block (tool-integrated reasoning); the sentence after it may state the answer plainly.
# What makes the final value not the answer: a denial ("is not 5") or a bound ("more than 5", "between 3 and 5";
# "at least 5" and the other bounds: `_qualifiers.bound_stated`).
_DENIAL_WORD = r"(?:\bnot|\bnever|n't|\bcannot)"
_NEGATED_RE = re.compile(
    rf"(?:(?:{_DENIAL_WORD}|\bno longer)\s+(?:(?:be|equal|equals|equal to|exceed|exceeds)\s+)?|"
    r"\b(?:more|less|fewer|greater|larger|smaller|higher|lower) than\s+|"
    r"\bbetween\s+\S{1,20}\s+and\s+)\W{0,3}$",
    re.IGNORECASE,
)
# The value as the object of a denied verb: "it will not take 16 years", "she doesn't have 16 apples", "he won't need
# to buy 16". A copula or a total among the words between ("who did not pass is 16", "those that didn't sell total
# 16") makes the denial part of the subject, and the value is stated.
_DENIED_OBJECT_RE = re.compile(
    rf"{_DENIAL_WORD}\s+(?:(?!(?:is|are|was|were|be|been|equals?|totals?|numbers?|amounts?|comes?)\b)"
    r"[a-z]+\s+){1,3}\$?$",
    re.IGNORECASE,
)
# A plain-text arithmetic chain: "=" right before the value, an operator between two numbers before it ("9 * $2",
# "$200,000 - $130,000", "180 meters/session * 3 sessions/week"); a clause break separates two chains.
_CHAIN_EQUALS_RE = re.compile(r"=[ \t]*\$?[ \t]*\Z")
_ARITHMETIC_RE = re.compile(r"\d[^=\d]{0,25}?(?:[-+*/×÷·−]|\\times|\\cdot|\bx\b)[ \t]*\$?\(?[ \t]*\d")
_CLAUSE_BREAK_RE = re.compile(r",\s|;|\b(?:and|then)\b", re.IGNORECASE)
_CONDITION_RE = re.compile(r"^\W*(?:if|when|suppose|assume|assuming|let|check|checking|verify)\b", re.IGNORECASE)
# A display equation on its own lines inside a sentence that goes on in lower case after it ("Thus, they spent:\n
# \\[ 60 \\text{ dollars} \\]\non the entire basket."): one sentence, the display in its place.
_DISPLAY_IN_SENTENCE_RE = re.compile("(?<![.!?\u3002])[ \t]*\n[ \t]*([\uE000-\uF8FF])[ \t]*\n(?=[ \t]*[a-z])")
_OR_RE = re.compile(r"\bor\b|\\text\{\s*or\s*\}", re.IGNORECASE)
_JOIN_RE = re.compile(r"^[\s,;]*(?:and|,|\\text\{\s*and\s*\})?[\s,;]*$", re.IGNORECASE)
# Markdown emphasis around prose or a value (`is **225**.`, `*a + b = **5***.`): an opening run of 1-3 asterisks
# not after a word character and not before a space, closed by a run of the same length after a non-space and
# not before a word character, the way a renderer reads them; `5 * 45` (spaced) and `2*3` (after a digit) stay
# multiplication, a `* ` bullet stays a bullet.
_EMPHASIS_RE = re.compile(r"(?<![\\\w*])(\*{1,3})(?=[^\s*])(.+?)(?<=\S)\1(?!\w)")
_PLACEHOLDER_BASE = 0xE000  # math span k is masked as the private-use character U+E000+k (no digits to misread)
_PLACEHOLDER_RE = re.compile("[\uE000-\uF8FF]")


def closing_answer(text: str, question: str = "") -> tuple[tuple[str, ...], str | None] | None:
    """(candidates, joiner) stated at the very end of `text`, or None when the end states no answer.

    `joiner` is "or" when the candidates are offered as alternatives (a hedge); an empty candidate tuple
    with joiner "hedge" means a hedged closing sentence ("maybe 5")."""
    body = _listed_value(_without_sign_off(text.rstrip()).rstrip())
    if not body:
        return None
    if ends_in_rewrite(body):  # "... is **3/24**. This can be simplified to **1/8**.": the value just stated
        return rewritten_closing(body, question, closing_answer)
    spans: list[str] = []
    display: list[bool] = []

    def mask(match: re.Match[str]) -> str:
        spans.append(next(g for g in match.groups() if g is not None).strip())
        display.append(match.group(1) is not None or match.group(2) is not None)
        return chr(_PLACEHOLDER_BASE + min(len(spans) - 1, 0x18FF))

    masked = _without_emphasis(_MATH_RE.sub(mask, body[-4000:]))
    sentence = _last_sentence(_DISPLAY_IN_SENTENCE_RE.sub(r" \1 ", masked))
    if not sentence or sentence.rstrip().endswith("?"):
        return None
    if (echoed := echoed_count(sentence, question)) is not None:
        return (echoed,), None
    if (fraction := echoed_fraction(sentence, question)) is not None:
        return (fraction,), None
    if (filled := filled_question(sentence, question)) is not None:
        return (filled,), None
    if _HEDGE_RE.search(_PLACEHOLDER_RE.sub(" ", sentence)):
        return (), "hedge"
    if sentence == masked.strip() and (lone := _lone_value(sentence)) is not None:
        return (lone,), None
    final = list(_PLACEHOLDER_RE.finditer(sentence))
    # After a span in a conclusion sentence, words that only qualify its value may follow, as after a plain value
    # ("Thus, Ingrid was \\( 165 \\) minutes late to the party.").
    if final and (_AFTER_FINAL_RE.match(after := sentence[final[-1].end():])
                  or (_CONCLUSION_RE.match(sentence) and plain_tail(after))):
        # An inline span must end a finished sentence (a full stop, or alone on its line): a response cut
        # off right after "... we get $21$" has not stated an answer yet. A display equation stands alone, and
        # so does a statement of what the value is ("The solution is $x \neq 5$" as the last line).
        if (display[ord(final[-1].group(0)) - _PLACEHOLDER_BASE] or _ENDED_RE.search(after)
                or sentence == final[-1].group(0) or (_STATEMENT_RE.match(sentence) and not after.strip())):
            if _negated(sentence, final[-1].start()) or _restated_after_value(sentence, final[-1]) \
                    or bound_stated(sentence[:final[-1].start()], after, question):
                return None
            values, joiner = _final_spans(sentence, final, spans)
            if len(values) == 1 and (word := magnitude_after(after)):
                values = (f"{values[0]} {word}",)  # "$3$ hundred": the magnitude is part of the number
            return values, joiner
        return None
    if (name := named_answer(sentence, question)) is not None:
        return (name,), None
    if (plain := _plain_tuple(sentence)) is not None:
        return (plain,), None
    numbers = list(_NUMBER_RE.finditer(sentence))
    named = bool(numbers) and (subject := _NAMED_SUBJECT_RE.match(sentence)) is not None \
        and subject.end() == numbers[0].start()
    after_output = after_tool_output(body)
    anchored = bool(_CONCLUSION_RE.match(sentence) or _STATEMENT_RE.match(sentence) or after_output)
    if (result := _chain_result(sentence, numbers)) is not None:
        return (result,), None
    if numbers and after_output and (opened := opening_count(sentence)) is not None \
            and numbers[-1].start() > opened.start(1):
        if (printed := printed_count(opened, sentence, body)) is not None:
            return (printed,), None
        if not opened.group(1).isdigit():
            return None  # "Three trucks ... 80 crates": the count in words is the value, never the given after it
    if not (named or anchored):
        return None
    if len(numbers) == 1 and _ENDED_RE.search(sentence) and _CONCLUSION_RE.match(sentence):
        # "Therefore, there are 12 distinct sequences that meet the conditions.": a count, its only number.
        count = _COUNT_RE.search(sentence)
        if count is not None and count.end() == numbers[0].end():
            after = sentence[numbers[0].end():]
            if bound_stated(sentence[:numbers[0].start()], after, question):
                return None  # "there are at least 12 sequences"
            word = magnitude_after(after)
            return (f"{numbers[0].group(0)} {word}" if word else numbers[0].group(0),), None
    if not numbers:
        return worded_count(sentence) if after_output else None
    ends = bool(_AFTER_FINAL_RE.match(after := sentence[numbers[-1].end():])) and bool(_ENDED_RE.search(after))
    if ends and len(numbers) > 1 and _OR_RE.search(sentence[numbers[-2].end():numbers[-1].start()]):
        return (numbers[-2].group(0), numbers[-1].group(0)), "or"
    # Several numbers: the one that states the answer, not a restated given ("227 minutes to string all 12
    # racquets"); None when the sentence does not single one out.
    value = numbers[0] if len(numbers) == 1 else stated_value(sentence, numbers, question)
    # The last value may be followed by more than a unit when the rest only qualifies it ("Thus, Ingrid was 165
    # minutes late to the party."); a condition, contrast, comparison or more arithmetic there says something else.
    if value is None or (value is numbers[-1] and not ends and not plain_tail(sentence[value.end():])
                         and not asked_difference(sentence[value.end():], question)) \
            or _negated(sentence, value.start()) or unasked_comparison(sentence[value.end():], question) \
            or bound_stated(sentence[:value.start()], sentence[value.end():], question):
        return None
    if not anchored and value is not numbers[0]:
        # A named subject states the value right after its verb; its sentence's other numbers may only restate
        # givens ("Kylar needs to pay $64 for the 16 glasses.").
        return None
    word = magnitude_after(sentence[value.end():])
    return (f"{value.group(0)} {word}" if word else value.group(0),), None


def _chain_result(sentence: str, numbers: list[re.Match[str]]) -> str | None:
    """"She makes 9 * $2 = $18 per day at the farmers' market.": the result of the one arithmetic chain a closing
    sentence computes, its last value, read as the last side of a math span's chain is. Only a finished sentence
    whose chain ends it (then a unit, or words that only qualify the value); not a condition, a denial, or a
    sentence with a second chain."""
    if not numbers or _CONDITION_RE.match(sentence):
        return None
    value = numbers[-1]
    equals = _CHAIN_EQUALS_RE.search(sentence, 0, value.start())
    if equals is None or not _ARITHMETIC_RE.search(sentence[max(0, equals.start() - 60):equals.start()]):
        return None
    clause = max((b.end() for b in _CLAUSE_BREAK_RE.finditer(sentence, 0, equals.start())), default=0)
    if "=" in sentence[:clause]:  # "9 * 2 = 18 per day and 3 * 2 = 6 per night": which one is asked?
        return None
    after = sentence[value.end():]
    ends = bool(_AFTER_FINAL_RE.match(after)) and bool(_ENDED_RE.search(after))
    if not (ends or plain_tail(after)) or _DENIAL_RE.search(sentence, 0, value.start()):
        return None
    return value.group(0)


# The end-anchored patterns below are searched from where a match could start, not from the top: these scans ran
# over the whole response, which costs a long one (100,000 characters) milliseconds each.
_SIGN_OFF_CHARS = len("I hope this is correct.")  # the longest sign-off, after the whitespace before it


def _without_sign_off(text: str) -> str:
    """`text` (right-stripped) without a sign-off ending it: `_SIGN_OFF_RE`'s one match, from the whitespace before
    the sign-off (its last characters) or before the last line (the offer)."""
    start = whitespace_start(text, max(0, len(text) - _SIGN_OFF_CHARS))
    if (last_newline := text.rfind("\n")) >= 0:
        start = min(start, whitespace_start(text, last_newline))
    found = _SIGN_OFF_RE.search(text, start)
    return text[:found.start()] if found else text


def _listed_value(body: str) -> str:
    """"The solutions are:\n* x = 5" (or "...is:\n\n3") ends as the sentence "The solutions are x = 5." (one item)."""
    # The item is the last line; the statement is the line before the blank lines over it, so a match starts at
    # that line's newline (or at the top).
    if (last_newline := body.rfind("\n")) < 0:
        return body
    m = _LISTED_VALUE_RE.search(body, max(0, body.rfind("\n", 0, whitespace_start(body, last_newline))))
    if m is None or not _STATEMENT_RE.match(m.group(1).strip() + " "):
        return body
    return f"{body[:m.start(1)]}{m.group(1).strip()} {m.group(2).rstrip('.')}."


def _without_emphasis(text: str) -> str:
    """The text as rendered: emphasis markers dropped, nested ones too (math spans are masked already)."""
    for _ in range(3):
        plain = _EMPHASIS_RE.sub(r"\2", text)
        if plain == text:
            break
        text = plain
    return text


def _plain_tuple(sentence: str) -> str | None:
    """"The polar coordinates are (3, π/2).": the plain-text tuple a statement sentence ends with, right after
    its copula (not "are not (3, 4)", not "(2, -6) and (-4, 3)")."""
    statement = _STATEMENT_RE.match(sentence)
    value = _PLAIN_TUPLE_RE.match(sentence, statement.end()) if statement else None
    if value is None:
        return None
    after = sentence[value.end():]
    return value.group(1) if _AFTER_FINAL_RE.match(after) and _ENDED_RE.search(after) else None


def _lone_value(sentence: str) -> str | None:
    """The value of a response that is nothing but a number and up to three words of unit ("2 shelves.")."""
    number = _NUMBER_RE.match(sentence, 1 if sentence.startswith("$") else 0)
    if number is None:
        return None
    after = sentence[number.end():]
    if not re.search(r"[A-Za-z]", after) or not _AFTER_FINAL_RE.match(after) or _LONE_VALUE_WORDS_RE.search(after):
        return None
    return number.group(0)


def _negated(sentence: str, value_start: int) -> bool:
    """"The total is not 5.", "x is never 5", "it will not take 5 years", "more than 5", "between 3 and 5": the
    sentence does not state the value it ends with."""
    before = sentence[max(0, value_start - 40):value_start]
    return bool(_NEGATED_RE.search(before) or _DENIED_OBJECT_RE.search(before))


def _restated_after_value(sentence: str, final: re.Match[str]) -> bool:
    """"So it takes $227$ minutes to string all $12$ racquets.": the last span restates a given after another
    value; which one is the answer is not read from a span's position (no guess)."""
    earlier = _PLACEHOLDER_RE.search(sentence, 0, final.start()) or _NUMBER_RE.search(sentence, 0, final.start())
    return earlier is not None and restates_given(sentence, final.start(), final.end())


def _last_sentence(masked: str) -> str:
    stripped = masked.rstrip()
    parts = [p for p in _SENTENCE_BOUNDARY_RE.split(stripped) if p.strip()]
    return parts[-1].strip() if parts else ""


def _final_spans(sentence: str, final: list[re.Match[str]], spans: list[str]) -> tuple[tuple[str, ...], str | None]:
    """The last span, plus the spans right before it that are joined to it by `and`/`,`/`or`."""
    chosen = [final[-1]]
    joiner = None
    for previous in reversed(final[:-1]):
        gap = sentence[previous.end():chosen[0].start()]
        if _OR_RE.fullmatch(gap.strip()) or re.fullmatch(r"\s*,?\s*or\s*", gap, re.IGNORECASE):
            joiner = "or"
        elif not _JOIN_RE.match(gap):
            break
        chosen.insert(0, previous)
    values = tuple(_span_value(spans[ord(m.group(0)) - _PLACEHOLDER_BASE]) for m in chosen)
    return values, joiner


def _span_value(span: str) -> str:
    """`3 + 4 = 7` -> `7`; `x = 5` stays (a labelled value); `A \\approx 16386.17` -> the last side."""
    sides = [s.strip() for s in re.split(r"(?<![<>\\!])=(?!=)|\\approx", span) if s.strip()]
    if len(sides) < 2:
        return span
    if len(sides) == 2:
        # `2x - y + 1 = 0` is an equation answer; `3 + 4 = 7` (no variable on the left) states 7.
        return span if re.search(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", sides[0])) else sides[-1]
    lhs = sides[0]
    return f"{lhs} = {sides[-1]}" if re.fullmatch(r"[a-zA-Z](?:_\{?\w+\}?)?|\\[a-zA-Z]+", lhs) else sides[-1]

