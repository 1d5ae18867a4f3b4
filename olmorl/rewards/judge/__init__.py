"""LM-judge verifiers: chat responses scored by a judge model over any OpenAI-compatible endpoint.

`judge` (options `mode`, `template`) and open-instruct's names (`general-quality`, `general-quality_ref`,
`general-factuality`, `general-creative_writing`, `general-refusal`, `general-safety`) as presets of it.
A reference-mode ground truth may be several references, any one acceptable.
`rubric_judge`: weighted criteria judged one by one, explicit aggregation (`_rubric.py`).
`pairwise_judge` / `group_judge`: the completions of one prompt judged together, in two orders (`_comparative.py`).
The endpoint, model and key come from the server's `judge` settings (OLMORL_JUDGE_*), never from items.
"""

from olmorl.rewards.judge._cache import CachedJudgement, JudgeCache, cache_key
from olmorl.rewards.judge._client import JudgeCallError, JudgeClient, JudgeReply, RateLimit, retry_after_s
from olmorl.rewards.judge._parse import Judgement, JudgementError, parse_judgement
from olmorl.rewards.judge._templates import (
    MODES,
    TEMPLATE_NAMES,
    TEMPLATES,
    defuse_tags,
    render_prompt,
    render_question,
    render_references,
    strip_reasoning,
    truncate_middle,
)
from olmorl.rewards.judge._verifier import PRESETS, JudgeOptions, JudgeVerifier
from olmorl.rewards.judge._comparative import (  # noqa: E402
    MAX_GROUP,
    GroupJudgeVerifier,
    GroupTruth,
    PairwiseJudgeVerifier,
    agreement,
    normalized_rank,
)
from olmorl.rewards.judge._rubric import AGGREGATION, Criterion, RubricJudgeVerifier  # noqa: E402  (after the judge)

__all__ = [
    "AGGREGATION",
    "MAX_GROUP",
    "GroupJudgeVerifier",
    "GroupTruth",
    "PairwiseJudgeVerifier",
    "agreement",
    "normalized_rank",
    "Criterion",
    "RubricJudgeVerifier",
    "MODES",
    "PRESETS",
    "TEMPLATES",
    "TEMPLATE_NAMES",
    "CachedJudgement",
    "JudgeCache",
    "JudgeCallError",
    "JudgeClient",
    "JudgeOptions",
    "JudgeReply",
    "JudgeVerifier",
    "Judgement",
    "JudgementError",
    "RateLimit",
    "cache_key",
    "defuse_tags",
    "parse_judgement",
    "render_prompt",
    "render_question",
    "render_references",
    "retry_after_s",
    "strip_reasoning",
    "truncate_middle",
]
