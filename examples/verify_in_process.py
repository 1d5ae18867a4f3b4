# No server: score in this process (needs the [server] extra), with the results POST /v1/verify gives.
import olmorl

items = [{"verifier": "math", "response": "It is $\\boxed{\\tfrac{1}{2}}$.", "ground_truth": "0.5"},
         {"verifier": "no_such_verifier", "response": "4"}]
print([r.status for r in olmorl.verify(items, workers=1)])  # keyword arguments are server settings
with olmorl.InProcessVerifier(workers=1) as verifier:  # kept open, its workers and sandbox stay warm
    print([r.reward for r in verifier.verify(items)])
