# Score tool calls (Hermes tags and OpenAI tool_calls JSON) against BFCL-style expected calls.
import json

from olmorl.clients import RewardClient

expected = [{"get_weather": {"city": ["Paris", "Paris, France"], "unit": ["", "celsius"]}},
            {"get_time": {"timezone": ["Europe/Paris"]}}]
hermes = ('<tool_call>\n{"name": "get_time", "arguments": {"timezone": "europe/paris"}}\n</tool_call>\n'
          '<tool_call>\n{"name": "get_weather", "arguments": {"city": "paris, france"}}\n</tool_call>')
openai = json.dumps({"tool_calls": [{"type": "function", "function": {
    "name": "get_weather", "arguments": json.dumps({"city": "Paris", "unit": "kelvin"})}}]})
items = [{"id": "parallel, any order", "response": hermes, "ground_truth": expected},
         {"id": "wrong unit, one missing", "response": openai, "ground_truth": expected},
         {"id": "no call expected", "response": "No tool can answer that.", "ground_truth": []}]
with RewardClient() as client:
    for item, result in zip(items, client.verify([dict(item, verifier="function_call") for item in items])):
        print(f"{item['id']:24} reward={result.reward}", *result.details.get("errors", []), sep="  ")
