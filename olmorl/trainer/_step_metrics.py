"""One training step's metrics row, from what the loop tallied since the step before.

Rewards are those of every group scored since the last step (overall, per verifier, per composite component;
none when nothing new was scored: a 0 would be a false dip in every reward curve), `reward_trained` those of
the groups the step trained on; then filtering, drops and retries, completion lengths, the staleness of the
trained tokens, the reward server's and the teacher's latency, and the sampled reverse KL to the teacher.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from olmorl.trainer._config import TrainConfig
    from olmorl.trainer._distill import Teacher
    from olmorl.trainer._loop import ScoredGroup
    from olmorl.trainer._rewards import GroupScorer


@dataclass
class StepTally:
    """What was scored since the last step (a new tally per step)."""

    rewards: list[tuple[str, list[float]]] = field(default_factory=list)  # (verifier label, the group's rewards)
    components: list[tuple[str, list[float]]] = field(default_factory=list)  # composite rows' (component, rewards)
    completions: list[tuple[int, bool]] = field(default_factory=list)  # (completion tokens, truncated) per completion
    distill_kl: list[float] = field(default_factory=list)  # sampled reverse KL to the teacher per completion token


def step_metrics(batch: list[ScoredGroup], stats: dict, lags: Counter, tally: StepTally, counters: Counter[str],
                 cfg: TrainConfig, scorer: GroupScorer, teacher: Teacher | None) -> dict:
    """The row: the learner's `stats`, then what `tally` and `counters` hold, `lags` (trained tokens by versions
    behind) and the scorer's and teacher's latencies since they were last cleared."""
    metrics = dict(stats)
    if tally.rewards:
        all_rewards = [r for _, rs in tally.rewards for r in rs]
        metrics["reward"] = sum(all_rewards) / len(all_rewards)
        for verifier in sorted({v for v, _ in tally.rewards}):
            rs = [r for v, group in tally.rewards if v == verifier for r in group]
            metrics[f"reward/{verifier}"] = sum(rs) / len(rs)
    for name in sorted({name for name, _ in tally.components}):  # composite rows, one curve per component
        rs = [r for n, group in tally.components if n == name for r in group]
        metrics[f"reward_component/{name}"] = sum(rs) / len(rs)
    trained = [r for sg in batch for r in sg.rewards]
    metrics["reward_trained"] = sum(trained) / max(len(trained), 1)  # the groups this step trained on
    n_scored = max(counters["groups_scored"], 1)
    metrics.update(zero_std_frac=counters["filtered"] / n_scored,
                   sampling_rounds=n_scored / cfg.prompts_per_step,
                   groups_trained=float(sum(bool(sg.samples) for sg in batch)),
                   dropped_invalid=float(counters["dropped_invalid"]),
                   dropped_error=float(counters["dropped_error"]),
                   stale_dropped=float(counters["stale_dropped"]),
                   reward_timeouts=float(counters["timeouts"]),
                   reward_retries=float(scorer.retries))
    if counters["judged_groups"]:  # comparative judges: a low agreement says the judge follows positions
        metrics["judge_agreement"] = counters["judge_agreement"] / counters["judged_groups"]
    if cfg.advantage_per_component:  # groups that were not weighted-sum composites: one reward
        metrics["advantage_not_per_component"] = float(counters["advantage_not_per_component"])
    if tally.completions:
        lengths = [n for n, _ in tally.completions]
        metrics.update(completion_len_mean=sum(lengths) / len(lengths), completion_len_max=float(max(lengths)),
                       truncated_frac=sum(t for _, t in tally.completions) / len(lengths))
    if lags:
        total = sum(lags.values())
        metrics["staleness_mean"] = sum(k * n for k, n in lags.items()) / total
        metrics["staleness_max"] = float(max(lags))
        metrics["staleness_hist"] = {str(k): n / total for k, n in sorted(lags.items())}
    if scorer.latencies:
        metrics["reward_latency_s"] = sum(scorer.latencies) / len(scorer.latencies)
    if tally.distill_kl:  # the student's sampled reverse KL to the teacher, per token (falls as it learns)
        metrics["distill/reverse_kl"] = sum(tally.distill_kl) / len(tally.distill_kl)
    if teacher is not None and teacher.latencies:
        metrics["teacher_latency_s"] = sum(teacher.latencies) / len(teacher.latencies)
    return metrics
