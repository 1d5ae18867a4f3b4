"""`olmorl-train export CHECKPOINT OUT`: a LoRA run's checkpoint as a Hugging Face model directory, the adapter
merged into the base model's weights (loads with `AutoModelForCausalLM.from_pretrained(OUT)`, no peft needed)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from olmorl.trainer._checkpoint import latest_checkpoint


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="olmorl-train export", description=__doc__)
    parser.add_argument("checkpoint", help="a checkpoint (OUTPUT_DIR/checkpoints/step_N) or a run's OUTPUT_DIR "
                                           "(its latest checkpoint)")
    parser.add_argument("out", help="the model directory to write")
    parser.add_argument("--base-model", help="the base model (default: the `model` of the checkpoint's config)")
    args = parser.parse_args(argv)
    try:
        checkpoint = _checkpoint_path(Path(args.checkpoint))
        adapter = checkpoint / "model"
        if not (adapter / "adapter_config.json").is_file():
            raise ValueError(f"{checkpoint} holds no LoRA adapter (lora_rank was 0): its model/ directory is "
                             "already a Hugging Face model")
        base = args.base_model or json.loads((checkpoint / "config.json").read_text())["model"]
    except (ValueError, OSError, KeyError) as exc:
        print(f"olmorl-train export: {exc}", file=sys.stderr)
        return 2
    from olmorl.trainer._lora import merge_adapter

    out = merge_adapter(base, adapter, args.out, tokenizer_dir=adapter)
    print(f"merged the adapter of {checkpoint} into {base}: {out}")
    return 0


def _checkpoint_path(path: Path) -> Path:
    if (path / "state.pt").is_file():
        return path
    latest = latest_checkpoint(path) if path.is_dir() else None
    if latest is None:
        raise ValueError(f"{path} is neither a checkpoint nor a run directory with one")
    return latest
