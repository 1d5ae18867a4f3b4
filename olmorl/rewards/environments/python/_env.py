"""`python`: one tool, `python(code)`, run in a persistent interpreter inside this session's own sandbox
(state survives between calls); the final answer is scored by the verifier the task names (default
`math`). The math-with-code-interpreter setting of ReTool and AReaL's tool-integrated reasoning."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from olmorl.rewards.sessions._environment import Environment, Step, Tool
from olmorl.rewards.engine._registry import ItemError, Score, register, score_of
from olmorl.rewards.sessions._sessions import truncate
from olmorl.sandbox._session import Interpreter, InterpreterFailed

RESTARTED = "[the interpreter was restarted; variables from earlier calls are gone]\n"


class PythonCode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="Python source to run. Variables, functions and imports persist across calls; "
                                  "the value of a final bare expression is printed.")


class AnswerCheck(BaseModel):
    """How the final answer is scored: any registered verifier with its ground truth and options."""

    model_config = ConfigDict(extra="forbid")

    verifier: str = Field(default="math", description="Verifier of the final answer (GET /v1/verifiers).")
    ground_truth: JsonValue = Field(description="That verifier's ground truth.")
    options: dict[str, JsonValue] = Field(default_factory=dict, description="That verifier's options.")


def as_prompt(messages: list[Any] | None) -> list[dict[str, Any]] | None:
    return [m.model_dump() if hasattr(m, "model_dump") else m for m in messages] if messages else None


async def verify_answer(env: Environment, check: AnswerCheck, response: str, messages: list[Any] | None) -> Score:
    """Score `response` with the task's verifier, as /v1/verify would; the reward's one component is the answer."""
    result = await env.services.verify({"verifier": check.verifier, "response": response,
                                        "ground_truth": check.ground_truth, "options": check.options,
                                        "prompt": as_prompt(messages)})
    score = score_of(result)
    return Score(score.reward, dict(score.details, verifier=result.verifier, reward_components={"answer": score.reward}))


def compose(stdout: str, stderr: str, error: str | None, limit: int) -> str:
    """stdout, then stderr and the exception, within `limit` characters: the head of stdout and the tail
    of the rest (where a traceback's last line is) each keep at least half when both are long."""
    rest = "".join(p if p.endswith("\n") else p + "\n" for p in (stderr, error or "") if p)
    budget = max(limit - 100, 0)  # room for the truncation markers
    rest = truncate(rest, max(budget - min(len(stdout), budget // 2), budget // 2), keep="tail")
    head = truncate(stdout, max(budget - len(rest), 0), keep="head")
    return (head if not head or head.endswith("\n") else head + "\n") + rest


@register
class PythonEnvironment(Environment):
    name = "python"
    description = ("A persistent Python interpreter in a sandbox (no network, memory/CPU limits); the final "
                   "answer is scored by the task's verifier (default math).")
    task_type = AnswerCheck
    tools = (Tool("python", "Run Python code in a persistent interpreter and return its stdout, stderr and any "
                  "exception. State persists between calls.", PythonCode),)
    sandboxed = True

    interpreter: Interpreter | None = None

    async def setup(self) -> str | None:
        check: AnswerCheck = self.task
        self.services.check_item(check.verifier, check.ground_truth, check.options)
        self.interpreter = await self.services.open_interpreter()
        return None

    async def step(self, tool: str, arguments: Any) -> Step:
        prefix = ""
        if self.interpreter is None or not self.interpreter.alive:
            self.interpreter = await self.services.open_interpreter()
            prefix = RESTARTED
        limit = self.services.settings.sessions.max_output_chars
        try:
            cell = await self.interpreter.run(arguments.code, limit)
        except InterpreterFailed as exc:
            return Step(prefix, "error", f"{exc}; the next call starts a fresh interpreter")
        text = compose(cell.stdout, cell.stderr, cell.error, limit)
        if cell.dropped_bytes and "characters truncated]" not in text:  # else the cut is already marked
            text += f"[{cell.dropped_bytes} more bytes of output were dropped]\n"
        return Step(prefix + text)

    async def verify(self, response: str, messages: list[Any] | None) -> Score:
        return await verify_answer(self, self.task, response, messages)

    async def interrupt(self) -> None:
        await self.close()

    async def close(self) -> None:
        interpreter, self.interpreter = self.interpreter, None
        if interpreter is not None:
            await interpreter.close()
