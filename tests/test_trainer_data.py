"""Trainer config (YAML + flags) and RLVR data: chat template, row shapes, JSONL/Parquet, weighted mixing."""

import argparse
import asyncio
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from olmorl.trainer._config import TrainConfig, add_config_flags, field_comments, load_config, overrides_from_args
from olmorl.rewards.service._local import LocalRewardServer
from olmorl.trainer._data import Check, PromptMixer, build_prompts, load_sources
from olmorl.trainer._rewards import GroupScorer, score_completions
from olmorl.trainer._tiny import build_char_tokenizer, write_jsonl


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return build_char_tokenizer(tmp_path_factory.mktemp("tok"))


def test_yaml_then_flags_with_types_coerced(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("model: m\ntrain_files: [a.jsonl, b.parquet]\ntrain_weights: [3, 1]\nlearning_rate: 1e-5\n")
    parser = argparse.ArgumentParser()
    add_config_flags(parser)
    args = parser.parse_args(["--learning-rate", "3e-4", "--max-staleness", "2", "--tis-cap", "null",
                              "--adam-betas", "[0.9, 0.99]", "--filter-zero-std", "false"])
    cfg = load_config(path, overrides_from_args(args))
    assert cfg.train_files == ("a.jsonl", "b.parquet") and cfg.train_weights == (3.0, 1.0)
    assert cfg.learning_rate == 3e-4 and cfg.max_staleness == 2 and cfg.tis_cap is None
    assert cfg.adam_betas == (0.9, 0.99) and cfg.filter_zero_std is False
    assert cfg.to_dict()["train_files"] == ["a.jsonl", "b.parquet"]


def test_bad_config_values_are_named():
    with pytest.raises(ValueError, match="unknown config keys: lr"):
        load_config(None, {"lr": 1.0})
    with pytest.raises(ValueError, match="loss_norm must be one of"):
        TrainConfig(loss_norm="seq-mean-token-sum")
    with pytest.raises(ValueError, match="one weight per train file"):
        TrainConfig(train_files=("a",), train_weights=(1.0, 2.0))
    with pytest.raises(ValueError, match="group_size"):
        TrainConfig(group_size=1)


def test_every_config_field_has_a_comment():
    import dataclasses

    comments = field_comments()
    assert [f.name for f in dataclasses.fields(TrainConfig) if f.name not in comments] == []


def test_rows_become_chat_prompts(tokenizer):
    rows = [
        {"messages": [{"role": "user", "content": "1+2="}], "ground_truth": "3", "dataset": "math"},
        # trailing assistant turn dropped; one-element lists (newer Ai2 releases) unwrapped
        {"messages": [{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "hi"}],
         "ground_truth": ["hi"], "dataset": ["string_match"]},
        {"messages": [], "ground_truth": "x", "dataset": "math"},  # malformed: dropped
        {"messages": [{"role": "user", "content": "9" * 50}], "ground_truth": "x", "dataset": "math"},  # too long
    ]
    prompts = build_prompts(rows, tokenizer, source="s", max_prompt_tokens=20)
    assert [tokenizer.decode(list(p.prompt_ids)) for p in prompts] == ["1+2=", "Say hi"]
    assert prompts[1].checks == (Check("string_match", "hi"),)
    assert prompts[1].messages == ({"role": "user", "content": "Say hi"},)
    overridden = build_prompts(rows[:1], tokenizer, source="s", max_prompt_tokens=20, verifier_override="gsm8k")
    assert overridden[0].checks == (Check("gsm8k", "3"),)
    with pytest.raises(ValueError, match="no usable rows"):
        build_prompts(rows[2:], tokenizer, source="s", max_prompt_tokens=20)


def test_jsonl_and_parquet_sources_mix_by_weight_and_resume(tokenizer, tmp_path):
    rows_a = [{"messages": [{"role": "user", "content": f"a{i}"}], "ground_truth": str(i), "dataset": "math"}
              for i in range(10)]
    rows_b = [{"messages": [{"role": "user", "content": f"b{i}"}], "ground_truth": str(i), "dataset": "math"}
              for i in range(5)]
    write_jsonl(rows_a, tmp_path / "a.jsonl")
    pq.write_table(pa.Table.from_pylist(rows_b), tmp_path / "b.parquet")
    sources = load_sources((str(tmp_path / "a.jsonl"), str(tmp_path / "b.parquet")), tokenizer, max_prompt_tokens=64)
    mixer = PromptMixer(sources, [3.0, 1.0], seed=0)
    drawn = [mixer.next() for _ in range(2000)]
    share = Counter(p.source.endswith("a.jsonl") for p in drawn)[True] / len(drawn)
    assert 0.72 <= share <= 0.78
    # each source is walked in shuffled epochs: the first 10 draws of a cover all 10 rows
    first_a = [p.index for p in drawn if p.source.endswith("a.jsonl")][:10]
    assert sorted(first_a) == list(range(10))
    state = mixer.state_dict()
    expected = [mixer.next().prompt_ids for _ in range(50)]
    restored = PromptMixer(sources, [3.0, 1.0], seed=123)
    restored.load_state_dict(state)
    assert [restored.next().prompt_ids for _ in range(50)] == expected


def test_multi_verifier_rows_become_checks(tokenizer, caplog):
    user = [{"role": "user", "content": "1+2="}]
    rows = [
        {"messages": user, "ground_truth": ["3", IF_OCEAN], "dataset": ["math", "ifeval"]},
        {"messages": user, "ground_truth": [["assert f() == 3"]], "dataset": ["code"]},  # one-element lists
        {"messages": user, "ground_truth": ["3"], "dataset": ["math", "ifeval"]},  # lengths differ: malformed
        {"messages": user, "ground_truth": "3", "dataset": ["math", "ifeval"]},  # not a list: malformed
        {"messages": user, "ground_truth": [], "dataset": []},  # no verifier: malformed
    ]
    with caplog.at_level("WARNING", logger="olmorl.trainer"):
        prompts = build_prompts(rows, tokenizer, source="s", max_prompt_tokens=20)
    assert [p.checks for p in prompts] == [(Check("math", "3"), Check("ifeval", IF_OCEAN)),
                                          (Check("code", ["assert f() == 3"]),)]
    assert [p.verifier_label for p in prompts] == ["math+ifeval", "code"]
    assert "'malformed': 3" in caplog.text
    overridden = build_prompts(rows[:1], tokenizer, source="s", max_prompt_tokens=20, verifier_override="gsm8k")
    assert overridden[0].checks == (Check("gsm8k", "3"), Check("gsm8k", IF_OCEAN))


IF_OCEAN = '{"instruction_id": ["keywords:existence"], "kwargs": [{"keywords": ["ocean"]}]}'


@pytest.fixture(scope="module")
def reward_url(tmp_path_factory):
    server = LocalRewardServer(workers=1, log_path=str(tmp_path_factory.mktemp("rewards") / "server.log")).start()
    yield server.url
    server.stop()


def test_completions_sum_their_checks_over_one_live_server(tokenizer, reward_url):
    user = [{"role": "user", "content": "1+2="}]
    rows = [{"messages": user, "ground_truth": ["3", IF_OCEAN], "dataset": ["math", "ifeval"]},
            {"messages": user, "ground_truth": "3", "dataset": "math"},
            {"messages": user, "ground_truth": ["3", "x"], "dataset": ["math", "no_such_verifier"]}]
    multi, single, unknown = build_prompts(rows, tokenizer, source="s", max_prompt_tokens=20)
    cases = [(multi, "The ocean says \\boxed{3}"),  # both pass: 2
             (multi, "The ocean says \\boxed{4}"),  # IF only: 1
             (multi, "It is \\boxed{3}"),  # math only: 1
             (multi, "It is \\boxed{5}"),  # neither: 0
             (single, "\\boxed{3}"),  # one check: the server's result as is
             (unknown, "\\boxed{3}")]  # a check the server cannot run: the completion is invalid

    async def score():
        scorer = GroupScorer([reward_url], api_key=None, timeout_s=60.0, batch_size=64, max_wait_s=30.0)
        try:
            return await score_completions(scorer, [p for p, _ in cases], [t for _, t in cases])
        finally:
            await scorer.close()

    results = asyncio.run(score())
    assert [(r.reward, r.status) for r in results] == [(2.0, "ok"), (1.0, "ok"), (1.0, "ok"), (0.0, "ok"),
                                                       (1.0, "ok"), (0.0, "invalid")]
    assert results[0].verifier == "math+ifeval" and results[4].verifier == "math"
    assert [c["status"] for c in results[5].details["checks"]] == ["ok", "invalid"]
    assert "no_such_verifier" in results[5].error
