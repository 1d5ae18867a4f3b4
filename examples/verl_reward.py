# verl's reward call, made the way verl's reward managers make it: runs without verl installed.
# In a verl run: custom_reward_function.path=pkg://olmorl.clients.verl custom_reward_function.name=compute_score
from olmorl.clients.verl import compute_score, compute_score_batch

# verl's naive reward manager: one call per sample, with the row's data_source, the decoded response,
# reward_model.ground_truth and extra_info.
print(compute_score("openai/gsm8k", "Natalia sold 48 + 24 = 72 clips.\n#### 72", "72", extra_info={"index": 0}))
# reward_model.reward_manager=batch with custom_reward_function.name=compute_score_batch: one HTTP batch.
scores = compute_score_batch(
    data_sources=["lighteval/math", "google/ifeval", "my_puzzles"],
    solution_strs=["So $x = \\boxed{\\frac{1}{2}}$.", "hello world", "<answer>42</answer>"],
    ground_truths=["0.5", [{"instruction_id": ["change_case:english_capital"], "kwargs": [None]}], "42"],
    extra_infos=[None, None, {"verifier": "string_match"}],  # a row may name its verifier
)
for score in scores:
    print(score)
