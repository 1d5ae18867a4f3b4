URL=http://127.0.0.1:8000
SID=$(curl -s $URL/v1/sessions -H 'content-type: application/json' \
  -d '{"env": "python", "task": {"verifier": "math", "ground_truth": "42"}}' \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["session_id"])')
curl -s $URL/v1/sessions/$SID/tool -H 'content-type: application/json' \
  -d '{"name": "python", "arguments": {"code": "x = 6 * 7"}}' > /dev/null
curl -s $URL/v1/sessions/$SID/tool -H 'content-type: application/json' \
  -d '{"name": "python", "arguments": {"code": "print(x)"}}' | python3 -m json.tool
curl -s $URL/v1/sessions/$SID/verify -H 'content-type: application/json' \
  -d '{"response": "The answer is \\boxed{42}."}' | python3 -m json.tool
