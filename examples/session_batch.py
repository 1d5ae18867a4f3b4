# Many sessions in one request per step: open them, one tool call on each, verify them all. Each entry is that
# item's result or its error (here an unknown environment's 422); one bad item fails no other.
from olmorl.clients import SessionClient

with SessionClient() as client:
    *sessions, refused = client.open_many([{"env": "python", "task": {"verifier": "math", "ground_truth": "9"}},
                                           {"env": "python", "task": {"verifier": "math", "ground_truth": "16"}},
                                           {"env": "no_such_env"}])
    print(type(refused).__name__, refused.status_code)
    replies = client.call_many([(session, "python", {"code": f"print({n} ** 2)"})
                                for session, n in zip(sessions, (3, 4))])
    print([reply.output for reply in replies])
    results = client.verify_many([(session, f"\\boxed{{{reply.output.strip()}}}")
                                  for session, reply in zip(sessions, replies)])
    print([(result.status, result.reward) for result in results])
