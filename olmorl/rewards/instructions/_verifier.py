"""The `ifeval` verifier: instruction-following constraints from IFEval, IFBench and IF-RLVR.

Semantics `reference` reproduces the reference checkers (lm-eval 0.4.13 IFEval = Google's; IFBench
= allenai/IFBench db69a6f; IFBench-Train = open-instruct IFEvalG) except where they cannot be
reproduced deterministically or offline:
- a missing required kwarg, or one the reference would replace by a random value (missing,
  negative, an invalid letter or relation), makes the item `invalid`; 0 is always taken literally
  (open-instruct's IFEvalG and IFBench read `if not n:` and draw a random value for 0).
- language detection is seeded (`DetectorFactory.seed = 0`).
- keywords:letter_frequency / letters:letter_counting2 count any one character asked for ("#", "!");
  the references replace a non-letter by a random letter.
- `words:start_verb` uses a verb list instead of NLTK's perceptron tagger (no package ships it).
- NLTK's punkt model is the English `punkt_tab` shipped in the package (`_text.py`).

Semantics `fixed` also corrects the references' known defects:
- keywords are literal text matched on word boundaries, case-insensitive, not regular expressions
  (keywords:existence/frequency/forbidden_words/word_once/word_count_different_numbers/
  exclude_word_harder, count:count_increment_word, count:keywords_multiple, copy:repeat_phrase,
  detectable_format:multiple_sections splitter, detectable_content:postscript custom marker); IFEval's
  keywords:existence/frequency/forbidden_words also count the keyword's plural in -s ("sneakers" is the word
  sneaker; "category" is not "cat");
- language checks fail on text without letters (the reference passes it) and, below 20 letters,
  response_language accepts any language langdetect considers, english_* accept Latin script
  ("OK" is all capitals);
- detectable_format:json_format requires an object or array and rejects NaN/Infinity;
- punctuation:no_comma also rejects fullwidth, Arabic, ideographic and small commas;
- ratio:sentence_type / ratio:sentence_balance need at least one sentence;
- format:sub-bullets needs at least one `*` bullet; startend:quotation needs non-empty content;
- format:title_case allows lower-case minor words after the first and apostrophe tokens (n't, 's);
- format:line_indent ignores every blank line (the reference keeps consecutive ones);
- new:copy_span_idx uses n_end included, as its instruction says (repeat:repeat_span already does);
- count:counting_composition also splits on "* * *" and counts word tokens only;
- count:count_unique, words:words_position ignore punctuation tokens and case; count:conjunctions
  counts distinct conjunctions, not distinct raw tokens; format:quote_unquote counts curly quotes;
- sentence:keyword bounds the keyword by non-word characters ("C++"); copy:repeat_phrase checks
  every repetition;
- first_word:* strip surrounding punctuation from the first word.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from olmorl.rewards.engine._registry import InvalidInput, Score, Task, Verifier, register
from olmorl.rewards.instructions import (  # noqa: F401 (register)
    _ifbench,
    _ifbench_custom,
    _ifbench_train,
    _ifbench_words,
    _ifeval,
)
from olmorl.rewards.instructions._constraints import CONSTRAINTS, Constraint, ConstraintError
from olmorl.rewards.instructions._ground_truth import FuncSpec, parse_ground_truth
from olmorl.rewards.instructions._text import warm_up_language_detection, warm_up_tokenizers
from olmorl.rewards.instructions._tulu3 import TULU3_FUNCTIONS, call_tulu3
from olmorl.rewards.text import answer_text


class IFEvalOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["rl", "strict", "loose"] = "rl"
    score: Literal["fraction", "all"] = "fraction"
    semantics: Literal["reference", "fixed"] = "reference"


def rl_answer(response: str) -> str:
    """open-instruct's training view of a response: after the last `</think>`, answer tags dropped."""
    return answer_text(response)


def loose_variants(response: str) -> list[str]:
    """IFEval's loose variants: first/last/both lines dropped, `*` removed, and combinations."""
    lines = response.split("\n")
    no_first = "\n".join(lines[1:]).strip()
    no_last = "\n".join(lines[:-1]).strip()
    no_both = "\n".join(lines[1:-1]).strip()
    base = [response, no_first, no_last, no_both]
    return [response, response.replace("*", ""), no_first, no_last, no_both] + [v.replace("*", "") for v in base[1:]]


def _views(response: str, mode: str) -> list[str]:
    if mode == "rl":
        return [rl_answer(response)]
    if mode == "strict":
        return [response]
    return loose_variants(response)


def _run(check: Any, views: list[str]) -> tuple[bool, str | None]:
    error = None
    for view in views:
        if not view.strip():
            continue
        try:
            if check(view):
                return True, None
        except re.error:
            raise
        except Exception as exc:  # a reference checker crash counts as not followed
            error = f"{type(exc).__name__}: {exc}"
    return False, error


@register
class IFEvalVerifier(Verifier):
    name = "ifeval"
    aliases = ("ifeval_old", "ifbench", "ifevalg", "instruction_following")
    description = (
        "Instruction-following constraints (IFEval 25, IFBench 58, IF-RLVR/IFBench-Train 29); reward is the "
        "fraction (or all) of constraints followed."
    )
    ground_truth_type = Any
    options_model = IFEvalOptions
    runs_in = "pool"

    def warm_up(self) -> None:
        warm_up_language_detection()  # langdetect's profiles take ~2 s to load
        warm_up_tokenizers()  # importing NLTK takes ~1 s

    def notes(self) -> list[str]:
        doc = (__doc__ or "").split("Semantics `fixed` also corrects the references' known defects:")
        fixed = [line.strip().lstrip("- ") for line in doc[1].strip().split("\n- ")] if len(doc) > 1 else []
        return [
            "reference semantics: lm-eval 0.4.13 (IFEval), allenai/IFBench db69a6f (IFBench), open-instruct e6c3044 "
            "(IFBench-Train); 0-valued kwargs are taken literally and missing ones make the item invalid",
            "words:start_verb uses a verb list instead of NLTK's perceptron tagger",
            "keywords:letter_frequency / letters:letter_counting2 count any one character asked for ('#'); "
            "the references draw a random letter for a non-letter",
            *(" ".join(f"fixed: {line}".split()) for line in fixed),
        ]

    def score(self, task: Task) -> Score:
        opts: IFEvalOptions = task.options
        spec = parse_ground_truth(task.ground_truth)
        fixed = opts.semantics == "fixed"
        views = _views(task.response, opts.mode)
        base = {"mode": opts.mode, "semantics": opts.semantics}
        if isinstance(spec, FuncSpec):
            return self._score_tulu3(spec, views, base)
        prepared: list[tuple[Constraint, Any]] = []
        for item in spec:
            entry = CONSTRAINTS.get(item.instruction_id)
            if entry is None:
                raise InvalidInput(f"unknown instruction id {item.instruction_id!r}")
            try:
                prepared.append((entry, entry.parse_kwargs(item.kwargs)))
            except ConstraintError as exc:
                raise InvalidInput(str(exc)) from None
        results = []
        for entry, kwargs in prepared:
            try:
                passed, error = _run(lambda text, e=entry, k=kwargs: e.check(text, k, fixed), views)
            except re.error as exc:
                raise InvalidInput(
                    f"{entry.instruction_id}: keyword is not a valid regular expression ({exc}); "
                    "reference semantics compile it, semantics=fixed matches it literally"
                ) from None
            result: dict[str, Any] = {"instruction_id": entry.instruction_id, "passed": passed}
            if error:
                result["error"] = error
            results.append(result)
        return Score(_reward([r["passed"] for r in results], opts.score), {**base, "constraints": results})

    def _score_tulu3(self, spec: FuncSpec, views: list[str], base: dict[str, Any]) -> Score:
        if spec.func_name not in TULU3_FUNCTIONS:
            raise InvalidInput(f"unknown func_name {spec.func_name!r}")
        try:
            passed, error = _run(lambda text: call_tulu3(spec.func_name, text, spec.args), views)
        except re.error as exc:
            raise InvalidInput(f"{spec.func_name}: {exc}") from None
        if error and error.startswith("TypeError"):
            raise InvalidInput(f"{spec.func_name}: {error}")
        result: dict[str, Any] = {"instruction_id": spec.func_name, "passed": passed}
        if error:
            result["error"] = error
        return Score(float(passed), {**base, "constraints": [result]})


def _reward(passed: list[bool], how: str) -> float:
    if not passed:
        return 0.0  # open-instruct: no constraints, no reward
    if how == "all":
        return float(all(passed))
    return sum(passed) / len(passed)
