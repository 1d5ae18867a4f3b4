"""Fidelity of the `ifeval` verifier on real model outputs graded by their authors (the "Instruction following"
section of docs/fidelity.md).

    python benchmarks/if_fidelity.py [dev|heldout] [--show]

benchmarks/data/if_real_outputs.jsonl holds IFEval, IFBench and IF-RLVR-style outputs of several models, each with
the per-instruction verdicts the authors' grader wrote (Google's IFEval strict and loose files, NeMo Gym's
instruction_following and ifbench servers); benchmarks/data/README.md says where each row comes from. Each row is
graded by olmorl's `ifeval` verifier with `semantics=reference` in the mode of the authors' verdicts (`strict`:
the whole response; `loose`: IFEval's eight variants). Two deliberate olmorl semantics are graded against the strict
verdicts and reported apart: `rl` (the default mode: the text after the last `</think>`, answer tags dropped, a
training view no author's grader shares) and `fixed` (`mode=strict, semantics=fixed`: the references' known
defects corrected). One row per source, split and view: prompts, instructions,
prompt-level agreement (all instructions followed, as the authors say), instruction-level agreement, FP (olmorl says
followed, the authors not), FN (the reverse), instructions set apart (where a labels-only commit overturned a verdict
the authors' grader drew at random, `careful_<kind>` with a `careful_note`; left out of the shares), items olmorl
rejects as invalid input, agreement with the careful grader on every instruction, and beside them lm-eval 0.4.13's
IFEval checkers (Google's code, `random` seeded) on the rows whose ids are all IFEval's (strict and loose views).
`--show` lists every disagreeing instruction of the chosen split (read dev only: heldout is measured, never tuned
on).
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from olmorl.rewards._settings import Settings
from olmorl.rewards.engine._registry import InvalidInput
from olmorl.rewards.instructions import IFEvalVerifier

DATA = Path(__file__).parent / "data" / "if_real_outputs.jsonl"
NLTK_DATA = Path(__file__).parents[1] / "olmorl" / "rewards" / "instructions" / "nltk_data"
SOURCES = {  # (repository, path prefix) -> set name
    ("grimmmyshini/Evaluating-Instruction-Following-LLMs", "datasets/IfevalToInfo/"):
        "IFEval subset, 5 models (Google's grader)",
    ("grimmmyshini/Evaluating-Instruction-Following-LLMs", "datasets/InfoToIfeval/"):
        "InfoBench prompts, IFEval constraints, 2 models (Google's grader)",
    ("Jack-Lingjie/IFeval", ""): "IFEval, Llama-3.1-8B-Instruct (Google's grader)",
    ("CobaltConcrete/Sys2-CPI", ""): "IFEval, a Qwen3-4B fine-tune (Google's grader)",
    ("joeyliang1024/BenchWeaver", ""): "IFEval, GPT-4's example responses (Google's grader)",
    ("gio-usp/ifeval", ""): "IFEval, gpt-4o-mini (Google's grader)",
    ("xuanduy04/ordures_ultra_v3_gym", ""): "NeMo Gym rollouts"}
# view -> (ifeval options, the kind of verdicts it is compared with: the authors' `strict` or `loose` lists); `rl` and
# `fixed` are olmorl's own deliberate semantics (the default training view; the references' known defects
# corrected), reported apart
VIEWS = {"strict": ({"mode": "strict", "semantics": "reference"}, "strict"),
         "loose": ({"mode": "loose", "semantics": "reference"}, "loose"),
         "rl": ({"mode": "rl", "semantics": "reference"}, "strict"),
         "fixed": ({"mode": "strict", "semantics": "fixed"}, "strict")}
APART = ("rl", "fixed")
VERIFIER = IFEvalVerifier(Settings())


def load_rows(path: Path = DATA) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def source_name(row: dict[str, Any]) -> str:
    source = row["source"]
    name = next(v for (repo, prefix), v in SOURCES.items()
                if source["repo"] == repo and source["path"].startswith(prefix))
    if source["repo"].endswith("_gym"):
        name = f"{name}: {row['benchmark']}, {row['model']}"
    return f"{name}, batch {row['batch']}" if "batch" in row else name


def grade(row: dict[str, Any], view: str) -> list[bool]:
    """olmorl's per-instruction verdicts on a row in one of VIEWS; InvalidInput if it rejects the item."""
    ground_truth = [{"instruction_id": row["instruction_id_list"], "kwargs": row["kwargs"]}]
    task = VERIFIER.make_task(row["response"], ground_truth, VIEWS[view][0], row["prompt"])
    return [c["passed"] for c in VERIFIER.score(task).details["constraints"]]


def lm_eval_grader() -> Callable[[dict[str, Any], str], list[bool] | None]:
    """lm-eval 0.4.13's IFEval checkers (Google's code), the peer graded beside olmorl on the same rows: per-instruction
    verdicts in the strict or loose view, None where a row has an id outside IFEval's 25."""
    os.environ["NLTK_DATA"] = str(NLTK_DATA)  # lm-eval needs punkt, which olmorl ships; nothing is downloaded
    import nltk
    from langdetect import DetectorFactory

    nltk.data.path.insert(0, str(NLTK_DATA))
    from lm_eval.tasks.ifeval import instructions_registry, utils

    def peer(row: dict[str, Any], view: str) -> list[bool] | None:
        if view not in ("strict", "loose") or not set(row["instruction_id_list"]) <= set(
                instructions_registry.INSTRUCTION_DICT):
            return None
        DetectorFactory.seed = 0  # langdetect is random unless seeded
        random.seed(0)  # Google's checkers draw a random value for a missing or invalid kwarg (a '#' letter)
        example = utils.InputExample(key=0, instruction_id_list=row["instruction_id_list"], prompt=row["prompt"],
                                     kwargs=[k or {} for k in row["kwargs"]])
        check = utils.test_instruction_following_strict if view == "strict" else utils.test_instruction_following_loose
        return check(example, row["response"]).follow_instruction_list

    return peer


def labels(row: dict[str, Any], kind: str) -> tuple[list[bool], list[bool]] | None:
    """The authors' verdicts of a kind (strict or loose) and the careful grader's (the authors' unless a labels-only
    commit overturned one, `careful_<kind>` with a `careful_note`); None where the authors wrote none of that kind."""
    authors = row[f"authors_{kind}"]
    return None if authors is None else (authors, row.get(f"careful_{kind}", authors))


@dataclass
class Agreement:
    prompts: int = 0
    prompts_agree: int = 0
    instructions: int = 0
    instructions_agree: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, expected: list[bool], got: list[bool], apart: list[bool]) -> list[int]:
        """Count one row, leaving out the instructions set apart (and the row from the prompt-level count if it has
        one); the indices of the other instructions graded against their label."""
        if not any(apart):
            self.prompts += 1
            self.prompts_agree += all(got) == all(expected)
        kept = [(i, g, e) for i, (g, e, a) in enumerate(zip(got, expected, apart)) if not a]
        self.instructions += len(kept)
        self.instructions_agree += sum(g == e for _, g, e in kept)
        self.fp += sum(g and not e for _, g, e in kept)
        self.fn += sum(e and not g for _, g, e in kept)
        return [i for i, g, e in kept if g != e]

    def cells(self) -> list[str]:
        def share(k: int, n: int) -> str:
            return f"{100.0 * k / n:.1f}% ({k})" if n else "-"
        return [share(self.prompts_agree, self.prompts), share(self.instructions_agree, self.instructions),
                str(self.fp), str(self.fn)]


@dataclass
class Tally:
    olmorl: Agreement = field(default_factory=Agreement)  # with the authors, instructions set apart left out
    careful: Agreement = field(default_factory=Agreement)  # with the careful grader, every instruction
    peer: Agreement = field(default_factory=Agreement)  # lm-eval with the authors, as olmorl
    rows: int = 0
    instructions: int = 0
    apart: int = 0
    invalid: int = 0
    disagreements: list[tuple[str, str, bool, bool]] = field(default_factory=list)

    def add(self, row: dict[str, Any], authors: list[bool], careful: list[bool], got: list[bool] | InvalidInput,
            peer: list[bool] | None) -> None:
        """An instruction whose careful verdict differs from the authors' is set apart: the authors' grader decided
        it by a behaviour olmorl deliberately does not copy (its note says which)."""
        self.rows += 1
        self.instructions += len(authors)
        apart = [a != c for a, c in zip(authors, careful)]
        self.apart += sum(apart)
        if peer is not None:
            self.peer.add(authors, peer, apart)
        if isinstance(got, InvalidInput):
            self.invalid += 1
            self.disagreements.append((row["id"], f"invalid: {got}", all(authors), False))
            return
        self.careful.add(careful, got, [False] * len(careful))
        for i in self.olmorl.add(authors, got, apart):
            self.disagreements.append((row["id"], row["instruction_id_list"][i], authors[i], got[i]))

    def cells(self) -> list[str]:
        return [str(self.rows), str(self.instructions), *self.olmorl.cells(), str(self.apart), str(self.invalid),
                self.careful.cells()[1], str(self.peer.prompts) if self.peer.instructions else "-",
                *self.peer.cells()[:2]]


def tallies(rows: list[dict[str, Any]], peer: Callable[[dict[str, Any], str], list[bool] | None] | None = None,
            ) -> dict[tuple[str, str, str], Tally]:
    """(source, split, view) -> Tally, and ("all", split, view) for each split; the views set apart (APART) only
    in "all"."""
    out: dict[tuple[str, str, str], Tally] = defaultdict(Tally)
    for row in rows:
        for view, (_, kind) in VIEWS.items():
            expected = labels(row, kind)
            if expected is None:
                continue
            try:
                got: list[bool] | InvalidInput = grade(row, view)
            except InvalidInput as exc:
                got = exc
            peer_got = peer(row, view) if peer else None
            for name in ("all",) if view in APART else (source_name(row), "all"):
                out[(name, row["split"], view)].add(row, *expected, got, peer_got)
    return out


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    only = args[0] if args else None
    rows = [r for r in load_rows() if only is None or r["split"] == only]
    table = Table(title="ifeval verifier fidelity on real outputs: agreement with the authors' verdicts")
    for column in ("source", "split", "view", "prompts", "instructions", "olmorl prompt-level",
                   "olmorl instruction-level", "FP", "FN", "set apart", "invalid", "olmorl with careful grader",
                   "lm-eval prompts", "lm-eval prompt-level", "lm-eval instruction-level"):
        table.add_column(column, justify="left" if column in ("source", "split", "view") else "right")
    results = tallies(rows, lm_eval_grader())
    order = sorted(results, key=lambda k: (k[2] in APART, k[2] == "fixed", k[1], k[0] == "all", k[0], k[2]))
    for key in order:
        table.add_row(*key, *results[key].cells())
    Console(width=250).print(table)
    if "--show" in sys.argv:
        for (name, split, view), tally in sorted(results.items()):
            if name == "all":
                continue
            for row_id, instruction_id, label, passed in tally.disagreements:
                print(f"{split} {view:6} {row_id} {instruction_id}: authors {label}, olmorl {passed}")


if __name__ == "__main__":
    main()
