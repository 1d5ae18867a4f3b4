"""Differential test: our `reference` semantics against lm-eval 0.4.13's IFEval checkers.

lm-eval needs NLTK's punkt model, which no package on the index ships as data; the English
`punkt_tab` files ship inside olmorl (olmorl/rewards/instructions/nltk_data, see its README) and
NLTK_DATA points there before lm-eval is imported, so the reference runs offline with the real model.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

NLTK_DATA = Path(__file__).parent.parent / "olmorl" / "rewards" / "instructions" / "nltk_data"
os.environ["NLTK_DATA"] = str(NLTK_DATA)

from tests._ifeval_corpus import kwargs_for, response  # noqa: E402

from olmorl.rewards.instructions import CONSTRAINTS  # noqa: E402

N_RESPONSES = 1500


@pytest.fixture(scope="module")
def lm_eval_registry():
    import nltk

    nltk.data.path.insert(0, str(NLTK_DATA))
    from langdetect import DetectorFactory

    from lm_eval.tasks.ifeval import instructions_registry

    DetectorFactory.seed = 0
    return instructions_registry.INSTRUCTION_DICT


def _reference(registry, instruction_id: str, kwargs: dict, text: str) -> bool:
    from langdetect import DetectorFactory

    DetectorFactory.seed = 0
    checker = registry[instruction_id](instruction_id)
    checker.build_description(**kwargs)
    return bool(text.strip() and checker.check_following(text))


def test_agreement_with_lm_eval(lm_eval_registry):
    rng = random.Random(1234)
    ids = sorted(lm_eval_registry)
    assert set(ids) == {k for k, c in CONSTRAINTS.items() if c.source == "ifeval"}
    total = agree = 0
    per_id: dict[str, list[int]] = {i: [0, 0] for i in ids}
    mismatches = []
    for _ in range(N_RESPONSES):
        text = response(rng)
        for instruction_id in rng.sample(ids, 8):
            kwargs = kwargs_for(instruction_id, text, rng)
            expected = _reference(lm_eval_registry, instruction_id, kwargs, text)
            entry = CONSTRAINTS[instruction_id]
            got = bool(text.strip()) and entry.check(text, entry.parse_kwargs(kwargs), False)
            total += 1
            per_id[instruction_id][1] += 1
            if got == expected:
                agree += 1
                per_id[instruction_id][0] += 1
            elif len(mismatches) < 20:
                mismatches.append((instruction_id, kwargs, text[:200], expected, got))
    rate = agree / total
    print(f"\nIFEval agreement with lm-eval: {agree}/{total} = {rate:.4%}")
    for instruction_id, (ok, n) in per_id.items():
        if ok != n:
            print(f"  {instruction_id}: {ok}/{n}")
    assert total >= 10_000
    assert rate >= 0.995, mismatches
