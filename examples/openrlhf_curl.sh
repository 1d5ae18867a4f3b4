# What OpenRLHF sends to --reward.remote_url (http://127.0.0.1:8000/openrlhf/get_reward), labels from
# --data.label_key: each label names its verifier, or add ?verifier=math to the URL for bare answers.
curl -s http://127.0.0.1:8000/openrlhf/get_reward -H 'content-type: application/json' -d '{
  "query": ["<|user|>What is 6 * 7?<|assistant|>The answer is \\boxed{42}.<|im_end|>",
            "<|user|>Say hi in capitals.<|assistant|>hi<|im_end|>"],
  "prompts": ["<|user|>What is 6 * 7?<|assistant|>", "<|user|>Say hi in capitals.<|assistant|>"],
  "labels": ["{\"verifier\": \"math\", \"ground_truth\": \"42\"}",
             {"verifier": "ifeval", "ground_truth": [{"instruction_id": ["change_case:english_capital"], "kwargs": [null]}]}]
}' | python3 -m json.tool
