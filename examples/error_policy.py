# What a failure gives: an item the server could not score is None, never 0; no server at all raises.
from olmorl.clients import RewardClient, RewardServerUnavailable

items = [
    {"verifier": "math", "response": "The answer is \\boxed{4}.", "ground_truth": "4"},
    {"verifier": "math", "response": "The answer is \\boxed{4}."},  # no ground truth: `invalid`
]
with RewardClient() as client:
    for result in client.verify(items):
        print(f"{result.status:7} reward={result.reward} error={result.error}")
with RewardClient(on_error="zero") as client:  # 0.0 only when asked for; the status stays
    zeroed = client.verify(items)[1]
    print(f"on_error='zero': {zeroed.status} reward={zeroed.reward}")

try:
    with RewardClient("http://127.0.0.1:1", max_retries=1) as nobody:  # nothing listens there
        nobody.verify(items)
except RewardServerUnavailable as exc:
    print(f"{type(exc).__name__}: {exc}")
