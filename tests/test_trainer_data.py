"""Trainer config (YAML + flags) and RLVR data: chat template, row shapes, JSONL/Parquet, weighted mixing."""

import argparse
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from olmorl.trainer._config import TrainConfig, add_config_flags, field_comments, load_config, overrides_from_args
from olmorl.trainer._data import PromptMixer, build_prompts, load_sources
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
    assert prompts[1].ground_truth == "hi" and prompts[1].verifier == "string_match"
    assert prompts[1].messages == ({"role": "user", "content": "Say hi"},)
    assert build_prompts(rows[:1], tokenizer, source="s", max_prompt_tokens=20, verifier_override="gsm8k")[0].verifier == "gsm8k"
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
