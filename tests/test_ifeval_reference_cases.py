"""`reference` semantics on cases built by reading the IFBench / IFEvalG / IFEval sources (see
tests/_ifbench_reference_cases.py for how each expected value was derived)."""

from __future__ import annotations

import pytest

from olmorl.rewards._settings import Settings
from olmorl.rewards.instructions import IFEvalVerifier
from tests._ifbench_reference_cases import CASES, POLICY_CASES

VERIFIER = IFEvalVerifier(Settings())


def _followed(instruction_id: str, kwargs: dict, text: str) -> bool:
    gt = [{"instruction_id": [instruction_id], "kwargs": [kwargs]}]
    task = VERIFIER.make_task(text, gt, {"mode": "strict", "semantics": "reference"}, None)
    return VERIFIER.score(task).reward == 1.0


@pytest.mark.parametrize(("instruction_id", "kwargs", "text", "expected"), CASES + POLICY_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES + POLICY_CASES)])
def test_reference_case(instruction_id, kwargs, text, expected):
    assert _followed(instruction_id, kwargs, text) is expected
