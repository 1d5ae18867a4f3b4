# Score three kinds of completion with the Python client (server URL from OLMORL_URL).
from olmorl.clients import RewardClient

items = [
    {"verifier": "math", "response": "Halving 1 gives $\\boxed{\\tfrac{1}{2}}$.", "ground_truth": "0.5"},
    {"verifier": "ifeval", "response": "the ocean is wide, and the ocean is deep.",
     "ground_truth": [{"instruction_id": ["keywords:frequency", "punctuation:no_comma"],
                       "kwargs": [{"keyword": "ocean", "frequency": 2, "relation": "at least"}, None]}]},
    {"verifier": "code", "response": "```python\ndef add(a, b):\n    return a - b\n```",
     "ground_truth": ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]},
]
with RewardClient() as client:
    for result in client.verify(items):
        print(f"{result.verifier:7} {result.status:6} reward={result.reward}")
