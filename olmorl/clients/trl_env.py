"""olmorl sessions as TRL `GRPOTrainer` environments (`environment_factory`, TRL >= 1.x, transformers >= 5.2).

    from olmorl.clients.trl_env import session_environment, session_reward

    PythonEnv = session_environment("python", base_url="http://127.0.0.1:8000")
    trainer = GRPOTrainer(model, reward_funcs=[session_reward], environment_factory=PythonEnv,
                          train_dataset=rows, args=GRPOConfig(...))

TRL builds one instance per rollout, calls `reset(**row)` before generation and exposes the class's
public methods as tools (their signature and Google-style docstring become the tool schema). Here each
tool method is generated from the server's own schema (GET /v1/envs), `reset` opens a session with the
row's `task` (and `options`) and returns its observation, and `session_reward` scores each rollout's
final answer through the session's /verify (which ends it). A row's `task` column holds the task.
TRL's `get_reward()` takes no answer, so it is not used: the final answer matters to every verifier.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any, Sequence

from olmorl.clients._sessions import Session, SessionClient, SessionClientArgs
from olmorl.rewards._models import VerifyResult
from olmorl.rewards._not_ok import NotOkLog

__all__ = ["session_environment", "session_reward"]

_NOT_OK = NotOkLog(logging.getLogger(__name__), "olmorl.clients.trl_env.session_reward")
_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict, "array": list}


class _SessionEnvironment:
    """Base of the generated classes. Public methods are tools, so everything else is private."""

    _env: str = ""
    _client_args: SessionClientArgs = {}

    def __init__(self) -> None:
        self._client = SessionClient(**self._client_args)
        self._session: Session | None = None
        self._last: str | None = None

    def reset(self, task: Any = None, options: dict[str, Any] | None = None, **row: Any) -> str | None:
        """Start a new episode: close the previous session, open one for this row's task."""
        self._close()
        self._session = self._client.open(self._env, task, options)
        return self._session.observation

    def _call(self, tool: str, arguments: dict[str, Any]) -> str:
        if self._session is None:
            return "error: no session (reset was not called)"
        result = self._session.call(tool, arguments)
        return result.output if result.status == "ok" else "\n".join(filter(None, [result.output, result.error]))

    def _verify(self, response: str) -> VerifyResult | None:
        """Score the final answer and end the session; None when there is no session to score."""
        session, self._session = self._session, None
        if session is None:
            return None
        return session.verify(response)

    def _close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.close()


def _tool_method(name: str, schema: dict[str, Any]) -> Any:
    """A method whose signature, annotations and docstring describe the tool as transformers expects."""
    function = schema["function"]
    parameters = function.get("parameters") or {}
    properties: dict[str, Any] = parameters.get("properties", {})
    required = set(parameters.get("required", []))

    def tool(self: _SessionEnvironment, **arguments: Any) -> str:
        return self._call(name, arguments)

    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = [function.get("description") or name, "", "Args:"]
    for param, spec in properties.items():
        kind = _JSON_TYPES.get(spec.get("type"), str)
        default = inspect.Parameter.empty if param in required else spec.get("default")
        signature.append(inspect.Parameter(param, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                           annotation=kind))
        annotations[param] = kind
        lines.append(f"    {param}: {' '.join((spec.get('description') or param).split())}")
    lines += ["", "Returns:", "    What the tool printed or returned."]
    annotations["return"] = str
    tool.__name__ = tool.__qualname__ = name
    tool.__signature__ = inspect.Signature(signature, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = annotations
    tool.__doc__ = "\n".join(lines)
    return tool


def session_environment(env: str, base_url: str | Sequence[str] | None = None, *, api_key: str | None = None,
                        timeout: float = 120.0) -> type:
    """A class for `environment_factory`: one olmorl session of `env` per rollout, its tools as methods."""
    client_args: SessionClientArgs = {"base_url": base_url, "api_key": api_key, "timeout": timeout}
    with SessionClient(**client_args) as client:
        envs = {info.name: info for info in client.envs()}
    if env not in envs:
        raise ValueError(f"the olmorl server has no environment {env!r}; it has {sorted(envs)}")
    methods: dict[str, Any] = {"_env": env, "_client_args": client_args}
    for schema in envs[env].tools:
        name = schema["function"]["name"]
        if name.startswith("_") or name in ("reset", "get_reward"):
            raise ValueError(f"tool name {name!r} of {env!r} cannot be a TRL environment method")
        methods[name] = _tool_method(name, schema)
    return type(f"{env.title().replace('_', '')}Session", (_SessionEnvironment,), methods)


def _final_text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    for message in reversed(completion or []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            content = message.get("content")
            return content if isinstance(content, str) else "".join(
                p.get("text", "") for p in content or [] if isinstance(p, dict))
    return ""


def session_reward(completions: list[Any], environments: list[Any] | None = None, **kwargs: Any) -> list[float | None]:
    """Reward function for GRPOTrainer: verify each rollout's final answer in its own session."""
    if environments is None:
        raise ValueError("session_reward needs GRPOTrainer(environment_factory=session_environment(...))")
    results = [env._verify(_final_text(completion)) if isinstance(env, _SessionEnvironment) else None
               for completion, env in zip(completions, environments, strict=True)]
    _NOT_OK.record([r for r in results if r is not None], becomes="None")
    # Not scored (invalid, timeout, error) is None, which TRL leaves out of the group: never a silent 0.
    return [r.reward if r is not None and r.status == "ok" else None for r in results]
