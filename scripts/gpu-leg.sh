#!/usr/bin/env bash
# Issue 28's GPU leg, the one command to run on the GPU machine from the repo root (ends within 5 minutes):
#   bash scripts/gpu-leg.sh
# It installs the carried wheels to /tmp/site, prints nvidia-smi and the versions, then
#  1. runs `olmorl-train` itself for 3 steps with `device: cuda` and `learner_dtype: bfloat16_mixed` on the toy
#     addition task (examples/addition_grpo, a short warm start; its local reward server included), copying the
#     run's metrics.jsonl and reward-server log to $OUT/addition/;
#  2. runs benchmarks/trainer_gpu.py (torch engine + plain learner built by the trainer's own builders on CUDA,
#     Qwen2.5-0.5B's shape from a config; full fine-tune then LoRA) under a hard limit;
# tee-ing everything to $OUT/log.txt; the benchmark writes $OUT/trainer_gpu.json after each mode.
#
# The machine's missing packages travel as wheels in .whl/ (carry [".whl"]): scripts/leg-common.sh installs them.
#
# Environment: OUT (default /tmp/gpu-leg-out), GPU_LEG_TRAIN_LIMIT_S (default 75: the olmorl-train leg's hard
# limit), GPU_LEG_LIMIT_S (default 200: the benchmark's hard limit), GPU_LEG_BUDGET_S (default 150: the benchmark
# stops starting steps past it), GPU_LEG_ARGS (more benchmark flags).
set -uo pipefail

# shellcheck source=scripts/leg-common.sh
source "$(dirname "$0")/leg-common.sh"
leg_log /tmp/gpu-leg-out
install_carried_wheels || leg_finish 2

nvidia-smi
python3 - <<'EOF'
import sys

import peft
import pydantic
import torch
import transformers

print(f"python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
      f"transformers {transformers.__version__}, peft {peft.__version__}, pydantic {pydantic.__version__}")
print(f"GPU: {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none visible to torch'}")
EOF

repo="$PWD"
mkdir -p "$OUT/addition"
echo "== olmorl-train, device cuda, 3 steps of examples/addition_grpo"
# timeout signals its whole process group; the reward server follows its parent (--stop-with-parent)
timeout -k 10 "${GPU_LEG_TRAIN_LIMIT_S:-75}" bash -c '
    cd /tmp && rm -rf addition && mkdir addition && cd addition \
    && python3 "$1/examples/addition_grpo/prepare.py" --out work --steps 20 \
    && python3 -m olmorl.trainer._cli --config "$1/examples/addition_grpo/run.yaml" --device cuda \
        --learner-dtype bfloat16_mixed --total-steps 3 --eval-every 0 --save-every 0 --filter-zero-std false \
        --tensorboard false --output-dir /tmp/addition/run' _ "$repo"
train_rc=$?
cp /tmp/addition/run/metrics.jsonl /tmp/addition/run/reward-server.log "$OUT/addition/" 2>/dev/null
echo "olmorl-train leg: exit status $train_rc"

# shellcheck disable=SC2086  # GPU_LEG_ARGS is a list of flags
timeout -k 10 "${GPU_LEG_LIMIT_S:-200}" python3 benchmarks/trainer_gpu.py --budget-s "${GPU_LEG_BUDGET_S:-150}" \
    ${GPU_LEG_ARGS:-}
rc=$?
[ $rc -eq 124 ] && echo "the benchmark ran past ${GPU_LEG_LIMIT_S:-200} s and was stopped; $OUT/trainer_gpu.json holds the modes it finished"
[ $rc -eq 0 ] && rc=$train_rc
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv
leg_finish $rc
