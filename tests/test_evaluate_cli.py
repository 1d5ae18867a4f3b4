"""`olmorl-rewards verify FILE`: in-process scoring of JSONL and Parquet, open-instruct rows, labels."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

ROWS = [
    {"response": "<answer>Paris</answer>", "ground_truth": "paris", "verifier": "string_match", "label": True},
    {"response": "<answer>Lyon</answer>", "ground_truth": "paris", "verifier": "string_match", "label": True},
    {"response": "no tags", "ground_truth": "x", "verifier": "string_match", "label": False},
    {"response": "x", "ground_truth": "x", "verifier": "no_such_verifier", "label": False},
]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "olmorl.rewards", "verify", *args, "--workers", "1"],
                          capture_output=True, text=True, timeout=120)


def test_jsonl_scores_rows_and_summarizes_against_labels(tmp_path):
    data, out = tmp_path / "rows.jsonl", tmp_path / "scored.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    proc = run_cli(str(data), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["reward"] for r in scored] == [1.0, 0.0, 0.0, None]  # the unknown verifier's row was not scored
    assert [r["status"] for r in scored] == ["ok", "ok", "ok", "invalid"]
    assert scored[0]["label"] is True  # input columns are kept
    # summary: per-verifier rows plus "all", status counts, accuracy / FP / FN against the labels, over ok rows
    all_row = next(line for line in proc.stdout.splitlines() if line.startswith("│ all"))
    cells = [c.strip() for c in all_row.strip("│").split("│")]
    assert cells[:7] == ["all", "4", "0.3333", "3", "1", "0", "0"]
    assert cells[7:] == ["66.67%", "0", "1"]
    assert "rows/s" in proc.stdout


def test_parquet_open_instruct_rows_with_column_mapping(tmp_path):
    rows = [
        {"messages": [{"role": "user", "content": "Capital of France?"}], "ground_truth": "Paris",
         "dataset": "string_matcher", "completion": "<think>Lyon?</think><answer>Paris</answer>"},
        {"messages": [{"role": "user", "content": "Capital of Italy?"}], "ground_truth": "Rome",
         "dataset": "string_matcher", "completion": "<answer>Milan</answer>"},
    ]
    path, out = tmp_path / "rows.parquet", tmp_path / "scored.jsonl"
    pq.write_table(pa.Table.from_pylist(rows), path)
    proc = run_cli(str(path), "--response-column", "completion", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["verifier"], r["reward"], r["status"]) for r in scored] == [
        ("string_match", 1.0, "ok"), ("string_match", 0.0, "ok")]


def test_multi_verifier_rows_sum_rewards(tmp_path):
    data, out = tmp_path / "rows.jsonl", tmp_path / "scored.jsonl"
    row = {"messages": [{"role": "user", "content": "Say cat"}], "ground_truth": ["cat", "cat"],
           "dataset": ["string_matcher", "string_f1"], "response": "<answer>cat</answer> cat"}
    data.write_text(json.dumps(row) + "\n")
    proc = run_cli(str(data), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    scored = json.loads(out.read_text())
    assert scored["verifier"] == "string_match+string_f1"
    assert scored["status"] == "ok" and abs(scored["reward"] - (1.0 + 2 / 3)) < 1e-9  # exact match + F1 of 2/3


def test_missing_columns_and_files_are_one_line_errors_before_scoring(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps({"completion": r["response"], "ground_truth": r["ground_truth"],
                                          "verifier": r["verifier"]}) for r in ROWS) + "\n")
    proc = run_cli(str(data))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (f"olmorl-rewards verify: error: {data}: no column 'response' in 4 of 4 rows "
                                   "(first: row 1); name it with --response-column. Columns found: completion, "
                                   "ground_truth, verifier")
    assert run_cli(str(data), "--response-column", "completion").returncode == 0
    no_truth = run_cli(str(data), "--response-column", "completion", "--ground-truth-column", "answer")
    assert no_truth.returncode == 2 and "no column 'answer'" in no_truth.stderr and "--ground-truth-column" in no_truth.stderr
    data.write_text(json.dumps({"response": "x", "ground_truth": "x"}) + "\n")
    no_verifier = run_cli(str(data))
    assert no_verifier.returncode == 2 and "no column 'verifier' or 'dataset'" in no_verifier.stderr
    assert "--verifier-column" in no_verifier.stderr
    missing = run_cli(str(tmp_path / "nope.jsonl"))
    assert (missing.returncode, missing.stderr) == (2, f"olmorl-rewards verify: error: {tmp_path / 'nope.jsonl'}: "
                                                       "no such file\n")
    data.write_text('{"response": "x"\n')
    broken = run_cli(str(data))
    assert broken.returncode == 2 and len(broken.stderr.splitlines()) == 1 and ":1: not valid JSON" in broken.stderr


def test_nothing_scored_exits_non_zero_and_no_accuracy_over_unscored_rows(tmp_path):
    data, out = tmp_path / "rows.jsonl", tmp_path / "scored.jsonl"
    data.write_text("\n".join(json.dumps({**r, "verifier": "no_such_verifier"}) for r in ROWS) + "\n")
    proc = run_cli(str(data), "--output", str(out))
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1].startswith("olmorl-rewards verify: error: no row could be scored (4 rows not "
                                                   "ok); first error: unknown verifier 'no_such_verifier'")
    all_row = next(line for line in proc.stdout.splitlines() if line.startswith("│ all"))
    assert [c.strip() for c in all_row.strip("│").split("│")] == ["all", "4", "-", "0", "4", "0", "0", "-", "-", "-"]
    assert {json.loads(line)["reward"] for line in out.read_text().splitlines()} == {None}


def test_help_shows_each_default():
    proc = subprocess.run([sys.executable, "-m", "olmorl.rewards", "verify", "--help"], capture_output=True,
                          text=True, timeout=60)
    text = " ".join(proc.stdout.split())
    for default in ("(default: response)", "(default: ground_truth)", "(default: label)", "(default: 256)",
                    "(default: in-process)", "(default: verifier, else dataset)", "(default: one per core)"):
        assert default in text


def test_unconfigured_judge_in_process_names_the_variables_to_set(tmp_path):
    data, out = tmp_path / "rows.jsonl", tmp_path / "scored.jsonl"
    data.write_text(json.dumps({"prompt": "Hi?", "response": "Hello.", "ground_truth": None, "verifier": "judge"}) + "\n"
                    + json.dumps(ROWS[0]) + "\n")
    proc = subprocess.run([sys.executable, "-m", "olmorl.rewards", "verify", str(data), "-o", str(out), "--workers", "1"],
                          capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if not k.startswith("OLMORL_JUDGE_")})
    assert proc.returncode == 0, proc.stderr
    judged = json.loads(out.read_text().splitlines()[0])
    assert judged["status"] == "error" and "OLMORL_JUDGE_BASE_URL and OLMORL_JUDGE_MODEL" in judged["error"]
    assert "`olmorl-rewards verify` when it scores in-process" in judged["error"]
