"""`ifeval_multiturn`: a conversation whose user turns add instructions (Multi-IF's setting). Each answer
must follow every instruction given so far; the reward is the mean over turns of the fraction followed.
Text only: no sandbox, no process. The model answers a turn with the `reply` tool, which returns the next
user turn; the final answer goes to /verify."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from olmorl.rewards.sessions._environment import Environment, Step, Tool
from olmorl.rewards.engine._registry import InvalidInput, ItemError, Score, register, score_of
from olmorl.rewards.environments.python._env import as_prompt


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(description="The user's message for this turn.")
    instruction_id_list: list[str] = Field(description="IFEval/IFBench instruction ids this turn adds.")
    kwargs: list[dict[str, JsonValue] | None] = Field(description="One kwargs object per instruction id.")


class Conversation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turns: list[Turn] = Field(min_length=1, max_length=32)
    options: dict[str, JsonValue] = Field(default_factory=dict, description="Options of the `ifeval` verifier.")


class Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    response: str = Field(description="Your answer to the current user turn.")


@register
class IFEvalMultiTurnEnvironment(Environment):
    name = "ifeval_multiturn"
    description = ("Multi-turn instruction following: each user turn adds IFEval/IFBench instructions; every "
                   "answer must follow all instructions so far. Reward: mean over turns. No sandbox.")
    task_type = Conversation
    tools = (Tool("reply", "Answer the current user turn; returns the next user turn.", Reply),)

    async def setup(self) -> str | None:
        conversation: Conversation = self.task
        for turn in conversation.turns:
            if len(turn.kwargs) != len(turn.instruction_id_list):
                raise InvalidInput("task: each turn needs one kwargs entry per instruction id")
        for k in range(len(conversation.turns)):
            self.services.check_item("ifeval", self._ground_truth(k), conversation.options)
        self.current = 0
        self.scores: dict[int, float] = {}
        return conversation.turns[0].prompt

    def _ground_truth(self, turn: int) -> dict[str, Any]:
        """Every instruction given up to `turn` (inclusive): later turns keep the earlier ones."""
        turns = self.task.turns[: turn + 1]
        return {"instruction_id": [i for t in turns for i in t.instruction_id_list],
                "kwargs": [kw or {} for t in turns for kw in t.kwargs]}

    async def _score_turn(self, response: str, messages: list[Any] | None) -> Score:
        result = await self.services.verify({"verifier": "ifeval", "response": response,
                                             "ground_truth": self._ground_truth(self.current),
                                             "options": self.task.options, "prompt": as_prompt(messages)})
        return score_of(result)

    async def step(self, tool: str, arguments: Any) -> Step:
        turns = self.task.turns
        if self.current >= len(turns):
            raise InvalidInput("every turn is answered; call verify with the final answer")
        try:
            score = await self._score_turn(arguments.response, None)
        except ItemError as exc:
            return Step("", exc.status, exc.message)
        self.scores[self.current] = score.reward
        self.current += 1
        done = self.current >= len(turns)
        return Step("" if done else turns[self.current].prompt, reward=score.reward, done=done)

    async def verify(self, response: str, messages: list[Any] | None) -> Score:
        turns = self.task.turns
        self.current = min(self.current, len(turns) - 1)  # all answered: the final answer redoes the last
        final = await self._score_turn(response, messages)  # not ok: its ItemError is the session's outcome
        self.scores[self.current] = final.reward
        per_turn = [self.scores.get(k, 0.0) for k in range(len(turns))]
        reward = sum(per_turn) / len(per_turn)
        details = dict(final.details, turns_answered=len(self.scores),
                       reward_components={f"turn_{k + 1}": s for k, s in enumerate(per_turn)})
        return Score(reward, details)
