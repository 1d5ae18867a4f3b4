# Score a file of model responses (JSONL or Parquet): in-process, or through servers with --server.
cat > responses.jsonl <<'ROWS'
{"verifier": "math", "response": "The answer is $\\frac{1}{2}$.", "ground_truth": "0.5"}
{"verifier": "math", "response": "It is 4 or 6.", "ground_truth": "4"}
{"verifier": "ifeval", "response": "THE OCEAN IS WIDE AND THE OCEAN IS DEEP.", "ground_truth": [{"instruction_id": ["change_case:english_capital"], "kwargs": [null]}]}
{"verifier": "math", "response": "The answer is 3.", "ground_truth": "three"}
ROWS
olmorl-rewards verify responses.jsonl --server http://127.0.0.1:8000 --output scored.jsonl
