# A tool session with the Python client: state persists between calls, then the answer is verified.
from olmorl.clients import SessionClient

with SessionClient() as client:
    with client.open("python", {"verifier": "math", "ground_truth": "1/2"}) as session:
        print(session.call("python", code="from fractions import Fraction\nx = Fraction(3, 6)").output, end="")
        print(session.call("python", code="print(x)").output, end="")
        failed = session.call("python", code="x / 0")
        print(failed.status, failed.output.splitlines()[-1])
        result = session.verify("So the probability is $\\boxed{\\frac{1}{2}}$.")
        print(f"{result.status} reward={result.reward} components={result.details['reward_components']}")
