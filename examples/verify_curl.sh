curl -s http://127.0.0.1:8000/v1/verify -H 'content-type: application/json' -d '{"items": [
  {"id": "q1", "verifier": "math", "ground_truth": "\\frac{3}{4}",
   "response": "<think>3/4 or 0.8?</think> The answer is $0.75$."},
  {"id": "q2", "verifier": "math", "ground_truth": "4", "response": "It is 4 or 6."}
]}' | python3 -m json.tool
