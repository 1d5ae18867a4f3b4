# A session environment in a few lines: load it with OLMORL_PLUGINS='["counter_env"]'.
from pydantic import BaseModel, Field

from olmorl.rewards import Environment, InvalidInput, Score, Step, Tool, register


class Start(BaseModel):
    start: int = 0
    target: int


class Add(BaseModel):
    amount: int = Field(description="How much to add to the counter.")


@register
class CounterEnvironment(Environment):
    name = "counter"
    description = "Reach the target by adding to a counter; the answer is the final value."
    task_type = Start
    tools = (Tool("add", "Add to the counter and see its new value.", Add),)

    async def setup(self) -> str:
        self.value = self.task.start
        return f"The counter is at {self.value}. Reach {self.task.target}."

    async def step(self, tool: str, arguments: Add) -> Step:
        if abs(arguments.amount) > 10:
            raise InvalidInput("add at most 10 at a time")  # the call comes back `invalid`
        self.value += arguments.amount
        return Step(f"counter = {self.value}", done=self.value == self.task.target)

    async def verify(self, response: str, messages: list | None) -> Score:
        reached = float(self.value == self.task.target)
        said = float(response.strip() == str(self.value))
        return Score((reached + said) / 2, {"value": self.value, "reward_components": {"reached": reached,
                                                                                      "answered": said}})
