"""Closing statements read against the question's own words (for `_closing`): a difference the question asks for
("How much more ... than Grant?"), a name for "Which student ...?" / "Who ...?", a count for "How many X ...?" that
repeats X, a fraction for "What fraction of a X ...?", the number that fills the question's own "what number" slot;
and the pieces `_closing` shares with them."""

from __future__ import annotations

import re

from olmorl.rewards.math._question import question_tail, question_text
from olmorl.rewards.math._restated import plain_tail

# A word of a short unit after a value ("square units", "km/h").
UNIT_WORD = r"(?!and/or\b)[A-Za-z]{1,12}(?:/[A-Za-z]{1,6})?"
ENDED_RE = re.compile(r"[.!。]\s*$")
# Words that make a stated answer a guess (an anchored answer too: "Maybe the answer is 5").
ANCHOR_HEDGE_RE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|not (?:sure|certain)|unsure|i guess|i'm guessing)\b", re.IGNORECASE
)
# A value then a comparative and "than" ("$60 less than Grant", "3 years older than Tom"): a comparison.
_COMPARISON_AFTER_RE = re.compile(
    rf"[ \t]*(?:{UNIT_WORD}[ \t]+){{0,3}}?(?!other\b|rather\b)(?:more|less|fewer|[a-z]{{3,}}er)[ \t]+than\b",
    re.IGNORECASE)
# "Which student has the greatest average speed?", "Who ran the farthest?": the predicate a named answer repeats.
_ASKED_VERB = r"(?:has|have|had|is|was|are|were|will|can|could|did|does|got|ran|won|scored|made|earned|spent|needs?)"
_WHICH_QUESTION_RE = re.compile(
    rf"\b(?:which|what)\s+[a-z]+\s+({_ASKED_VERB}\b[^?.!\n]{{3,80}})\?|\bwho\s+([a-z]+\b[^?.!\n]{{3,80}})\?",
    re.IGNORECASE,
)
# "Who has larger meals?": a predicate of "has" and a comparative or superlative noun phrase, which a named answer
# may also state as the name's possessive ("Dana's meals are larger."), after a reason ("Since 0.36 > 0.35, ...").
_HAS_COMPARED_RE = re.compile(r"^(?:has|have|had)\s+(?:the\s+)?([a-z]+(?:er|est))\s+([a-z]+)$", re.IGNORECASE)
_REASON_FIRST_RE = re.compile(r"^(?:since|because)\b(?:[^.!?]|\.(?=\d)){1,160}?,\s+", re.IGNORECASE)
_NAMED_ANSWER_BLOCK_RE = re.compile(
    r"\b(?:but|not|no|never|or|either|however|although|though|while|whereas|except|unless|if|and)\b|n't",
    re.IGNORECASE,
)
# "How many possible numbers could they be thinking of?": the words a count answer repeats right after its count
# ("There are four possible numbers that ...", "The graph has two y-intercepts: ..."), the count in digits or a
# number word up to twenty; a colon may list the items counted.
_HOW_MANY_RE = re.compile(r"\bhow many((?:\s+[a-z][a-z-]*){1,4})", re.IGNORECASE)
_ECHOED_COUNT_RE = re.compile(
    r"^\W*(?:(?:so|thus|therefore|hence),?\s+)?"  # "So, there are ...": a conclusion's connective
    r"(?:there (?:are|is|were|was|will be)"
    r"|(?:(?:the|this|its|their|an?)\s[^.!?:\d]{1,80}?|\uE001)\s(?:has|have|had))\s+"  # \uE001: the asked subject
    r"(?:exactly |a total of )?(\d{1,3}(?:,\d{3})+|\d+|[a-z]+)\s+([^.!?:]+)(:[^.!?]*)?[.!]\s*$",  # "5,040 ways"
    re.IGNORECASE,
)
# "How many positive factors does 48 have?": the question's own subject, which a count answer may open with ("So, 48
# has 10 positive factors."); `echoed_count` marks it with a private-use character the regex above takes as a subject.
_ASKED_SUBJECT_RE = re.compile(r"\bhow many\b[^?]*?\b(?:does|do|did)\s+([^?]{1,40}?)\s+have\s*\?", re.IGNORECASE)
_SUBJECT_MARK = "\uE001"
COUNT_WORDS = {word: str(n) for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty".split())}
# What may follow the echoed words: a relative clause ("that Rick and Steve could be thinking of"), not a contrast,
# a denial, an alternative, a condition or another number.
_CLAUSE_RE = re.compile(r"^(?:(?:that|which|who|whose|in|on|at|for|of|with|from|to)\b[^\d\uE000-\uF8FF]*)?$",
                        re.IGNORECASE)
_CLAUSE_START_RE = re.compile(r"(?:that|which|who|whose|in|on|at|for|of|with|from|to)\b", re.IGNORECASE)
# "How many of the following numbers ...?": the counted noun comes after "of the following".
_OF_THE_LISTED = ("following", "given", "listed", "above")
# "Out of the 10 letters in MATHCOUNTS, there are 3 letters ...": a total of the counted noun before the count.
_OUT_OF_TOTAL_RE = re.compile(r'^\W*(?:out\s+)?of\s+(?:the\s+|all\s+)?(?:\d+|[a-z]+)\s+([a-z]+)\b[^.!?:\d]{0,60}?,'
                              r'["\u201d]?\s+(?=there\s)', re.IGNORECASE)
# "3 letters (A, H, and O) that have ...": the items counted, named in parentheses right after the counted words.
_NAMED_ITEMS_RE = re.compile(r"^\([^()\d]{1,80}\)\s*")
# The same clause with its relative pronoun left out ("possible numbers Rick and Steve could be thinking of"): a
# subject, a personal pronoun or a name (two joined by "and"), then an auxiliary or modal verb; no number word in it.
_CONTACT_CLAUSE_RE = re.compile(
    r"^(?:(?i:they|we|you|he|she|it|i)|[A-Z][a-z]+(?:\s+and\s+[A-Z][a-z]+)?)\s+"
    r"(?i:could|can|would|will|may|might|should|must|are|is|were|was|have|has|had|do|does|did)\b[^\d\uE000-\uF8FF]*$")
_CLAUSE_BLOCK_RE = re.compile(r"\b(?:but|not|no|never|or|either|however|although|though|unless|if|except)\b|n't",
                              re.IGNORECASE)
# "How much more money does Juanita spend ... than Grant?", "How many minutes longer ... than ...?", "How many more
# kids stayed home compared to those who went to the camp?": a question that asks for a difference, its comparative.
_AGAINST = r"\b(?:than|compared\s+(?:to|with))\b"
_ASKED_DIFFERENCE_RE = re.compile(
    rf"\bhow\s+(?:much|many)\b[^?]{{0,60}}?\b(more|less|fewer|[a-z]{{3,}}er)\b[^?]*?{_AGAINST}", re.IGNORECASE)



def asked_difference(tail: str, question: str) -> bool:
    """"$60.00 more annually on the newspaper than Grant." for "How much more money does Juanita spend ... than
    Grant?": the value comes before the comparative the question asks about, so it states the difference asked for
    ("more than 60", a bound, is no answer: `_negated`). The rest only qualifies it (no condition or contrast)."""
    asked = _ASKED_DIFFERENCE_RE.search(question_tail(question))
    if asked is None:
        return False
    stated = re.match(rf"[ \t]*(?:{UNIT_WORD}[ \t]+){{0,3}}?{asked.group(1)}\b(.*?){_AGAINST}(.*)$", tail, re.IGNORECASE)
    return stated is not None and plain_tail(f"{stated.group(1)} {stated.group(2)}")


def asked_difference_value(tail: str, question: str) -> str | None:
    """"574664 more kids stayed home compared to those who went to the camp" (an ended answer sentence's rest after
    its last copula, "... = 574664 more kids ...") for "How many more kids stayed home compared to those who went to
    the camp?": the number heading it, when the rest states the difference the question asks (`asked_difference`)
    and holds no other number; else None."""
    value = re.match(r"\$?([-+]?\d[\d,]*(?:\.\d+)?)(?![\d/])", tail)
    if value is None or any(ch.isdigit() for ch in tail[value.end():]):
        return None
    return value.group(1) if asked_difference(tail[value.end():].rstrip(" .!") + ".", question) else None


def unasked_comparison(tail: str, question: str) -> bool:
    """"$60 less than Grant." states a comparison, short enough to pass for a unit: it answers only a question that
    asks a difference with that comparative ("How much less ...?"), not "How much more ...?" nor no question."""
    return bool(_COMPARISON_AFTER_RE.match(tail)) and not asked_difference(tail, question)


def named_answer(sentence: str, question: str) -> str | None:
    """"Evelyn has the greatest average speed at ..." for "Which student has the greatest average speed?": the
    name a closing sentence puts before the question's own predicate, the rest a short finished tail."""
    asked = list(_WHICH_QUESTION_RE.finditer(question_tail(question)))
    if not asked or not ENDED_RE.search(sentence):
        return None
    predicate = " ".join((asked[-1].group(1) or asked[-1].group(2)).split())
    named = re.match(r"(?!(?:If|When|Then|So|But|And|Now|The|This|That|It|He|She|They|We|You|There)\b)"
                     rf"([A-Z][a-z]+)\s+(?i:{re.escape(predicate)})\b(.{{0,80}})$", sentence)
    if named is None:
        return _possessive_named(sentence, predicate, question)
    if _NAMED_ANSWER_BLOCK_RE.search(named.group(2)):
        return None
    return named.group(1)


def _possessive_named(sentence: str, predicate: str, question: str) -> str | None:
    """"Dana's meals are larger." for "Who has larger meals?": a name the question holds, its possessive before the
    question's noun, a copula and the question's comparative (or superlative), after an optional reason; no hedge,
    denial or alternative in the reason or the short tail."""
    compared = _HAS_COMPARED_RE.match(predicate)
    if compared is None:
        return None
    reason = _REASON_FIRST_RE.match(sentence)
    if reason is not None and _NAMED_ANSWER_BLOCK_RE.search(reason.group(0)):
        return None
    adjective, noun = compared.groups()
    named = re.match(rf"([A-Z][a-z]+)['’]s\s+(?i:{re.escape(noun)}\s+(?:is|are|was|were)\s+(?:the\s+)?"
                     rf"{re.escape(adjective)})\b(.{{0,80}})$", sentence[reason.end() if reason else 0:])
    if named is None or _NAMED_ANSWER_BLOCK_RE.search(named.group(2)) or ANCHOR_HEDGE_RE.search(sentence) \
            or not re.search(rf"\b{named.group(1)}\b", question_tail(question)):
        return None
    return named.group(1)


def echoed_count(sentence: str, question: str) -> str | None:
    """"There are four possible numbers that Rick and Steve could be thinking of." for "How many possible numbers
    could they be thinking of?": a count followed by the question's own words after "how many" (its only number),
    the rest a relative clause (which may repeat the question's "could be"; its "that" may be left out) or, right
    after those words or a phrase copied from the question, a colon and the items counted ("The graph has two
    y-intercepts: (0, 1) and (0, 3).", "There are 6 positive even perfect cubes less than 2008: 8, 64, ..."), with no
    hedge, denial or alternative."""
    text = question_text(question)
    asked = list(_HOW_MANY_RE.finditer(text))
    if asked and (subject := _ASKED_SUBJECT_RE.search(text)):
        opening = rf"^(\W*(?:(?:so|thus|therefore|hence),?\s+)?){re.escape(subject.group(1))}(?=\s+(?:has|have|had)\b)"
        sentence = re.sub(opening, rf"\g<1>{_SUBJECT_MARK}", sentence, count=1, flags=re.IGNORECASE)
    asked_words = asked[-1].group(1).lower().split() if asked else []
    if asked_words[:2] == ["of", "the"] and len(asked_words) > 3 and asked_words[2] in _OF_THE_LISTED:
        asked_words = asked_words[3:]
    elif asked_words[:2] == ["of", "the"] and len(asked_words) > 2:
        asked_words = asked_words[2:]  # "How many of the letters in MATHCOUNTS ...?" counts letters
    total = _OUT_OF_TOTAL_RE.match(sentence) if asked_words else None
    if total is not None and total.group(1).lower().removesuffix("s") == asked_words[0].removesuffix("s"):
        sentence = sentence[total.end():]  # the total of the counted items, a given, before the count
    stated = _ECHOED_COUNT_RE.match(sentence) if asked else None
    if stated is None:
        return None
    digits = stated.group(1).replace(",", "")  # a count with thousands separators is the same count
    value = digits if digits.isdigit() else COUNT_WORDS.get(stated.group(1).lower())
    words = stated.group(2).split()
    # "336 different ways" for "In how many ways ...?": one adjective that only says the items differ
    words = words[1:] if len(words) > 1 and words[0].lower() in ("different", "distinct") else words
    echoed = 0
    while echoed < min(len(words), len(asked_words)) and \
            words[echoed].lower().removesuffix("s") == asked_words[echoed].removesuffix("s"):
        echoed += 1
    clause, items = " ".join(words[echoed:]), stated.group(3) or ""
    named = _NAMED_ITEMS_RE.match(clause) if echoed else None
    clause, listed = (clause[named.end():], named.group(0)) if named else (clause, "")
    copied = _restates_question(clause, question)
    condition = not copied and not items and _restates_condition(clause, question)
    contact = _CONTACT_CLAUSE_RE.match(clause) and not set(re.findall(r"[a-z]+", clause.lower())) & COUNT_WORDS.keys()
    if value is None or not echoed or not (_CLAUSE_RE.match(clause) or contact or copied or condition) \
            or (items and clause and not copied) \
            or (not condition and _CLAUSE_BLOCK_RE.search(clause + items)) or _CLAUSE_BLOCK_RE.search(listed) \
            or ANCHOR_HEDGE_RE.search(clause + items + listed):
        return None
    return value


# "What fraction of a gallon does she have left?": a closing sentence that states its one fraction followed by the
# question's own "of a gallon" ("Catherine has 4/5 of a gallon of milk left after making cookies.").
_FRACTION_OF_RE = re.compile(r"\bwhat fraction of (?:an?|the) ([a-z]+)\b", re.IGNORECASE)
_ECHOED_FRACTION_RE = re.compile(
    r"^\W*(?:(?:so|thus|therefore|hence),?\s+)?[A-Za-z][A-Za-z' ]{0,40}?\s(?:has|have|had|is|are|was|were)\s+"
    r"(\d+/\d+)\s+of\s+(?:an?|the)\s+([a-z]+)\b([^.!?\d]*)[.!]\s*$",
    re.IGNORECASE,
)


def echoed_fraction(sentence: str, question: str) -> str | None:
    """"Catherine has 4/5 of a gallon of milk left after making cookies." for "What fraction of a gallon does she have
    left?": the sentence's only number, a slash fraction followed by the question's "of a X", with no hedge, denial or
    alternative anywhere in it."""
    asked = _FRACTION_OF_RE.findall(question_text(question))
    stated = _ECHOED_FRACTION_RE.match(sentence) if asked else None
    if stated is None or stated.group(2).lower().removesuffix("s") != asked[-1].lower().removesuffix("s"):
        return None
    if _NAMED_ANSWER_BLOCK_RE.search(sentence) or ANCHOR_HEDGE_RE.search(sentence):
        return None
    return stated.group(1)



# "The square of what other number is 225?": a question sentence with a slot for the number it asks.
_NUMBER_SLOT_RE = re.compile(
    r"\b(?:what|which)\s+(?:other\s+)?(?:(?:positive|negative|real|whole)\s+)?(?:number|value|integer)\b",
    re.IGNORECASE)
_SLOT_TOKEN_RE = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:/\d+)?|[a-z']+|[^\sa-z\d]", re.IGNORECASE)
_FILLED_VALUE_RE = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:/\d+)?")
# Words a filled-in question may add without changing its claim ("is also 225", "is 225 too").
_ADDED_WORDS = ("also", "too")


def filled_question(sentence: str, question: str) -> str | None:
    """"The square of -15 is also 225." for "The square of what other number is 225?": the question's own sentence
    with its "what number" slot filled by one number and every other word copied (an "also" or "too" may be added, a
    conclusion's connective may open it), so the number stated in the slot is the answer and the others the
    question's. Nothing can be hedged, denied or added: any other word gives no answer."""
    asked = [part for part in re.split(r"(?<=[.!?])\s+", question_text(question).strip())
             if part.endswith("?") and _NUMBER_SLOT_RE.search(part)]
    if not asked or not ENDED_RE.search(sentence):
        return None
    slot = list(_NUMBER_SLOT_RE.finditer(asked[-1]))[-1]
    before = [t.lower() for t in _SLOT_TOKEN_RE.findall(asked[-1][:slot.start()])]
    after = [t.lower() for t in _SLOT_TOKEN_RE.findall(asked[-1][slot.end():].rstrip(" ?"))]
    words = [t.lower() for t in _SLOT_TOKEN_RE.findall(re.sub(r"[.!]\s*$", "", sentence))]
    if words[:1] in (["so"], ["thus"], ["therefore"], ["hence"]) and words[:1] != before[:1]:
        words = words[2:] if words[1:2] == [","] else words[1:]
    words = [w for w in words if w not in _ADDED_WORDS or w in before + after]
    if len(words) != len(before) + 1 + len(after) or words[:len(before)] != before \
            or words[len(before) + 1:] != after or not _FILLED_VALUE_RE.fullmatch(words[len(before)]):
        return None
    return words[len(before)]

# An answer-first response: "A hexagonal prism has 18 edges. It has 12 edges along the sides (...) and 6 vertical
# edges ..." for "How many edges does a hexagonal prism have?". What follows the opening count only explains it when it
# is finished plain prose that concludes nothing of its own: no math, no conclusion or correction word, no sentence
# that states a count again, and counts (outside parentheses, which break a part down further) that are the count's
# parts, adding up to it ("It has 12 edges." after "18 edges" states another count, not a part of it).
_FIRST_SENTENCE_RE = re.compile(r"\s*([^\n]*?[.!])(?=\s)")
_PARENTHESIZED_RE = re.compile(r"\([^()]*\)")
_OWN_CONCLUSION_RE = re.compile(
    r"[$\\]|\b(?:therefore|thus|hence|so|answer|total|altogether|in all|actually|wait|instead|rather|correct|"
    r"correction|mistake|wrong|however|but|or)\b", re.IGNORECASE)


def opening_count(text: str, question: str) -> str | None:
    """The count an anchorless response states in its opening sentence, echoing the question's "how many" words,
    when every later sentence only explains it; else None."""
    first = _FIRST_SENTENCE_RE.match(text)
    if first is None or (value := echoed_count(first.group(1), question)) is None:
        return None
    rest = text[first.end():].strip()
    if not rest or not ENDED_RE.search(rest) or _OWN_CONCLUSION_RE.search(rest):
        return None
    if any(echoed_count(s.strip() + ".", question) is not None for s in re.split(r"(?<=[.!])\s+", rest) if s.strip()):
        return None
    parts = [int(n) for n in re.findall(r"\d+", _PARENTHESIZED_RE.sub("", rest))]
    return value if len(parts) > 1 and max(parts) < int(value) and sum(parts) == int(value) else None


def _restates_question(clause: str, question: str) -> bool:
    """"between 10 and 1000" after "There are 28 perfect squares" for "How many perfect squares have a value between
    10 and 1000?": a phrase copied from the question restates its condition, so its numbers are the question's own
    (a changed number, "between 10 and 100", is a different claim and gives no answer)."""
    phrase = " ".join(clause.split()).lower()
    asked = " ".join(question_text(question).split()).lower()
    return len(phrase.split()) >= 2 and re.search(rf"(?<![\w.]){re.escape(phrase)}(?![\w.])", asked) is not None


def _restates_condition(clause: str, question: str) -> bool:
    """"to choose a President, ... from a group of 8 people with no one serving two roles ..." for "In how many ways
    can a President, ... be chosen from a group of 8 people if no one can serve two roles ...?": a relative clause that
    restates the question's condition partly in its own words. Each number lies in a run of three or more words
    copied from the question, each "no", "not" or "or" in a copied run of two or more ("no one", "factors of 34 or
    multiples of 7"; "either" only right before a copied run that holds the "or"); a changed number, a negation or
    an alternative of its own gives no answer."""
    words = [word.strip(",;").lower() for word in clause.split()]
    if not _CLAUSE_START_RE.match(clause) or any("\uE000" <= ch <= "\uF8FF" for ch in clause):
        return False
    asked = [word.strip(",;?.").lower() for word in question_text(question).split()]
    pairs = {(asked[i], asked[i + 1]) for i in range(len(asked) - 1)}
    run = [0] * len(words)  # the length of the copied run each word lies in (0: not copied)
    start = 0
    for end in range(1, len(words) + 1):
        if end == len(words) or (words[end - 1], words[end]) not in pairs:
            if end - start >= 2:
                run[start:end] = [end - start] * (end - start)
            start = end
    for i, word in enumerate(words):
        if any(ch.isdigit() for ch in word) and run[i] < 3:
            return False
        if word == "either" and not (i + 1 < len(words) and run[i + 1] and "or" in words[i + 1:i + 1 + run[i + 1]]):
            return False
        if word != "either" and _CLAUSE_BLOCK_RE.fullmatch(word) and not run[i]:
            return False
    return not ANCHOR_HEDGE_RE.search(clause)
