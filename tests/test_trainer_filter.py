"""`olmorl-train filter` end to end: a tiny local model whose answers have known pass rates, a real reward
server, kept rows, per-source statistics, and a resumed run that only scores what is new."""

import json
import subprocess
import sys

import pytest
from _biased_model import answer_rows, build_biased_model


@pytest.fixture(scope="module")
def biased_model(tmp_path_factory):
    """Answers "1" with p=0.95 and "2" with p=0.05 whatever the prompt."""
    return build_biased_model(tmp_path_factory.mktemp("filter_model"))


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
    _write(a, answer_rows(["1", "2", "1", "3"]))
    _write(b, answer_rows(["2", "1"]) + [{"ground_truth": "1", "dataset": "string_f1"}])  # last row: no messages
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
    _write(a, answer_rows(["1", "2", "1", "3", "3"]))
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
