# Each shaping verifier on its own (server URL from OLMORL_URL); each is also usable as a composite component.
from olmorl.clients import RewardClient

items = [
    {"verifier": "format", "response": "<think>3 + 4</think>\n<answer>7</answer>", "options": {"layout": "think_answer"}},
    {"verifier": "format", "response": "7", "options": {"required_tags": ["answer"], "regex": r"\d+$"}},
    {"verifier": "overlong", "response": "...", "completion_tokens": 18432,
     "options": {"max_tokens": 20480, "buffer_tokens": 4096}},
    {"verifier": "repetition", "response": "so the answer is so the answer is so the answer is 7",
     "options": {"ngram_size": 3}},
    {"verifier": "length", "response": "...", "completion_tokens": 2000, "ground_truth": {"correct": True},
     "options": {"max_tokens": 8000}},
    {"verifier": "length", "response": "...", "completion_tokens": 2000, "ground_truth": {"correct": False},
     "options": {"max_tokens": 8000}},
    {"verifier": "length", "response": "...", "completion_tokens": 1500,
     "options": {"mode": "target", "target_tokens": 1000, "alpha": 0.001}},
]
with RewardClient() as client:
    for result in client.verify(items):
        print(f"{result.verifier:10} reward={result.reward:+.4f} {result.details}")
