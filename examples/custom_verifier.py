# A verifier of your own: return a Score, or raise ItemError (InvalidInput for a malformed item).
import olmorl
from olmorl.rewards import InvalidInput, ItemError, Score, Task, Verifier, register


@register
class WordCount(Verifier):
    name = "word_count"
    description = "1 when the response has exactly `ground_truth` words."
    ground_truth_type = int

    def score(self, task: Task) -> Score:
        if task.ground_truth < 0:
            raise InvalidInput("ground_truth: a word count cannot be negative", {"got": task.ground_truth})
        if "\x00" in task.response:  # stands for anything outside the item failing: the item is `error`, not 0
            raise ItemError("error", "the tokenizer service is down", {"reason": "tokenizer_unavailable"})
        words = len(task.response.split())
        return Score(float(words == task.ground_truth), {"words": words})


items = [{"verifier": "word_count", "response": "three short words", "ground_truth": 3},
         {"verifier": "word_count", "response": "two words", "ground_truth": -2},
         {"verifier": "word_count", "response": "a\x00b", "ground_truth": 1}]
for result in olmorl.verify(items, workers=1):
    print(result.status, result.reward, result.error, result.details)
