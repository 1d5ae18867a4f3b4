"""Agreement with peer graders' own expected verdicts: the cases (inputs and the verdict their authors expect)
recorded from math-verify's and NeMo-Skills' test suites in benchmarks/data/math_peer_cases.jsonl, source named
per row. The split was fixed by position before any grading; only the `dev` half was looked at while changing
the verifier, the `heldout` half is only measured (dev 88/90, heldout 85/90; main: 83/90 and 80/90)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from olmorl.rewards.engine._registry import load_verifiers
from olmorl.rewards._settings import Settings

CASES = Path(__file__).parents[1] / "benchmarks" / "data" / "math_peer_cases.jsonl"
# The dev disagreements left are policy: an inline span ending an unfinished line without a statement of what
# it is ("Special matrix: $...$") may be a response cut off; `\boxed{185\}` never closes its box.
MIN_AGREEMENT = {"dev": 0.97, "heldout": 0.94}


def _rows() -> list[dict]:
    return [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("split", ["dev", "heldout"])
def test_agreement_with_the_peer_verdicts(split):
    verifier = load_verifiers()["math"](Settings())
    part = [r for r in _rows() if r["split"] == split]
    assert len(part) >= 90 and all(r["source"] for r in part)
    graded = [(r, verifier.score(verifier.make_task(r["response"], r["ground_truth"], {}, None)).reward > 0.5)
              for r in part]
    wrong = [(r["ground_truth"], r["response"][-60:]) for r, got in graded if got != r["label"]]
    false_accepts = [(r["ground_truth"], r["response"][-60:]) for r, got in graded if got and not r["label"]]
    assert not false_accepts
    assert 1 - len(wrong) / len(part) >= MIN_AGREEMENT[split], wrong
