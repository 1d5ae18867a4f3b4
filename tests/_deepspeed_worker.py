"""One rank of the two-process DeepSpeed learner test (run under torchrun; see test_trainer_deepspeed.py).

With `resume_after: k` in a configuration, the ranks train k batches, rank 0 takes the learner's state
through a checkpoint on disk, every rank builds a fresh learner from the initial weights, and the rest
of the batches train after loading that state (so they must match an uninterrupted run)."""

import json
import sys
import tempfile

import torch


def main(model_dir: str, samples_path: str, settings_json: str, out_path: str) -> None:
    from transformers import AutoModelForCausalLM

    from olmorl.trainer._checkpoint import load_checkpoint, save_checkpoint
    from olmorl.trainer._objective import LossSettings
    from olmorl.trainer.learners._deepspeed import DeepSpeedLearner, leave_process_group

    torch.set_num_threads(1)
    batches = torch.load(samples_path, weights_only=False)
    results = []
    for settings in json.loads(settings_json):  # one launch, several configurations (start-up dominates)
        resume_after = settings.pop("resume_after", None)
        parts = [batches] if resume_after is None else [batches[:resume_after], batches[resume_after:]]
        stats, state = [], None
        for part in parts:
            model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
            learner = DeepSpeedLearner(model, loss=LossSettings(), **settings)
            if learner.rank != 0:
                learner.serve()
                continue
            if state is not None:
                learner.load_training_state(state["learner"], state["model"])
            stats += [learner.train_step(batch) for batch in part]
            weights = learner.weights()
            if part is not parts[-1]:
                with tempfile.TemporaryDirectory() as tmp:
                    save_checkpoint(tmp, 1, {"learner": learner.training_state(), "model": weights}, "{}")
                    state = load_checkpoint(f"{tmp}/checkpoints/step_0000001")
            learner.close()
        if learner.rank == 0:
            results.append({"weights": weights, "stats": stats, "world": learner.world,
                            "files": sorted(state["learner"]["files"]) if state else []})
    if results:
        torch.save(results, out_path)
    leave_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
