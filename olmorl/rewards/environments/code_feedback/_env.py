"""`code_feedback`: the model submits a program with the `submit` tool and sees the results of the visible
tests only; it may resubmit up to `max_attempts` times. The final submission (the program in the final
answer's ```python block, else the last one submitted) is scored on the hidden tests: reward = their pass
rate, minus an optional penalty per extra attempt, never below 0. Tests run in the code sandbox pool."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from olmorl.rewards.sessions._environment import Environment, Step, Tool
from olmorl.rewards.engine._registry import InvalidInput, ItemError, Score, register, score_of
from olmorl.rewards.environments.python._env import as_prompt

_FENCED = re.compile(r"```[^\n`]*\n.*?```", re.DOTALL)
_SHOWN_FAILURES = 10


class CodeTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    visible_tests: JsonValue = Field(description="Tests whose results the model sees (any `code` ground truth).")
    hidden_tests: JsonValue = Field(description="Tests that score the final submission; never shown.")
    verifier: Literal["code", "code_stdio"] = Field(default="code", description="How the tests are run.")
    max_attempts: int = Field(default=3, ge=1, le=50, description="Submissions allowed through the tool.")
    attempt_penalty: float = Field(default=0.0, ge=0.0, le=1.0,
                                   description="Subtracted from the reward per submission after the first.")
    options: dict[str, JsonValue] = Field(default_factory=dict, description="Options of the code verifier.")


class Submission(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="The whole Python program (plain or in a ```python block).")


@register
class CodeFeedbackEnvironment(Environment):
    name = "code_feedback"
    description = ("Submit a program, see the visible tests' results, resubmit up to max_attempts times; reward: "
                   "hidden tests' pass rate of the final submission minus an optional per-attempt penalty.")
    task_type = CodeTask
    tools = (Tool("submit", "Run your program against the visible tests and see which pass.", Submission),)

    async def setup(self) -> str | None:
        task: CodeTask = self.task
        for tests in (task.visible_tests, task.hidden_tests):
            self.services.check_item(task.verifier, tests, task.options)
        self.attempts = 0
        self.last_program: str | None = None
        return None

    async def step(self, tool: str, arguments: Any) -> Step:
        task: CodeTask = self.task
        if self.attempts >= task.max_attempts:
            raise InvalidInput(f"all {task.max_attempts} attempts are used; call verify with the final program")
        self.attempts += 1
        self.last_program = arguments.code
        result = await self.services.verify({"verifier": task.verifier, "response": arguments.code,
                                             "ground_truth": task.visible_tests, "options": task.options})
        done = self.attempts >= task.max_attempts
        if result.status != "ok":
            return Step("", result.status, result.error, done=done)
        details = result.details
        lines = [f"Attempt {self.attempts}/{task.max_attempts}: {details['passed']}/{details['total']} visible "
                 "tests passed."]
        failing = [t for t in details.get("tests", []) if t.get("status") != "passed"]
        for record in failing[:_SHOWN_FAILURES]:
            why = record.get("message") or record.get("stderr") or ""
            lines.append(f"- {record['status']}: {record.get('test', '')}" + (f"\n  {why}" if why else ""))
        if len(failing) > _SHOWN_FAILURES:
            lines.append(f"- ... and {len(failing) - _SHOWN_FAILURES} more")
        return Step("\n".join(lines), reward=result.reward, done=done)

    async def verify(self, response: str, messages: list[Any] | None) -> Score:
        task: CodeTask = self.task
        program = response if _FENCED.search(response) or self.last_program is None else self.last_program
        result = await self.services.verify({"verifier": task.verifier, "response": program,
                                             "ground_truth": task.hidden_tests, "options": task.options,
                                             "prompt": as_prompt(messages)})
        score_of(result)  # not ok: its ItemError is the session's outcome
        penalty = task.attempt_penalty * max(self.attempts - 1, 0)
        hidden = result.reward or 0.0
        details = {"hidden": {k: result.details[k] for k in ("passed", "total", "pass_rate", "counts")
                              if k in result.details},
                   "attempts": self.attempts, "final_from": "response" if program is response else "last_submission",
                   "reward_components": {"hidden_tests": hidden, "attempt_penalty": -penalty}}
        return Score(max(hidden - penalty, 0.0), details)
