# Score text-to-SQL answers: both queries run on a SQLite database built from the ground truth, in the sandbox.
from olmorl.clients import RewardClient

db = {"schema": "CREATE TABLE singer (name TEXT, country TEXT, age INTEGER);",
      "rows": {"singer": [["Joe", "France", 52], ["Ana", "Spain", 29], ["Li", "France", 41]]}}
answers = {
    "right, any order": ("SELECT name FROM singer WHERE country = 'France'",
                         "```sql\nSELECT name FROM singer WHERE age > 40 ORDER BY name DESC;\n```"),
    "ordered reference": ("SELECT name FROM singer ORDER BY age", "SELECT name FROM singer ORDER BY age DESC"),
    "syntax error": ("SELECT count(*) FROM singer", "SELECT count(* FROM singer"),
    "a write": ("SELECT count(*) FROM singer", "DELETE FROM singer"),
}
items = [{"verifier": "sql", "response": response, "ground_truth": dict(db, query=reference)}
         for reference, response in answers.values()]
with RewardClient() as client:
    for label, result in zip(answers, client.verify(items)):
        error = result.details.get("error")
        reason = result.details["reason"]
        print(f"{label:18} {result.status} reward={result.reward} {reason}" + (f"  {error}" if error else ""))
