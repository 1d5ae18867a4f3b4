# The judge modes end to end: a reward server whose LM judge is the stand-in (stand_in_judge.py), scored over HTTP.
from olmorl.clients import RewardClient
from olmorl.rewards._settings import JudgeSettings
from olmorl.rewards.service._local import LocalRewardServer
from stand_in_judge import stand_in_judge

CAPITAL, BURN = "What is the capital of Australia?", "How should a mild burn be treated?"
PRIME, HAIKU = "Name a prime number greater than 10.", "Write a haiku about rain."
SPEED = "A train covers 120 km in 1.5 hours. What is its average speed in km/h?"
COOL, ICE = ("Cool it under running water for 20 minutes; do not apply ice or butter.",
             "Put ice on it at once, and see a doctor if it blisters.")
RUBRIC = [{"criterion": "Says to cool the burn with running water", "weight": 5},
          {"criterion": "Gives the duration, about 20 minutes", "weight": 3},
          {"criterion": "Says when to seek medical care", "weight": 2},
          {"criterion": "Recommends ice or butter", "weight": -4}]
HAIKUS = ["Soft rain on tin roofs", "Rain rain go away", "Grey sky weeps"]
# What the stand-in judge thinks of each response (1-10), and which criteria each meets
GRADES = {"Canberra.": 10, "Sydney, its largest city.": 1, "Canberra, home to 2 million people.": 6,
          "11 is prime.": 9, "12 is prime.": 1, HAIKUS[0]: 9, HAIKUS[1]: 3, HAIKUS[2]: 6,
          "It averages eighty kilometres per hour.": 10, "It is $\\boxed{70}$.": 1}
MEETS = {COOL: {RUBRIC[0]["criterion"], RUBRIC[1]["criterion"]},
         ICE: {RUBRIC[2]["criterion"], RUBRIC[3]["criterion"]}}


def group(verifier: str, prompt: str, completions: list[str]) -> list[dict]:
    """One item per completion, each carrying the whole group; sent together, the group is judged once per order."""
    return [{"verifier": verifier, "prompt": prompt, "response": text, "ground_truth": {"completions": completions},
             "options": {"index": index}} for index, text in enumerate(completions)]


with stand_in_judge(GRADES, MEETS) as judge_url, \
        LocalRewardServer(workers=1, judge=JudgeSettings(base_url=judge_url, model="stand-in")) as server, \
        RewardClient(server.url) as client:
    print("judge, reference mode (ground truth: Canberra)")
    answers = ["Canberra.", "Canberra, home to 2 million people.", "Sydney, its largest city."]
    for answer, result in zip(answers, client.verify([{"verifier": "judge", "prompt": CAPITAL, "response": answer,
                                                       "ground_truth": "Canberra"} for answer in answers])):
        print(f"  score={result.details['score']:<4g} reward={result.reward:.3f}  {answer}")

    print("rubric_judge")
    for result in client.verify([{"verifier": "rubric_judge", "prompt": BURN, "response": response,
                                  "ground_truth": RUBRIC} for response in (COOL, ICE)]):
        print(f"  reward={result.reward} raw_score={result.details['raw_score']}")
        for verdict in result.details["criteria"]:
            print(f"    {verdict['weight']:>4} met={verdict['met']!s:5} {verdict['criterion']}")

    print("pairwise_judge (both orders)")
    for pair in (["11 is prime.", "12 is prime."], ["13 is prime.", "17 is prime."]):  # the judge knows only the 1st
        for text, result in zip(pair, client.verify(group("pairwise_judge", PRIME, pair))):
            print(f"  {text:13} reward={result.reward} winners={result.details['winners']} "
                  f"agreement={result.details['agreement']}")

    print("group_judge (a seeded shuffle and its reverse)")
    for haikus in (HAIKUS, ["Drops on the window", "Puddles hold the sky", "Clouds let go"]):  # knows the 1st only
        for text, result in zip(haikus, client.verify(group("group_judge", HAIKU, haikus))):
            print(f"  {text:22} reward={result.reward} scores={result.details['scores']} "
                  f"agreement={result.details['agreement']} orders={result.details['orders']}")

    print("math with judge_fallback (reference 80)")
    answers = ["The answer is $\\boxed{80}$.", "It averages eighty kilometres per hour.", "It is $\\boxed{70}$."]
    items = [{"verifier": "math", "prompt": SPEED, "response": answer, "ground_truth": "80",
              "options": {"judge_fallback": True}} for answer in answers]  # or the server's OLMORL_MATH_JUDGE_FALLBACK
    for answer, result in zip(answers, client.verify(items)):
        method = result.details["method"]  # symbolic, or judge where the symbolic check gave 0
        print(f"  reward={result.reward} decided by {method:8} {answer}"
              + (f"  (symbolic check: {result.details['symbolic_reason']})" if method == "judge" else ""))
