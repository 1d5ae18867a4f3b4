"""max_staleness under a long tail of rollout lengths, in real runs: `drop` discards the groups that outlive the
bound; `throttle` starts rollouts late enough that none does, so none is dropped and every trained token is
within the bound."""

import pytest
import torch

from olmorl.trainer import TrainConfig, Trainer
from olmorl.trainer._tiny import addition_rows, build_tiny_llama, fix_completion_lengths, write_jsonl

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ETA, B, STEPS = 1, 4, 8


def _long_tail(n: int) -> int:
    return 96 if n % 5 == 0 else 4  # one rollout in five decodes 24x longer than the rest


def _run(root, url, policy: str) -> list[dict]:
    cfg = TrainConfig(model=str(root / "model"), train_files=(str(root / "train.jsonl"),), reward_urls=(url,),
                      output_dir=str(root / policy), group_size=2, prompts_per_step=B, max_new_tokens=96,
                      engine_batch_size=16, filter_zero_std=False, active_sampling=False, async_steps=ETA,
                      max_staleness=ETA, staleness_policy=policy, learning_rate=1e-4, total_steps=STEPS,
                      torch_threads=1, tensorboard=False, save_every=10**6, keep_checkpoints=1)
    trainer = Trainer(cfg)
    fix_completion_lengths(trainer, _long_tail)
    return trainer.run()


def test_throttle_keeps_every_group_within_max_staleness_and_drops_none(tmp_path, reward_server):
    torch.set_num_threads(1)
    build_tiny_llama(tmp_path / "model", hidden=32, layers=1, heads=2)
    train, _ = addition_rows(seed=0)
    write_jsonl(train, tmp_path / "train.jsonl")
    url = reward_server(workers=1)

    dropping = _run(tmp_path, url, "drop")
    assert sum(h["stale_dropped"] for h in dropping) > 0  # the long rollouts outlive eta and are thrown away
    assert max(h["staleness_max"] for h in dropping) <= ETA

    throttled = _run(tmp_path, url, "throttle")
    assert len(throttled) == STEPS
    assert sum(h["stale_dropped"] for h in throttled) == 0
    assert all(h["staleness_max"] <= ETA for h in throttled)  # every trained token of every step
    assert sum(h["groups_trained"] for h in throttled) == STEPS * B
    assert max(h["completion_len_max"] for h in throttled if "completion_len_max" in h) == 96  # long ones ran


@pytest.fixture
def tiny(tmp_path):
    build_tiny_llama(tmp_path / "model", hidden=32, layers=1, heads=2)
    write_jsonl(addition_rows(seed=0)[0], tmp_path / "train.jsonl")
    return tmp_path


def _trainer(root, policy: str) -> Trainer:
    return Trainer(TrainConfig(model=str(root / "model"), train_files=(str(root / "train.jsonl"),),
                               output_dir=str(root / policy), prompts_per_step=B, async_steps=3, max_staleness=ETA,
                               staleness_policy=policy, tensorboard=False))


def _finish(trainer: Trainer, rid: int) -> None:
    from olmorl.trainer._loop import ScoredGroup
    from olmorl.trainer.engines._types import Completion, Group
    from olmorl.trainer.learners._samples import TrainSample

    v = trainer.admitted[rid]
    completion = Completion([7, 8], [-1.0, -1.0], [v, v], "stop")
    sample = TrainSample([1], [7, 8], [-1.0, -1.0], [v, v], 0.5)
    trainer.accepted.append(ScoredGroup(trainer.pending[rid], Group(rid, [1], [completion], None, v), [1.0], [sample]))


def test_throttle_admits_by_the_oldest_pending_groups_version(tiny):
    for policy, cap in (("drop", (3 + 3 + 1) * B), ("throttle", (2 + ETA + 1) * B)):
        trainer = _trainer(tiny, policy)
        trainer.step, trainer.trained_groups = 3, 3 * B
        for rid, version in enumerate([2, 3]):  # group 0 was submitted at version 2 and is still pending
            trainer.pending[rid], trainer.admitted[rid] = trainer.mixer.next(), version
        assert trainer._admission_cap() == cap  # AReaL's (i + eta + 1) * B with i = 3, or with i = 2 under throttle


def test_throttle_waits_for_a_running_group_that_would_outlive_the_bound(tiny):
    from collections import Counter

    trainer = _trainer(tiny, "throttle")
    trainer.step, trainer.counters = 3, Counter()
    for rid, version in enumerate([2, 3, 3, 3, 3]):
        trainer.pending[rid], trainer.admitted[rid] = trainer.mixer.next(), version
    for rid in (4, 3, 2, 1):  # the later groups finish first, group 0 (version 2) is still generating
        _finish(trainer, rid)
    assert trainer._take_batch() is None  # stepping without it would leave it 2 > eta versions behind
    _finish(trainer, 0)
    batch = trainer._take_batch()
    assert [sg.group.request_id for sg in batch] == [0, 4, 3, 2]  # the oldest first, then in finishing order
    assert trainer.counters["stale_dropped"] == 0 and [sg.group.request_id for sg in trainer.accepted] == [1]


def test_throttle_needs_max_staleness():
    with pytest.raises(ValueError, match="throttle needs max_staleness"):
        TrainConfig(staleness_policy="throttle")
    with pytest.raises(ValueError, match="staleness_policy"):
        TrainConfig(staleness_policy="wait", max_staleness=1)
