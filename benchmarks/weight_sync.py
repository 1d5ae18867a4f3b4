"""Time to push one weight version to 2 engines: the file push (safetensors file in /dev/shm, each
`olmorl-engine` loads it: needs a filesystem the engines share) against Ray's object store (the
weights put once, each engine actor loads them: no shared filesystem), in one run.

Both sides run 2 transformers engines on CPU and time `EnginePool.update_weights(..., wait=True)`,
which returns once both engines acknowledge the version. The Ray side runs on a local two-node
cluster (ray.cluster_utils.Cluster, one engine per node, all on this machine's loopback). The learner's
weights are fp32; `--engine-dtype bfloat16` runs bf16 engines, and each push is then cast to bf16 before it
is sent (half the bytes: the sync MiB printed per transport).

    python benchmarks/weight_sync.py [--hidden 512] [--layers 4] [--repeats 5] [--engine-dtype bfloat16]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from olmorl.trainer import TrainConfig  # noqa: E402


def build_model(out: Path, hidden: int, layers: int) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=32000, hidden_size=hidden, intermediate_size=4 * hidden, num_hidden_layers=layers,
                      num_attention_heads=8, max_position_embeddings=256, tie_word_embeddings=False,
                      pad_token_id=0, bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(str(out))
    return model


def time_pushes(pool, model: torch.nn.Module, repeats: int) -> tuple[list[float], int]:
    """Seconds per push, and the bytes of the last push's payload (in the engines' dtype)."""
    times = []
    for version in range(1, repeats + 1):
        weights = {k: v + 0.0 for k, v in model.state_dict().items()}
        start = time.perf_counter()
        pool.update_weights(weights, version, wait=True)
        times.append(time.perf_counter() - start)
    return times, pool.last_sync_bytes


def file_push(model_dir: Path, model: torch.nn.Module, repeats: int, dtype: str) -> tuple[list[float], int]:
    from olmorl.trainer.engines._engine_pool import EnginePool
    from olmorl.trainer.engines._http import RemoteEngine
    from olmorl.trainer.engines._server import EngineServerProcess

    args = ["--max-new-tokens", "1", "--eos-token-id", "2", "--pad-token-id", "0", "--dtype", dtype]
    owned = [EngineServerProcess(str(model_dir), log_path=os.devnull, extra_args=args).start() for _ in range(2)]
    pool = EnginePool([RemoteEngine(p.url, sync_timeout_s=300, ready_timeout_s=300) for p in owned], owned=owned)
    try:
        pool.start()
        return time_pushes(pool, model, repeats)
    finally:
        pool.stop()


def object_store_push(model: torch.nn.Module, repeats: int, store_bytes: int, dtype: str) -> tuple[list[float], int]:
    import ray
    from ray.cluster_utils import Cluster

    from olmorl.trainer._ray import build_ray_engines

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": store_bytes})
    cluster.add_node(num_cpus=1, object_store_memory=store_bytes)
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        cfg = TrainConfig(ray_address=cluster.address, ray_engines=2, engine_sync_timeout_s=300, engine_dtype=dtype)
        kwargs = dict(eos_token_id=2, pad_token_id=0, max_new_tokens=1)
        pool = build_ray_engines(cfg, model, kwargs)
        try:
            pool.start()
            return time_pushes(pool, model, repeats)
        finally:
            pool.stop()
    finally:
        ray.shutdown()
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--engine-dtype", default="float32", choices=("float32", "bfloat16"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = build_model(Path(tmp) / "model", args.hidden, args.layers)
        size = sum(v.numel() * v.element_size() for v in model.state_dict().values())
        print(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters, {size / 2**20:.0f} MiB "
              f"fp32; 2 {args.engine_dtype} engines; {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.1f} (shared machine)")
        files, file_bytes = file_push(Path(tmp) / "model", model, args.repeats, args.engine_dtype)
        store, store_bytes = object_store_push(model, args.repeats, max(4 * size, 256 * 2**20), args.engine_dtype)
    print(f"{'transport':<52}{'sync MiB':>10}{'median s':>10}{'min s':>8}{'max s':>8}")
    for name, times, sent in (("file push (safetensors in /dev/shm, olmorl-engine x2)", files, file_bytes),
                              ("Ray object store (put once, 2 engine actors)", store, store_bytes)):
        print(f"{name:<52}{sent / 2**20:>10.0f}{statistics.median(times):>10.3f}{min(times):>8.3f}{max(times):>8.3f}")
    print(f"object store / file push (median): {statistics.median(store) / statistics.median(files):.2f}x")


if __name__ == "__main__":
    main()
