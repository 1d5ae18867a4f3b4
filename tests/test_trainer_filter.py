"""`olmorl-train filter` end to end: a tiny local model whose answers have known pass rates, a real reward
server, kept rows, per-source statistics, and a resumed run that only scores what is new."""

import json
import math
import subprocess
import sys

import pytest
import torch


@pytest.fixture(scope="module")
def biased_model(tmp_path_factory):
    """Answers "1" with p=0.95 and "2" with p=0.05 whatever the prompt (zeroed layers, a crafted head)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from olmorl.trainer._tiny import build_char_tokenizer

    out = tmp_path_factory.mktemp("filter_model")
    tok = build_char_tokenizer(out)
    hidden = 16
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, max_position_embeddings=64, tie_word_embeddings=False,
                      pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.Linear):
                module.weight.zero_()
        model.model.embed_tokens.weight.fill_(1.0)  # the residual stream is all ones; RMSNorm keeps it so
        logits = torch.full((len(tok),), -40.0)
        logits[tok.convert_tokens_to_ids("1")] = math.log(0.95)
        logits[tok.convert_tokens_to_ids("2")] = math.log(0.05)
        model.lm_head.weight.copy_((logits / hidden)[:, None].expand(-1, hidden))
    model.save_pretrained(str(out))
    return out


def _rows(answers):
    return [{"messages": [{"role": "user", "content": f"q{i}?"}], "ground_truth": a, "dataset": "string_f1"}
            for i, a in enumerate(answers)]


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _filter(model, data, out, *extra):
    cmd = [sys.executable, "-m", "olmorl.trainer._cli", "filter", "--model", str(model), "--data", *map(str, data),
           "--rollouts", "16", "--max-pass-rate", "0.625", "--max-new-tokens", "1", "--out", str(out), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc, json.loads(proc.stdout.strip().splitlines()[-1])


def test_filter_keeps_unsolved_prompts_reports_per_source_and_resumes(biased_model, tmp_path, reward_server):
    a, b, out = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "kept.jsonl"
    _write(a, _rows(["1", "2", "1", "3"]))
    _write(b, _rows(["2", "1"]) + [{"ground_truth": "1", "dataset": "string_f1"}])  # last row: no messages
    # first run: embedded reward server, progress bar on
    proc, result = _filter(biased_model, [a, b], out)
    assert "filter" in proc.stderr and "difficulty filter" in proc.stderr  # progress bar and the summary table
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    # "1" is solved ~95% of the time (dropped); "2" ~5% and "3" never (kept)
    assert sorted((r["messages"][0]["content"], r["ground_truth"]) for r in kept) == \
        [("q0?", "2"), ("q1?", "2"), ("q3?", "3")]
    sa, sb = result["sources"][str(a)], result["sources"][str(b)]
    assert (sa["scored"], sa["kept"], sa["dropped"], sa["unscored"]) == (4, 2, 2, 0)
    assert (sb["scored"], sb["kept"], sb["dropped"]) == (2, 1, 1)
    assert 0.3 < sa["mean_pass_rate"] < 0.7 and sum(sa["pass_rate_hist"].values()) == 4
    progress = [json.loads(line) for line in (tmp_path / "kept.jsonl.progress.jsonl").read_text().splitlines()]
    assert len(progress) == 6 and all(0.0 <= p["pass_rate"] <= 1.0 for p in progress)
    assert json.loads((tmp_path / "kept.jsonl.stats.json").read_text()) == result["sources"]

    # resumed run on a grown source, against a remote reward server: only the new prompt is scored
    _write(a, _rows(["1", "2", "1", "3", "3"]))
    _, again = _filter(biased_model, [a, b], out, "--reward-url", reward_server(), "--no-progress")
    sa = again["sources"][str(a)]
    assert (sa["scored"], sa["kept"], sa["skipped_done"]) == (1, 1, 4)
    assert again["sources"][str(b)]["skipped_done"] == 2 and again["sources"][str(b)]["scored"] == 0
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(kept) == 4 and kept[-1]["messages"][0]["content"] == "q4?"


def test_filter_rejects_an_inverted_pass_rate_range(biased_model, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "olmorl.trainer._cli", "filter", "--model", str(biased_model),
                           "--data", "x.jsonl", "--out", str(tmp_path / "o.jsonl"), "--min-pass-rate", "0.9",
                           "--max-pass-rate", "0.5"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--min-pass-rate <= --max-pass-rate" in proc.stderr
