"""The constraint table: instruction id -> typed kwargs model + checker.

A checker is `check(text, kwargs, fixed) -> bool`: `text` is the answer to check, `kwargs` the
validated kwargs model, `fixed` whether `options.semantics == "fixed"`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

Relation = Literal["less than", "at least"]
Count = Annotated[int, Field(ge=0)]  # floats with no fraction (5.0) are accepted, as the data holds them
# A word that IFEvalG also takes as a list, using its first item (`keyword[0]` when not a str).
WordOrList = Annotated[str, BeforeValidator(lambda v: v[0] if isinstance(v, list) and v else v), Field(min_length=1)]
Source = Literal["ifeval", "ifbench", "ifbench_train"]


class Kwargs(BaseModel):
    """Base of every kwargs model: unknown keys are an error (the references raise TypeError)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoKwargs(Kwargs):
    pass


class ConstraintError(ValueError):
    """A constraint's id or kwargs are unusable; the item becomes `invalid`, naming the id."""


@dataclass(frozen=True)
class Constraint:
    instruction_id: str
    source: Source
    kwargs_model: type[Kwargs]
    check: Callable[[str, Any, bool], bool]
    accepts_any_kwargs: bool = False  # `custom:*` ids take `**kwargs` and ignore them

    def parse_kwargs(self, raw: dict[str, Any] | None) -> Kwargs:
        # open-instruct drops None-valued keys before building the instruction.
        values = {k: v for k, v in (raw or {}).items() if v is not None}
        if self.accepts_any_kwargs:
            values = {}
        try:
            return self.kwargs_model.model_validate(values)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise ConstraintError(f"{self.instruction_id}: kwargs {loc + ': ' if loc else ''}{first['msg']}") from None


CONSTRAINTS: dict[str, Constraint] = {}


def constraint(instruction_id: str, source: Source, kwargs_model: type[Kwargs] = NoKwargs, *,
               accepts_any_kwargs: bool = False) -> Callable[[Callable[[str, Any, bool], bool]], Callable[[str, Any, bool], bool]]:
    def decorate(fn: Callable[[str, Any, bool], bool]) -> Callable[[str, Any, bool], bool]:
        if instruction_id in CONSTRAINTS:
            raise ValueError(f"duplicate instruction id {instruction_id!r}")
        CONSTRAINTS[instruction_id] = Constraint(instruction_id, source, kwargs_model, fn, accepts_any_kwargs)
        return fn

    return decorate


def compare(actual: int, relation: str, threshold: float) -> bool:
    return actual < threshold if relation == "less than" else actual >= threshold


def keyword_pattern(keyword: str, fixed: bool, plural: bool = False) -> re.Pattern[str]:
    """How the references look a keyword up: as a regular expression, substring, case-insensitive.
    `fixed`: the keyword is literal text with word boundaries; `plural`: its plural in -s counts too ("sneakers"
    is the word sneaker, as the references' substring match also says; "category" is not "cat")."""
    if fixed:
        return re.compile(r"(?<!\w)" + re.escape(keyword) + ("s?" if plural else "") + r"(?!\w)", re.IGNORECASE)
    return _compiled(keyword)


_REGEX_CACHE: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    rx = _REGEX_CACHE.get(pattern)
    if rx is None:
        rx = re.compile(pattern, re.IGNORECASE)
        if len(_REGEX_CACHE) < 10_000:
            _REGEX_CACHE[pattern] = rx
    return rx

