"""benchmarks/trainer_gpu.py (issue 28's CUDA leg) runs end to end with `--tiny` on CPU: the torch engine
generates, the ifeval verifier scores, the learner steps and the weights sync, full fine-tune then LoRA, and
the JSON the GPU run reports is complete. Also the padded character tokenizer the 0.5B model decodes with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from olmorl.trainer._tiny import CHARACTERS, SPECIAL_TOKENS, build_char_tokenizer

ROOT = Path(__file__).resolve().parents[1]


def test_tiny_run_reports_both_modes(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "trainer_gpu.py"), "--tiny"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((tmp_path / "trainer_gpu.json").read_text())
    assert result["device"] == "cpu" and (result["engine_dtype"], result["learner_dtype"]) == ("float32", "float32")
    full, lora = result["rows"]
    assert (full["mode"], lora["mode"]) == ("full", "lora")
    assert full["trainable"] == full["params"] == lora["params"]
    assert 0 < lora["trainable"] < full["trainable"]
    assert lora["sync_mib"] < full["sync_mib"]  # the adapter alone travels
    tokens = result["prompts"] * result["group"] * result["new_tokens"]  # EOS ignored: every completion is full
    for row in (full, lora):
        assert len(row["steps"]) == 2
        assert all(s["gen_tokens"] == tokens for s in row["steps"])
        assert all(0.0 <= s["reward_mean"] <= 1.0 for s in row["steps"])
        assert all(0 <= s["varied_groups"] <= result["prompts"] for s in row["steps"])
        assert row["gen_tokens_per_s"] > 0 and row["learn_s_median"] > 0 and row["sync_s_median"] > 0
        assert row["peak_gib"] is None  # GPU memory only on CUDA
    table = proc.stdout.split("mode ", 1)[1]
    assert "\nfull " in table and "\nlora " in table


def test_padded_char_tokenizer_decodes_every_id_and_encodes_as_before(tmp_path):
    base = len(SPECIAL_TOKENS) + len(CHARACTERS)
    padded = build_char_tokenizer(tmp_path / "padded", vocab_size=base + 900)
    plain = build_char_tokenizer(tmp_path / "plain")
    assert len(padded) == base + 900
    words = [padded.decode([i]) for i in range(base, base + 900)]
    assert len(set(words)) == 900
    assert all(len(w) == 5 and w[0] == " " and w[1:].isalpha() and w[1:].islower() for w in words)
    text = "Write a note: e appears 3 times.\n"
    assert padded(text, add_special_tokens=False).input_ids == plain(text, add_special_tokens=False).input_ids
    with pytest.raises(ValueError, match="at least"):
        build_char_tokenizer(tmp_path / "small", vocab_size=base - 1)
