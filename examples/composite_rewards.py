# One completion, three components: a math gate, a format check and DAPO's overlong penalty (server URL from OLMORL_URL).
from olmorl.clients import RewardClient

response = "<think>6 times 7 is 42.</think>\n<answer>\\boxed{42}</answer>"
item = {
    "verifier": "composite", "response": response, "completion_tokens": 900,
    "ground_truth": [
        {"verifier": "math", "ground_truth": "42", "gate": True},
        {"verifier": "format", "options": {"layout": "think_answer"}, "weight": 0.2},
        {"verifier": "overlong", "options": {"max_tokens": 1024, "buffer_tokens": 256}, "weight": 0.5},
    ],
    "options": {"aggregate": "gate"},
}
wrong = {**item, "response": response.replace("{42}", "{41}")}  # the gate fails: only the gate counts
no_tokens = {key: value for key, value in item.items() if key != "completion_tokens"}  # overlong cannot score
with RewardClient() as client:
    for result in client.verify([item, wrong, no_tokens]):
        print(f"{result.status} reward={result.reward} {result.error or ''}".rstrip())
        for part in result.details["components"]:
            print(f"  {part['name']:8} weight={part['weight']:<3} {part['status']:7} reward={part['reward']}")
