"""One rank of the two-process DeepSpeed learner test (run under torchrun; see test_trainer_deepspeed.py)."""

import json
import sys

import torch


def main(model_dir: str, samples_path: str, settings_json: str, out_path: str) -> None:
    from transformers import AutoModelForCausalLM

    from olmorl.trainer.learners._deepspeed import DeepSpeedLearner
    from olmorl.trainer._objective import LossSettings

    torch.set_num_threads(1)
    batches = torch.load(samples_path, weights_only=False)
    results = []
    for settings in json.loads(settings_json):  # one launch, several configurations (start-up dominates)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        learner = DeepSpeedLearner(model, loss=LossSettings(), **settings)
        if learner.rank == 0:
            stats = [learner.train_step(batch) for batch in batches]
            results.append({"weights": learner.weights(), "stats": stats, "world": learner.world})
            learner.close()
        else:
            learner.serve()
    if results:
        torch.save(results, out_path)


if __name__ == "__main__":
    main(*sys.argv[1:])
