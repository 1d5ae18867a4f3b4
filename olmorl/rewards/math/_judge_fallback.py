"""The math verifiers' `judge_fallback` (NeMo Gym's math-with-judge pattern): where the symbolic check found no
answer, or an answer it could not match, the server's LM judge decides, in reference mode.

The pool worker runs the symbolic check; the judge call is I/O on the server's event loop, so it runs there as
the verifier's follow-up (`Verifier.follow_up`), with the `judge` verifier's client, cache and error rules.
Hedges, retractions and cut-off thinking are not sent: scoring those 0 is the verifiers' policy, not a failure
to read the answer, and a judge asked "is this equivalent" would pass a hedge that names the right value.
"""

from __future__ import annotations

import asyncio
from typing import Any

from olmorl.rewards.engine._registry import InvalidInput, ItemError, Score, Task
from olmorl.rewards._settings import Settings
from olmorl.rewards.judge._verifier import NOT_CONFIGURED, JudgeVerifier

# The symbolic outcomes the judge may overturn: no answer found, a mismatch, an answer SymPy cannot read.
FALLBACK_REASONS = frozenset({"no_answer", "mismatch", "unparseable"})
TEMPLATE = "answer_match"  # final-answer equivalence against the reference


def judge_configured(settings: Settings) -> bool:
    return bool(settings.judge.base_url and settings.judge.model)


def check_item(settings: Settings, prompt: Any) -> None:
    """Refuse a fallback item this server cannot judge (InvalidInput): no judge configured, or no question."""
    if not judge_configured(settings):
        raise InvalidInput(f"options: judge_fallback needs the LM judge, and {NOT_CONFIGURED}")
    if prompt is None or (isinstance(prompt, (str, list)) and not prompt):
        raise InvalidInput("prompt: judge_fallback needs the question (a string or chat messages) for the judge")


def needs_judge(task: Task, score: Score) -> bool:
    return bool(task.options.judge_fallback) and score.reward == 0.0 and score.details.get("reason") in (
        FALLBACK_REASONS)


async def ask_judge(judge: JudgeVerifier, task: Task, symbolic: Score, references: list[str]) -> Score:
    """The judge's verdict on a symbolic 0: reward 1 when its score is in the upper half of its scale, else 0; a
    judge that gives no verdict makes the item an error, never a 0."""
    judge_task = judge.make_task(task.response, references, {"mode": "reference", "template": TEMPLATE},
                                 task.prompt)
    try:
        verdict = await asyncio.wait_for(judge.score_async(judge_task), timeout=judge.judge.item_deadline_s)
    except (asyncio.TimeoutError, ItemError) as exc:
        failure = exc if isinstance(exc, ItemError) else ItemError(
            "error", f"the judge gave no verdict within {judge.judge.item_deadline_s:g} s", {"reason": "judge_timeout"})
        raise ItemError("error", f"judge_fallback: {failure.message or 'the judge gave no verdict'}",
                        {**_judged(symbolic, failure.details), "reason": "judge_failed"}) from None
    details = _judged(symbolic, verdict.details)
    match = verdict.reward >= 0.5
    return Score(float(match), {**details, "reason": None if match else "judge_mismatch"})


def _judged(symbolic: Score, judge_details: dict) -> dict:
    return {**symbolic.details, "method": "judge", "symbolic_reason": symbolic.details.get("reason"),
            "judge": judge_details}
