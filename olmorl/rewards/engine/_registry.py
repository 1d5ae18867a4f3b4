"""The one registry of verifiers, and the base class every verifier derives from.

A verifier is a small class: a name, a typed ground truth, a typed options model and a `score`
method. Registering it is all it takes to serve it; the server never names a verifier.

Two execution kinds:
- `runs_in = "pool"`: CPU-bound, pure `score(task)`; runs in a killable worker process with a hard
  wall-clock limit (math, IF, ...). Instances are built and warmed up once, in the server, and
  inherited by every worker it forks.
  A pool verifier may finish an item on the event loop (`needs_follow_up` / `follow_up`: the math
  verifiers' LM-judge fallback), after its worker scored it.
- `runs_in = "loop"`: I/O-bound `score_async(task)`; runs on the server's event loop and owns its
  own resources and deadlines (LM judge, sandboxed code), started and stopped with the server.
"""

from __future__ import annotations

import importlib
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from olmorl.rewards._models import ChatMessage, Status, VerifierInfo, VerifyResult

if TYPE_CHECKING:
    from olmorl.rewards.engine._engine import RewardEngine
    from olmorl.rewards._settings import Settings

# Modules whose import registers the built-in verifiers. Third-party verifiers register through the
# `plugins` setting (OLMORL_PLUGINS) instead, so adding one never touches this package.
BUILTIN_MODULES = (
    "olmorl.rewards.text",
    "olmorl.rewards.math",
    "olmorl.rewards.instructions._verifier",
    "olmorl.rewards.judge",
    "olmorl.rewards.code",
    "olmorl.rewards.function_call",
    "olmorl.rewards.sql",
    "olmorl.rewards.environments",
    "olmorl.rewards.shaping",
    "olmorl.rewards.engine._composite",
)


class ItemError(Exception):
    """The one way a verifier or environment says an item has no reward: raise it, and the item gets `status`
    (`invalid`: the item itself is malformed; `error`: something outside the item failed, e.g. the sandbox or
    the judge; `timeout`), `message` as its error and `details` as its details, never a reward.
    `elapsed_s`: seconds the item itself ran, as `Score.elapsed_s`."""

    def __init__(self, status: Status, message: str, details: dict[str, Any] | None = None,
                 elapsed_s: float | None = None) -> None:
        if status not in ("invalid", "error", "timeout"):
            raise ValueError(f"ItemError status must be invalid, error or timeout, not {status!r}")
        super().__init__(message)
        self.status: Status = status
        self.message = message
        self.details: dict[str, Any] = details or {}
        self.elapsed_s = elapsed_s

    def __reduce__(self) -> tuple[Any, ...]:  # crosses from a pool worker to the server by pickle
        return ItemError, (self.status, self.message, self.details, self.elapsed_s)


class InvalidInput(ItemError, ValueError):
    """`ItemError("invalid", message, details)`: the item itself is malformed (a bad ground truth, options or
    response), said the way validation code reads best."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__("invalid", message, details)

    def __reduce__(self) -> tuple[Any, ...]:
        return InvalidInput, (self.message, self.details)


def score_of(result: VerifyResult) -> Score:
    """A nested verification's result (an environment scoring its answer through `services.verify`, a composite's
    component) as the Score it stands for; raises its ItemError when it is not `ok`."""
    if result.status != "ok" or result.reward is None:
        raise ItemError(result.status if result.status != "ok" else "error",
                        result.error or f"{result.verifier} gave no reward", dict(result.details))
    return Score(result.reward, dict(result.details), result.elapsed_ms / 1000 if result.elapsed_ms else None)


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# The batch (request) an item belongs to, for verifiers that share scarce resources fairly across
# requests (the code sandbox's slots); set by the engine for every batch.
current_request: ContextVar[object] = ContextVar("current_request", default=None)


@dataclass(frozen=True)
class Task:
    """A validated item, as a verifier sees it."""

    response: str
    ground_truth: Any
    options: Any
    prompt: str | list[ChatMessage] | None = None
    completion_tokens: int | None = None  # the completion's token count, when the item gives it


@dataclass
class Score:
    """What `score` returns: a reward (the item is `ok`). An item without a reward raises `ItemError`."""

    reward: float
    details: dict[str, Any] = field(default_factory=dict)
    # Seconds the item itself ran, for a verifier that first waits on a shared resource (the code verifier's
    # sandbox slots, the judge's call slots): the result's elapsed_ms. None: the engine's clock around score()/score_async().
    elapsed_s: float | None = None


class Verifier:
    kind: ClassVar[str] = "verifier"  # what `register` files it under; environments say "environment"
    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    ground_truth_type: ClassVar[Any] = Any  # any type pydantic can validate (model, list[...], str | float, ...)
    options_model: ClassVar[type[BaseModel]] = NoOptions
    runs_in: ClassVar[Literal["pool", "loop"]] = "pool"
    reads_completion_tokens: ClassVar[bool] = False  # routes that must count tokens themselves count only for these

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    # -- scoring -------------------------------------------------------------------------------------
    def score(self, task: Task) -> Score:
        raise NotImplementedError(f"{type(self).__name__} runs in the pool but defines no score()")

    async def score_async(self, task: Task) -> Score:
        raise NotImplementedError(f"{type(self).__name__} runs on the loop but defines no score_async()")

    def warm_up(self) -> None:
        """Pay one-time costs (parser tables, language profiles) before the first item, not on it. Runs once,
        in the server process before it forks its workers: every worker, a replacement too, inherits what it
        loaded. So it must not start threads or open per-process resources (sockets, CUDA); do those lazily in
        `score`."""
        return None

    def deadline_s(self, task: Task) -> float | None:
        """Hard wall-clock limit for one item; past it the item is `timeout` (pool workers are killed).

        A loop verifier that queues for resources of its own (sandbox slots) returns None and bounds
        the work itself once the resource is held, so time spent queueing never reads as a timeout."""
        return self.settings.item_timeout_s

    def needs_follow_up(self, task: Task, score: Score) -> bool:
        """Whether a pool verifier's score needs a step on the event loop (an I/O call a worker cannot make, such
        as the math verifiers' LM-judge fallback); the engine then awaits `follow_up`."""
        return False

    async def follow_up(self, task: Task, score: Score) -> Score:
        """The item's final score from the pool's `score` (called only where `needs_follow_up` said so). It bounds
        its own time: the pool's deadline has passed by then."""
        return score

    # -- lifecycle (loop verifiers, and pool verifiers that follow up, own resources: HTTP clients, sandboxes) --
    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def readiness(self) -> dict[str, Any] | None:
        """Extra state for /readyz (e.g. whether a judge endpoint answers); None when nothing to say."""
        return None

    def notes(self) -> list[str]:
        return []

    # -- validation ----------------------------------------------------------------------------------
    @classmethod
    def _ground_truth_adapter(cls) -> TypeAdapter[Any]:
        adapter = cls.__dict__.get("_gt_adapter")
        if adapter is None:
            adapter = TypeAdapter(cls.ground_truth_type)
            cls._gt_adapter = adapter  # type: ignore[attr-defined]
        return adapter

    def make_task(self, response: str, ground_truth: Any, options: dict[str, Any], prompt: Any) -> Task:
        """Validate one item's ground truth and options; raises InvalidInput naming the problem."""
        try:
            gt = self._ground_truth_adapter().validate_python(ground_truth)
        except ValidationError as exc:
            if ground_truth is None:
                raise InvalidInput(f"ground_truth: missing; the {self.name} verifier needs one "
                                   "(GET /v1/verifiers shows its shape)") from None
            raise InvalidInput(f"ground_truth: {_first_error(exc)}") from None
        try:
            opts = self.options_model.model_validate(options or {})
        except ValidationError as exc:
            raise InvalidInput(f"options: {_first_error(exc)}") from None
        return Task(response=response, ground_truth=gt, options=opts, prompt=prompt)

    def info(self) -> VerifierInfo:
        return VerifierInfo(
            name=self.name,
            aliases=list(self.aliases),
            description=self.description,
            ground_truth=self._ground_truth_adapter().json_schema(),
            options=self.options_model.model_json_schema(),
            notes=self.notes(),
        )


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    parts = []
    for err in errors[:3]:
        loc = ".".join(str(p) for p in err["loc"])
        parts.append(f"{loc + ': ' if loc else ''}{err['msg']}")
    more = f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""
    return "; ".join(parts) + more


_VERIFIERS: dict[str, type[Verifier]] = {}
_ALIASES: dict[str, str] = {}
_ENVIRONMENTS: dict[str, type[Any]] = {}  # olmorl.rewards.Environment subclasses, by name
_loaded: set[str] = set()


def register(cls: Any) -> Any:
    """Class decorator: add a verifier (or a session environment, `kind = "environment"`) to the
    registry under its name and aliases (case-insensitive)."""
    if getattr(cls, "kind", "verifier") == "environment":
        key = cls.name.lower()
        taken = _ENVIRONMENTS.get(key)
        if taken is not None and taken is not cls and taken.__qualname__ != cls.__qualname__:
            raise ValueError(f"environment name {key!r} is taken by {taken.__module__}.{taken.__qualname__}")
        _ENVIRONMENTS[key] = cls
        return cls
    name = cls.name.lower()
    existing = _VERIFIERS.get(name)
    if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
        raise ValueError(f"verifier name {name!r} is taken by {existing.__module__}.{existing.__qualname__}")
    _VERIFIERS[name] = cls
    for alias in cls.aliases:
        owner = _ALIASES.get(alias.lower())
        if owner is not None and owner != name:
            raise ValueError(f"alias {alias!r} of {name!r} is already an alias of {owner!r}")
        _ALIASES[alias.lower()] = name
    return cls


def load_verifiers(plugins: tuple[str, ...] | list[str] = ()) -> dict[str, type[Verifier]]:
    """Import the built-in verifier modules and any plugin modules; return name -> class."""
    for module in (*BUILTIN_MODULES, *plugins):
        if module not in _loaded:
            importlib.import_module(module)
            _loaded.add(module)
    return dict(_VERIFIERS)


def load_environments(plugins: tuple[str, ...] | list[str] = ()) -> dict[str, type[Any]]:
    """Import the same modules as `load_verifiers` (plugins register both kinds); return name -> class."""
    load_verifiers(plugins)
    return dict(_ENVIRONMENTS)


def canonical_name(name: str) -> str | None:
    """The registered name for a name or alias (case-insensitive), or None if unknown."""
    key = name.strip().lower()
    if key in _VERIFIERS:
        return key
    return _ALIASES.get(key)


# Extra HTTP routes (compatibility APIs such as SandboxFusion's /run_code) are contributed the same
# way verifiers are: a module registers a builder, and the server mounts what it returns.
RouteBuilder = Callable[["RewardEngine"], Any]  # returns a fastapi.APIRouter
_ROUTE_BUILDERS: list[RouteBuilder] = []


def register_routes(builder: RouteBuilder) -> RouteBuilder:
    """Decorator: `builder(engine)` returns an APIRouter that the server includes at start-up."""
    if builder not in _ROUTE_BUILDERS:
        _ROUTE_BUILDERS.append(builder)
    return builder


def route_builders() -> list[RouteBuilder]:
    return list(_ROUTE_BUILDERS)
