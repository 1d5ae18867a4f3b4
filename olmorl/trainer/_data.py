"""RLVR prompts in open-instruct's row format, mixed from several files by weight.

A row holds `messages` (chat turns; a trailing assistant turn is dropped), `ground_truth` and `dataset`
(the verifier name). Newer Ai2 releases wrap both in one-element lists; those are unwrapped. Multi-verifier
rows carry equal-length lists: each (verifier, ground truth) pair is scored and the rewards are summed.
A multi-turn row names an environment instead: `env`, `task` (and optional `env_options`); its rollouts run
as sessions on the reward server (`olmorl.trainer._multiturn`). Both kinds mix in one file or run.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Sequence

log = logging.getLogger("olmorl.trainer")


class Check(NamedTuple):
    """One verifier call of a prompt's completions."""

    verifier: str
    ground_truth: Any
    options: dict | None = None  # the row's `options` (a single-verifier row), e.g. a composite's aggregate


@dataclass(frozen=True)
class Prompt:
    prompt_ids: tuple[int, ...]  # chat template applied with the generation prompt, tokenized
    messages: tuple[dict, ...]  # the conversation sent to the verifier as `prompt`
    checks: tuple[Check, ...]  # one per verifier of the row; a completion's reward is the sum over them
    source: str  # file it came from (per-source metrics)
    index: int  # row index in that file
    env: str | None = None  # multi-turn: the reward server environment its sessions run in
    task: Any = None  # multi-turn: the session's task (e.g. {"verifier": "math", "ground_truth": "42"})
    env_options: dict | None = None  # multi-turn: the session's options

    @property
    def verifier_label(self) -> str:
        """The name its rewards are reported under: the verifier, several joined by "+" ("math+ifeval"), or the env."""
        return self.env or "+".join(c.verifier for c in self.checks)


def read_rows(path: str | Path) -> list[dict]:
    """Rows of a .jsonl/.json/.parquet file through `datasets` (no caching into the user's HF cache)."""
    import datasets

    path = str(path)
    kind = "parquet" if path.endswith(".parquet") else "json"
    ds = datasets.load_dataset(kind, data_files=path, split="train", keep_in_memory=True)
    return list(ds)


def _unwrap(value: Any) -> Any:
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def _checks(row: dict, verifier_override: str | None) -> tuple[Check, ...] | None:
    """The row's (verifier, ground truth) pairs, or None when the row is malformed."""
    names, truth = _unwrap(row.get("dataset")), _unwrap(row.get("ground_truth"))
    if isinstance(names, list):  # multi-verifier row: one ground truth per verifier
        if not names or not isinstance(truth, list) or len(truth) != len(names):
            return None
        pairs = list(zip(names, truth))
    else:
        pairs = [(names, truth)]
    if verifier_override:
        pairs = [(verifier_override, t) for _, t in pairs]
    if not all(isinstance(v, str) and v for v, _ in pairs):
        return None
    options = row.get("options") if len(pairs) == 1 and isinstance(row.get("options"), dict) else None
    return tuple(Check(v, t, options) for v, t in pairs)


def build_prompts(rows: list[dict], tokenizer, *, source: str, max_prompt_tokens: int,
                  verifier_override: str | None = None) -> list[Prompt]:
    prompts, dropped = [], {"too_long": 0, "malformed": 0}
    for i, row in enumerate(rows):
        messages = row.get("messages")
        env = row.get("env") or None  # a mixed file's single-turn rows read as env=None
        checks = () if env else _checks(row, verifier_override)
        if not messages or checks is None or (env and not isinstance(env, str)):
            dropped["malformed"] += 1
            continue
        turns = [dict(m) for m in messages]
        if len(turns) > 1 and turns[-1].get("role") == "assistant":
            turns = turns[:-1]
        text = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
        ids = tokenizer(text, add_special_tokens=False).input_ids
        if len(ids) > max_prompt_tokens:
            dropped["too_long"] += 1
            continue
        prompts.append(Prompt(tuple(ids), tuple(turns), checks, source, i, env, row.get("task") if env else None,
                              row.get("env_options") if env else None))
    if any(dropped.values()):
        log.warning("%s: dropped rows %s", source, dropped)
    if not prompts:
        raise ValueError(f"{source}: no usable rows (need messages and ground_truth + dataset, or env + task); "
                         f"dropped {dropped}")
    return prompts


class PromptMixer:
    """Draws prompts from several sources by weight; each source is shuffled per epoch. Checkpointable."""

    def __init__(self, sources: dict[str, list[Prompt]], weights: Sequence[float] | None = None, seed: int = 0):
        self.names = list(sources)
        self.sources = [sources[n] for n in self.names]
        self.weights = list(weights) if weights else [1.0] * len(self.sources)
        if len(self.weights) != len(self.sources) or any(w < 0 for w in self.weights) or sum(self.weights) <= 0:
            raise ValueError("need one non-negative weight per source, not all zero")
        self.rng = random.Random(seed)
        self.orders = [self._shuffled(len(s)) for s in self.sources]
        self.positions = [0] * len(self.sources)
        self.epochs = [0] * len(self.sources)
        self.drawn = 0

    def _shuffled(self, n: int) -> list[int]:
        order = list(range(n))
        self.rng.shuffle(order)
        return order

    def next(self) -> Prompt:
        k = self.rng.choices(range(len(self.sources)), weights=self.weights)[0]
        if self.positions[k] >= len(self.orders[k]):
            self.orders[k] = self._shuffled(len(self.sources[k]))
            self.positions[k] = 0
            self.epochs[k] += 1
        prompt = self.sources[k][self.orders[k][self.positions[k]]]
        self.positions[k] += 1
        self.drawn += 1
        return prompt

    def state_dict(self) -> dict:
        return {"rng": self.rng.getstate(), "orders": [list(o) for o in self.orders],
                "positions": list(self.positions), "epochs": list(self.epochs), "drawn": self.drawn,
                "names": list(self.names)}

    def load_state_dict(self, state: dict) -> None:
        if state["names"] != self.names:
            raise ValueError(f"checkpoint data sources {state['names']} differ from the config's {self.names}")
        self.rng.setstate(state["rng"])
        self.orders = [list(o) for o in state["orders"]]
        self.positions, self.epochs, self.drawn = list(state["positions"]), list(state["epochs"]), state["drawn"]


def load_sources(files: tuple[str, ...], tokenizer, *, max_prompt_tokens: int,
                 verifier_override: str | None = None) -> dict[str, list[Prompt]]:
    out = {}
    for f in files:
        out[f] = build_prompts(read_rows(f), tokenizer, source=f, max_prompt_tokens=max_prompt_tokens,
                               verifier_override=verifier_override)
    return out
