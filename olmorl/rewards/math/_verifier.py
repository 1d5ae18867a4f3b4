"""The registered math verifiers: `math`, `strict_math` and `gsm8k`."""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from olmorl.rewards.engine._registry import InvalidInput, ItemError, Score, Task, Verifier, register
from olmorl.rewards._settings import Settings
from olmorl.rewards.judge._verifier import JudgeVerifier
from olmorl.rewards.math import _judge_fallback as fallback
from olmorl.rewards.math import _structure as st
from olmorl.rewards.math._asked_expression import asked_value
from olmorl.rewards.math._boolean_answer import echoed_frequency
from olmorl.rewards.math._choices import chosen_letter, names_own_option
from olmorl.rewards.math._currency_unit import other_currency
from olmorl.rewards.math._duration import duration_values
from olmorl.rewards.math._equivalence import Verdict, equivalent
from olmorl.rewards.math._extract import Extraction, extract_answer
from olmorl.rewards.math._normalize import normalize_answer
from olmorl.rewards.math._numbers import numbers_match, one_value_written_twice, parse_number
from olmorl.rewards.math._ordinal_choice import ordinal_choice
from olmorl.rewards.math._qualifiers import scaled
from olmorl.rewards.math._precision import at_requested_precision, exact_value, prompt_text, requested_places
from olmorl.rewards.math._requested_form import unrequested_form
from olmorl.rewards.math._sympy import TooLarge, parse_latex
from olmorl.rewards.math._time_of_day import bare_clock_reading

MathGroundTruth = str | int | float | list[str | int | float]

_PERCENT_RE = re.compile(r"%|\bpercent\b|\bpct\b")
_PERCENT_PROMPT_RE = re.compile(r"%|\bpercent|\bprobabilit|\bchance", re.IGNORECASE)
_SOLUTION_RE = re.compile(r"\b(?:the (?:final )?answer is|final answer)\b", re.IGNORECASE)
_NUMBER_WORD = (
    r"(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    r"seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|"
    r"billion|half|halves|thirds?|quarters?|fourths?|fifths?|sixths?|sevenths?|eighths?|ninths?|tenths?)"
)
_NUMBER_WORDS_RE = re.compile(rf"^(?:minus\s+|negative\s+)?{_NUMBER_WORD}(?:(?:\s+and\s+|[\s-]+){_NUMBER_WORD})*$")
_LAST_NUMBER_RE = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
# Between the numbers of a list: ";", whitespace (a normalized \\quad), or a comma that is no thousands separator.
_LIST_SEPARATOR_RE = re.compile(r"\s*(?:;|,(?!\d{3}(?!\d))|\s)\s*")
# The question's reading of a lone answer that missed, tried in turn (each gives the value it states, or None):
# `a + b + c = \frac{6}{5}` for "Compute $a+b+c$" (the asked expression labels the value); `12^{th} \text{ grade}`
# for "For which grade" (the ordinal names grade 12); "typically No, ..." for "Would a CEO typically ...?" (the
# question's own scope, not a doubt).
_PROMPT_READINGS = (asked_value, ordinal_choice, echoed_frequency)


def _listed_numbers(text: str) -> list[Any]:
    """The numbers of an answer that is only a list of two or more numbers; else []."""
    parts = [p for p in _LIST_SEPARATOR_RE.split(text.strip()) if p]
    if len(parts) < 2:
        return []
    numbers = [parse_number(p.replace(",", "")) for p in parts]
    return numbers if all(n is not None for n in numbers) else []


# The shapes of final answers in MATH, GSM8K and olympiad sets, as (answer as written, reference): numbers in every
# notation, fractions, radicals, constants, expressions, tuples, sets, intervals, relations, units, choices, matrices.
_WARM_UP_ANSWERS = (
    ("42", "42"), ("-17", "-17"), ("3.75", "\\frac{15}{4}"), ("0.5", "1/2"), ("1{,}000", "1000"),
    ("\\frac{3}{4}", "0.75"), ("\\dfrac{-7}{12}", "-\\frac{7}{12}"), ("\\tfrac12", "\\frac{1}{2}"),
    ("2\\sqrt{3}", "\\sqrt{12}"), ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}"), ("\\sqrt[3]{2}", "2^{1/3}"),
    ("3\\pi", "3\\pi"), ("\\frac{5\\pi}{6}", "\\frac{5\\pi}{6}"), ("e^{2}", "e^2"), ("\\ln 2", "\\ln(2)"),
    ("x^2 + 2x + 1", "(x+1)^2"), ("2x-3", "-3+2x"), ("\\frac{x+1}{x-1}", "(x+1)/(x-1)"),
    ("(2, -3)", "(2,-3)"), ("\\{1, 2, 3\\}", "\\{3,2,1\\}"), ("[0, 1)", "[0,1)"), ("(-\\infty, 5]", "(-\\infty,5]"),
    ("x = 3", "3"), ("x \\le 4", "x\\leq 4"), ("y = 2x + 1", "y=2x+1"), ("\\pm 2", "2, -2"),
    ("50\\%", "50"), ("45^\\circ", "45"), ("\\$12.50", "12.5"), ("10 \\text{ cm}", "10"),
    ("\\text{(B)}", "B"), ("\\textbf{(C)}", "C"), ("\\sin \\frac{\\pi}{6}", "\\frac12"),
    ("\\cos^2 x + \\sin^2 x", "1"), ("\\binom{5}{2}", "10"), ("5!", "120"), ("|{-3}|", "3"),
    ("2 \\cdot 3^{4}", "162"), ("6 \\times 7", "42"), ("3 + 4i", "3+4i"), ("a_1 + a_2", "a_2+a_1"),
    ("\\log_2 8", "3"), ("\\infty", "\\infty"),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}"),
)

_WARM_UP_OPTIONS = {"judge_fallback": False}  # symbolic only, whatever the server's default (no judge, no prompt)


class MathOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rel_tol: float = Field(
        default=1e-6, gt=0, le=0.1,
        description="Relative tolerance for a decimal answer against an exact reference (never absolute).",
    )
    percent_as_fraction: bool = Field(
        default=False,
        description="A percent answer may equal the fraction it stands for (`70%` = 0.7) against a reference "
        "that is not a percent. Also on when the prompt speaks of percent or probability.",
    )
    judge_fallback: bool | None = Field(
        default=None,
        description="Where the symbolic check finds no answer, a mismatch or an unparseable answer, the server's "
        "LM judge decides in reference mode (needs `prompt`; hedges and retractions stay 0). A failed judge call "
        "is an `error`. Unset: the server's `math_judge_fallback` setting (off by default).",
    )


def references(ground_truth: Any) -> list[str]:
    """The acceptable reference answers as strings (a list means: any of these)."""
    items = ground_truth if isinstance(ground_truth, list) else [ground_truth]
    refs = [_reference_text(item) for item in items]
    refs = [r for r in refs if r]
    if not refs:
        raise InvalidInput("ground_truth: empty reference")
    return refs


def _reference_text(item: str | int | float) -> str:
    if isinstance(item, bool):
        return "yes" if item else "no"
    if isinstance(item, (int, float)):
        return repr(item)
    return item


@lru_cache(maxsize=65536)
def normalize_reference(raw: str) -> str:
    """References are trusted but messy: `$42$`, `\\boxed{42}`, `x=2`, GSM8K's `... #### 42`."""
    if "####" in raw:
        raw = raw.rpartition("####")[2]
    elif "\\boxed" in raw or "\\fbox" in raw or (len(raw) > 60 and _SOLUTION_RE.search(raw)):
        # A worked solution ending in a box (or "the answer is"): its final answer is the reference.
        extraction = extract_answer(raw)
        if extraction.answer is not None:
            raw = ", ".join(extraction.candidates) if len(extraction.candidates) > 1 else extraction.answer
    return normalize_answer(raw)


def _reference_parses(ref: str) -> bool:
    """Whether a reference is gradable on its own (checked only after a comparison found it unparseable)."""
    if parse_number(ref) is not None or st.as_sequence(ref) is not None or st.as_matrix(ref) is not None:
        return True
    if re.fullmatch(r"[A-Za-z][A-Za-z \-']*", ref):
        return True  # a text answer
    try:
        parse_latex(ref)
    except TooLarge:
        return True
    except ValueError:
        return False
    return True


def reference_problem(raw: str, normalized: str) -> str | None:
    """Why a reference cannot be graded against (a number written in words), else None."""
    if _NUMBER_WORDS_RE.match(normalized.strip().lower()):
        return f"ground_truth {raw!r} is a number written in words; write it with digits"
    return None


def _percent_fraction(raw: str) -> str | None:
    """`50\\%` -> `1/2` (the fraction a percentage stands for), None when not a plain percentage."""
    if not _PERCENT_RE.search(raw):
        return None
    number = parse_number(normalize_answer(raw))
    if number is None:
        return None
    value = number.value / 100
    return f"{value.numerator}/{value.denominator}" if value.denominator != 1 else str(value.numerator)


def _precision_missed(prompt: str, reference: str, compared: list[str]) -> int | None:
    """The decimal places the prompt asks for where the matched answer is not written at them (0.033 "to the
    nearest hundredth" for 0.03), else None."""
    if not prompt or len(compared) != 1 or (ref_number := parse_number(reference)) is None:
        return None
    places = requested_places(prompt, ref_number)
    if places is None:
        return None
    value = exact_value(compared[0])
    return None if value is not None and at_requested_precision(ref_number.value, value, places) else places


def _is_multipart(reference: str) -> bool:
    return st.as_sequence(reference) is not None or st.expand_pm(reference) is not None or (
        st.as_matrix(reference) is not None)


def judge(reference: str, extraction: Extraction, rel_tol: float) -> tuple[Verdict, list[str]]:
    """Compare one normalized reference with the extracted answer (hedges included)."""
    candidates = list(dict.fromkeys(normalize_answer(c) for c in extraction.candidates if c.strip()))
    if not candidates:
        return Verdict(False, "no_answer"), []
    if len(candidates) == 1:
        return equivalent(reference, candidates[0], rel_tol), candidates
    if _is_multipart(reference):
        return equivalent(reference, ", ".join(candidates), rel_tol), candidates
    if (one := one_value_written_twice(candidates)) is not None:  # "3/8 or .375": one value, not a hedge
        return equivalent(reference, one, rel_tol), candidates
    return Verdict(False, "hedged"), candidates


def _details(extraction: Extraction, refs: list[str], compared: list[str], reason: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {
        "extracted": extraction.answer,
        "anchor": extraction.anchor,
        "normalized_answer": compared,
        "normalized_reference": refs,
        "reason": reason,
    }
    if extraction.notes:
        details.update(extraction.notes)
    return details


class _MathFamily(Verifier):
    ground_truth_type = MathGroundTruth
    options_model = MathOptions
    minerva_only = False

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._judge = JudgeVerifier(settings)  # the judge_fallback's client; shares the `judge` verifier's backend

    def make_task(self, response: str, ground_truth: Any, options: dict[str, Any], prompt: Any) -> Task:
        task = super().make_task(response, ground_truth, options, prompt)
        references(task.ground_truth)  # empty references are invalid input, not a 0
        if task.options.judge_fallback is None:
            task = replace(task, options=task.options.model_copy(
                update={"judge_fallback": self.settings.math_judge_fallback}))
        if task.options.judge_fallback:
            fallback.check_item(self.settings, prompt)
        return task

    async def start(self) -> None:
        await self._judge.start()

    async def stop(self) -> None:
        await self._judge.stop()

    def needs_follow_up(self, task: Task, score: Score) -> bool:
        return fallback.needs_judge(task, score)

    async def follow_up(self, task: Task, score: Score) -> Score:
        return await fallback.ask_judge(self._judge, task, score, references(task.ground_truth))

    def warm_up(self) -> None:
        # The first LaTeX parse builds the ANTLR parser (about a second), and every new shape of answer teaches
        # its prediction cache more (a cold process scores its first few thousand items ~5% slower). The server
        # warms up once before it forks its workers, so all of them start with what these answers taught.
        for answer, reference in _WARM_UP_ANSWERS:
            self.score(self.make_task(f"The answer is $\\boxed{{{answer}}}$.", reference, _WARM_UP_OPTIONS, None))

    def score(self, task: Task) -> Score:
        raws = references(task.ground_truth)
        refs = [normalize_reference(r) for r in raws]
        problems = [p for raw, ref in zip(raws, refs) if (p := reference_problem(raw, ref))]
        if len(problems) == len(refs):
            # A broken label must not train as "every answer is wrong": the item is invalid, not a 0.
            raise InvalidInput("; ".join(problems), {"reason": "unparseable_reference", "normalized_reference": refs})
        prompt = prompt_text(task.prompt)
        extraction = extract_answer(task.response, minerva_only=self.minerva_only, question=prompt)
        if extraction.answer is None:
            return self._scored(task, 0.0, _details(extraction, refs, [], extraction.reason or "no_answer"))
        if extraction.joiner == "or" and names_own_option(prompt, extraction.answer):
            # "most likely B, city or town" for option B "city or town": one choice, not "B, city" or "town".
            extraction = replace(extraction, candidates=(extraction.answer,), joiner=None)
        # "3 hundred" is 300 (or 3 where the question asks in hundreds): never the bare 3.
        extraction = replace(extraction, candidates=tuple(scaled(c, prompt) for c in extraction.candidates))
        verdict, compared = Verdict(False, "mismatch"), list[str]()
        percent_allowed = task.options.percent_as_fraction or bool(_PERCENT_PROMPT_RE.search(prompt))
        imprecise: int | None = None
        missed_form: str | None = None
        for raw, ref in zip(references(task.ground_truth), refs):
            verdict, compared = self.compare(ref, extraction, task.options.rel_tol)
            compared_ref = ref
            if not verdict.match:
                # Percent behaves like a unit (50% ~ 50). A plain answer may also give a percent reference as the
                # fraction it stands for (0.5 ~ 50%), but a percent answer states its own value (0.08% is not 8%);
                # a percent answer equals a fraction reference (70% ~ 0.7) only where the item allows it.
                percent_ref = _percent_fraction(raw)
                answer_percent = any(_PERCENT_RE.search(c) for c in extraction.candidates)
                if percent_ref is not None:
                    if not answer_percent:
                        verdict, compared = self.compare(percent_ref, extraction, task.options.rel_tol)
                        compared_ref = percent_ref
                elif (len(extraction.candidates) == 1 and percent_allowed
                      and (percent_ans := _percent_fraction(extraction.candidates[0]))):
                    verdict, compared = self.compare(ref, replace(extraction, candidates=(percent_ans,)),
                                                     task.options.rel_tol)
            if (not verdict.match and len(extraction.candidates) == 1 and st.as_letter(ref) is not None
                    and (letter := chosen_letter(prompt, extraction.candidates[0], task.options.rel_tol))):
                verdict = equivalent(ref, letter, task.options.rel_tol)  # an option's content names its letter
            for reading in _PROMPT_READINGS:
                if verdict.match or len(extraction.candidates) != 1:
                    break
                if read := reading(prompt, extraction.candidates[0]):
                    verdict, compared = self.compare(ref, replace(extraction, candidates=(read,)), task.options.rel_tol)
            if (not verdict.match and len(extraction.candidates) == 1
                    and (durations := duration_values(prompt, extraction.candidates[0]))):
                for duration in durations:  # `3:45` for "how long": 225 minutes, or 3.75 hours
                    verdict, compared = self.compare(ref, replace(extraction, candidates=(duration,)),
                                                     task.options.rel_tol)
                    if verdict.match:
                        break
            if (not verdict.match and len(extraction.candidates) == 1
                    and bare_clock_reading(prompt, ref, normalize_answer(extraction.candidates[0]))):
                verdict, compared = Verdict(True), [extraction.candidates[0]]  # `1:03` for "in the form h:mm"
            if verdict.match and (imprecise := _precision_missed(prompt, compared_ref, compared)) is not None:
                verdict = Verdict(False, "mismatch")  # the value, but not at the precision the question asks for
            if verdict.match and (missed_form := unrequested_form(prompt, compared_ref, compared)
                                  or other_currency(prompt, raw, extraction.candidates)):
                verdict = Verdict(False, "mismatch")  # the value, but not in the form (or unit) the question asks for
            if verdict.match:
                break
        if verdict.reason == "unparseable" and not any(_reference_parses(ref) for ref in refs):
            raise InvalidInput(f"ground_truth {raws!r} cannot be parsed as an answer",
                               _details(extraction, refs, compared, "unparseable_reference"))
        details = _details(extraction, refs, compared, verdict.reason)
        if imprecise is not None and not verdict.match:
            details["requested_decimal_places"] = imprecise
        if missed_form and not verdict.match:
            details["requested_form"] = missed_form
        return self._scored(task, float(verdict.match), details)

    @staticmethod
    def _scored(task: Task, reward: float, details: dict[str, Any]) -> Score:
        if task.options.judge_fallback:  # which check decided (the judge's follow-up may overturn a symbolic 0)
            details["method"] = "symbolic"
        return Score(reward, details)

    def compare(self, reference: str, extraction: Extraction, rel_tol: float) -> tuple[Verdict, list[str]]:
        return judge(reference, extraction, rel_tol)


@register
class MathVerifier(_MathFamily):
    name = "math"
    description = (
        "Final answer (last \\boxed{}, 'final answer'/'the answer is'/'Answer:'/'####', <answer>, Minerva, "
        "else the response's closing statement) vs a reference, by mathematical equivalence (SymPy); hedges, "
        "retractions and values inside the reasoning score 0; a reference in words is invalid. "
        "Open-instruct's `math` rows map here unchanged."
    )


@register
class StrictMathVerifier(_MathFamily):
    name = "strict_math"
    description = (
        "Like `math` but only Minerva's 'Final Answer: The final answer is X. I hope it is correct.' counts "
        "(or a response that is nothing but the answer), as open-instruct's `strict_math`."
    )
    minerva_only = True


@register
class GSM8KVerifier(_MathFamily):
    name = "gsm8k"
    description = (
        "Numeric final answer (same anchors as `math`; '#### 42' included) vs a numeric reference "
        "(GSM8K's '... #### 42' accepted), exact for integers; open-instruct's `gsm8k` rows map here."
    )

    def warm_up(self) -> None:
        # gsm8k references are numbers: warm the parser with one (a non-numeric one is invalid input here).
        self.score(self.make_task("So the answer is $\\boxed{\\frac{144}{2}}$.", "72", _WARM_UP_OPTIONS, None))

    def make_task(self, response: str, ground_truth: Any, options: dict[str, Any], prompt: Any) -> Task:
        task = super().make_task(response, ground_truth, options, prompt)
        for ref in references(task.ground_truth):
            if parse_number(normalize_reference(ref).replace(",", "")) is None:
                raise InvalidInput(f"ground_truth: {ref!r} is not a number")
        return task

    def compare(self, reference: str, extraction: Extraction, rel_tol: float) -> tuple[Verdict, list[str]]:
        ref_number = parse_number(reference) or parse_number(reference.replace(",", ""))
        values: list[Any] = []
        for candidate in dict.fromkeys(extraction.candidates):
            text = normalize_answer(candidate)
            number = parse_number(text)
            listed = _listed_numbers(text) if number is None else []
            if listed:  # "41, 42", "41; 42", "41 \\quad 42": several answers, as much a hedge as "41 or 42"
                values.extend(n for n in listed if n not in values)
                continue
            if number is None:
                found = _LAST_NUMBER_RE.findall(text)
                number = parse_number(found[-1].replace(",", "")) if found else None
            if number is not None and number not in values:
                values.append(number)
        compared = [str(v.value) for v in values]
        if not values:
            return Verdict(False, "unparseable"), compared
        if len({v.value for v in values}) > 1:
            return Verdict(False, "hedged"), compared
        assert ref_number is not None  # checked in make_task
        if numbers_match(ref_number, values[0], rel_tol):
            return Verdict(True), compared
        return Verdict(False, "mismatch"), compared
