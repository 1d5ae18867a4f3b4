"""Composite rewards: one item scored by several components (verifier, ground truth, options, weight), and one
aggregate reward.

    {"verifier": "composite", "response": "...", "completion_tokens": 812,  # ground truth: the list, or its JSON text
     "ground_truth": [{"verifier": "math", "ground_truth": "42", "gate": true},
                      {"verifier": "format", "options": {"layout": "think_answer"}, "weight": 0.2},
                      {"verifier": "overlong", "options": {"max_tokens": 1024, "buffer_tokens": 256}}],
     "options": {"aggregate": "gate"}}

Every component scores the item's response (and prompt and completion_tokens) where its verifier runs: pool
components in the worker pool, sandbox and judge components on the event loop, all at once. A component with
`correct_from` runs after the one it names, with ground truth `{"correct": <that one passed>}` (the cosine
`length` reward needs it).

Aggregates (`options.aggregate`):
- `weighted_sum` (default): sum of weight * reward.
- `min`: the lowest reward. `all_pass`: 1.0 when every reward is >= `pass_threshold`, else 0.0. Neither takes
  weights: a weight other than 1 is `invalid`.
- `gate`: the components marked `gate: true` must each reach `pass_threshold`; then the weighted sum of every
  component, else the weighted sum of the gate components alone (the rest do not count).

Status rule. The result's `details.components` lists each component's name, verifier, weight, reward, status,
error and details. When every component is `ok`, the item is `ok` with the aggregate. Otherwise, with
`on_component_error: "fail"` (the default), the item takes the status of the first component that is not `ok`,
its error names that component, and its reward is null: never a 0 standing for a check that did not run. With
`"skip"`, failed components are left out of the aggregate and named in `details.skipped`; the item still fails
when a gate component failed or no component is left.
"""

from __future__ import annotations

import math
import json
from typing import Annotated, Any, Callable, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, JsonValue, field_validator

from olmorl.rewards._models import Status, VerifyResult
from olmorl.rewards.engine._registry import InvalidInput, Task, Verifier, register

COMPOSITE = "composite"
MAX_COMPONENTS = 16


class Component(BaseModel):
    """One check of a composite item."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(default=None, min_length=1, max_length=64,
                             description="Unique within the item; defaults to the verifier name.")
    verifier: str = Field(description="Any registered verifier but `composite`.")
    ground_truth: JsonValue = None
    options: dict[str, JsonValue] = Field(default_factory=dict)
    weight: float = 1.0
    gate: bool = Field(default=False, description="aggregate gate: this component must pass for the rest to count.")
    correct_from: str | None = Field(
        default=None, description="Name of another component: this one runs after it, with ground truth "
        '{"correct": <its reward >= pass_threshold>} (for the cosine `length` reward).')

    @field_validator("weight")
    @classmethod
    def _finite(cls, weight: float) -> float:
        if not math.isfinite(weight):
            raise ValueError("weight must be finite")
        return weight

    @property
    def label(self) -> str:
        return self.name or self.verifier


class CompositeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    aggregate: Literal["weighted_sum", "min", "all_pass", "gate"] = "weighted_sum"
    pass_threshold: float = Field(default=1.0, description="The reward at which a component passes (all_pass, gate, "
                                                            "correct_from).")
    on_component_error: Literal["fail", "skip"] = Field(
        default="fail", description="fail: a component that is not ok makes the item not ok; skip: it is left out.")


def _from_json_text(value: Any) -> Any:
    """Datasets (parquet, HF) hold a list of differently shaped objects best as JSON text: read it."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise ValueError("a JSON string must hold the list of components") from None
    return value


@register
class CompositeVerifier(Verifier):
    """Validates a composite item; the engine scores its components (a composite has no score of its own)."""

    name = COMPOSITE
    reads_completion_tokens = True  # one of its components may (overlong, length)
    description = ("Several components (verifier, ground_truth, options, weight) on one response, aggregated by "
                   "weighted_sum, min, all_pass or gate; details.components has each one's result.")
    ground_truth_type = Annotated[list[Component], BeforeValidator(_from_json_text)]
    options_model = CompositeOptions
    runs_in = "loop"

    def make_task(self, response: str, ground_truth: Any, options: dict[str, Any], prompt: Any) -> Task:
        task = super().make_task(response, ground_truth, options, prompt)
        check_components(task.ground_truth, task.options)
        return task


def check_components(components: list[Component], opts: CompositeOptions) -> None:
    """The rules no single field states; raises InvalidInput naming the component."""
    if not components:
        raise InvalidInput("ground_truth: a composite needs at least one component")
    if len(components) > MAX_COMPONENTS:
        raise InvalidInput(f"ground_truth: {len(components)} components; the limit is {MAX_COMPONENTS}")
    labels = [c.label for c in components]
    by_label = dict(zip(labels, components))
    for index, (label, component) in enumerate(zip(labels, components)):
        problem = _component_problem(component, by_label, opts)
        if by_label[label] is not component or labels.index(label) != index:
            problem = f"component name {label!r} is not unique; give each a `name`"
        if problem:
            raise InvalidInput(f"ground_truth.{index} ({label}): {problem}")
    if opts.aggregate == "gate" and not any(c.gate for c in components):
        raise InvalidInput("ground_truth: aggregate 'gate' needs a component with gate: true")


def _component_problem(component: Component, by_label: dict[str, Component], opts: CompositeOptions) -> str | None:
    if component.verifier.strip().lower() == COMPOSITE:
        return "composites do not nest"
    if component.gate and opts.aggregate != "gate":
        return f"gate is set but the aggregate is {opts.aggregate!r}, not 'gate'"
    if component.weight != 1.0 and opts.aggregate in ("min", "all_pass"):
        return f"aggregate {opts.aggregate!r} takes no weights (weight {component.weight:g})"
    if component.correct_from is not None:
        source = by_label.get(component.correct_from)
        if source is None or source is component:
            return f"correct_from {component.correct_from!r} names no other component"
        if source.correct_from is not None:
            return f"correct_from {source.label!r}, which itself has a correct_from"
        if component.ground_truth is not None:
            return "correct_from sets the ground truth; give none"
    return None


# The engine's item check, on validated fields (id, verifier, response, ground truth, options, prompt, completion
# tokens): a refused VerifyResult, or a prepared item.
Prepare = Callable[..., Any]


class CompositePlan:
    """One composite item while its components are scored: `pending` gives the components ready to run (those
    with a `correct_from` once their source has a result), `take` records their results, `result` aggregates."""

    def __init__(self, item_id: str | None, task: Task) -> None:
        self.item_id, self.task = item_id, task
        self.components: list[Component] = task.ground_truth
        self.opts: CompositeOptions = task.options
        self.results: list[VerifyResult | None] = [None] * len(self.components)
        self._running: list[int] = []

    def pending(self, prepare: Prepare) -> list[Any]:
        """The prepared items of the components that can run now; refused ones get their result at once."""
        ready, self._running = [], []
        task = self.task
        for index, component in enumerate(self.components):
            if self.results[index] is not None:
                continue
            truth = component.ground_truth
            if component.correct_from is not None:
                source = next(r for c, r in zip(self.components, self.results) if c.label == component.correct_from)
                if source is None:
                    continue  # its source runs in this wave
                if source.status != "ok" or source.reward is None:
                    self.results[index] = VerifyResult(
                        verifier=component.verifier, reward=None, status=source.status,
                        error=f"not scored: its correct_from component {component.correct_from!r} is {source.status}")
                    continue
                truth = {"correct": source.reward >= self.opts.pass_threshold}
            # every field was validated with the composite: checked as fields, not validated again as an item
            prepared = prepare(None, component.verifier, task.response, truth, component.options, task.prompt,
                               task.completion_tokens)
            if isinstance(prepared, VerifyResult):
                self.results[index] = prepared
            else:
                ready.append(prepared)
                self._running.append(index)
        return ready

    def take(self, results: list[VerifyResult]) -> None:
        assert len(results) == len(self._running)
        for index, result in zip(self._running, results):
            self.results[index] = result
        self._running = []

    @property
    def done(self) -> bool:
        return all(result is not None for result in self.results)

    def result(self) -> VerifyResult:
        results: list[VerifyResult] = [r for r in self.results if r is not None]
        assert len(results) == len(self.components)
        listed = [{"name": c.label, "verifier": r.verifier, "weight": c.weight, "reward": r.reward,
                   "status": r.status, "error": r.error, "details": r.details, "elapsed_ms": r.elapsed_ms}
                  for c, r in zip(self.components, results)]
        details: dict[str, Any] = {"aggregate": self.opts.aggregate, "components": listed}
        elapsed = max(r.elapsed_ms for r in results)  # components run concurrently
        failed = [i for i, r in enumerate(results) if r.status != "ok" or r.reward is None]
        counted = [i for i in range(len(results)) if i not in failed]
        if failed:
            first = failed[0]
            gate_failed = any(self.components[i].gate for i in failed)
            if self.opts.on_component_error == "fail" or gate_failed or not counted:
                why = ("it is a gate" if gate_failed and self.opts.on_component_error == "skip"
                       else "no component is left" if not counted and self.opts.on_component_error == "skip"
                       else "on_component_error is 'fail'")
                culprit = next((i for i in failed if self.components[i].gate), first) if gate_failed else first
                bad = results[culprit]
                label = self.components[culprit].label
                named = f"{label!r}" if label == bad.verifier else f"{label!r} ({bad.verifier})"
                error = f"component {named} is {bad.status}: {bad.error} ({why})"
                return VerifyResult(id=self.item_id, verifier=COMPOSITE, reward=None, status=bad.status, error=error,
                                    details=details, elapsed_ms=elapsed)
            details["skipped"] = [self.components[i].label for i in failed]
        reward = self._aggregate(counted, [r.reward or 0.0 for r in results], details)
        status: Status = "ok"
        return VerifyResult(id=self.item_id, verifier=COMPOSITE, reward=reward, status=status, details=details,
                            elapsed_ms=elapsed)

    def _aggregate(self, counted: list[int], rewards: list[float], details: dict[str, Any]) -> float:
        opts, components = self.opts, self.components
        if opts.aggregate == "min":
            return min(rewards[i] for i in counted)
        if opts.aggregate == "all_pass":
            return float(all(rewards[i] >= opts.pass_threshold for i in counted))
        if opts.aggregate == "gate":
            passed = all(rewards[i] >= opts.pass_threshold for i in counted if components[i].gate)
            details["gate_passed"] = passed
            if not passed:
                counted = [i for i in counted if components[i].gate]
        return sum(components[i].weight * rewards[i] for i in counted)


def component_rewards(result: VerifyResult) -> dict[str, float]:
    """A composite result's rewards by component name, NaN for a component that was not scored (for adapters whose
    trainers take only numbers: verl's extra info, OpenRLHF's extra_logs); {} for any other result."""
    if result.verifier != COMPOSITE:
        return {}
    return {str(part.get("name")): math.nan if part.get("reward") is None else float(part["reward"])
            for part in result.details.get("components", []) if isinstance(part, dict)}
