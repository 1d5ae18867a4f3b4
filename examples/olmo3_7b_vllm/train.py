"""Launch olmorl-train with a `vllm serve` engine (see README.md). NOT RUN HERE: written against olmorl's and
vLLM's documented APIs on a machine without a GPU.

    torchrun --nproc_per_node 8 train.py --config run.yaml --vllm-url http://engine-host:8001
"""

from __future__ import annotations

import argparse

from olmorl.trainer import Trainer
from olmorl.trainer._config import load_config
from olmorl.trainer._scaleout import is_follower_rank, run_follower
from olmorl.trainer.engines import VLLMServerEngine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--vllm-url", required=True, help="the `vllm serve` started as README.md shows")
    parser.add_argument("--nccl-address", default="127.0.0.1", help="this (rank 0) host, as the engine reaches it")
    args = parser.parse_args()
    config = load_config(args.config)
    if is_follower_rank():  # DeepSpeed ranks > 0 train their shares when rank 0 says so
        run_follower(config)
        return
    trainer = Trainer(config)
    # the config has no vLLM switch yet: replace the default engine before the run starts
    trainer.engine = VLLMServerEngine(args.vllm_url, model=config.model, max_new_tokens=config.max_new_tokens,
                                      temperature=config.temperature, top_k=config.top_k, top_p=config.top_p,
                                      seed=config.seed, sync_timeout_s=config.engine_sync_timeout_s,
                                      nccl_address=args.nccl_address)
    try:
        trainer.run()
    finally:
        trainer.learner.close()


if __name__ == "__main__":
    main()
