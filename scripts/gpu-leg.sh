#!/usr/bin/env bash
# Issue 28's GPU leg, the one command to run on the GPU machine from the repo root (ends within 7 minutes):
#   bash scripts/gpu-leg.sh
# It installs the carried wheels to /tmp/site, prints nvidia-smi and the versions, then runs
# benchmarks/trainer_gpu.py (torch engine + plain learner, Qwen2.5-0.5B's shape from a config, bf16; full
# fine-tune then LoRA) under a hard limit, tee-ing everything to $OUT/log.txt; the benchmark writes
# $OUT/trainer_gpu.json after each mode.
#
# The machine (Python 3.12, torch 2.11, transformers 5.17, peft; no network) lacks pydantic and pydantic-settings,
# which olmorl's import path needs. Their wheels travel in .whl/ (carry [".whl"]; not committed), exact pins in
# scripts/gpu-leg-wheels.txt, which also says how to fetch them:
#   annotated-types 0.8.0, pydantic 2.14.4, pydantic_core 2.50.5 (cp312 manylinux2014), pydantic-settings 2.16.3,
#   python-dotenv 1.2.4, typing-inspection 0.4.5, typing_extensions 4.16.0
#
# Environment: OUT (default /tmp/gpu-leg-out), GPU_LEG_LIMIT_S (default 390: the benchmark's hard limit),
# GPU_LEG_BUDGET_S (default 300: the benchmark stops starting steps past it), GPU_LEG_ARGS (more benchmark flags).
set -uo pipefail

OUT="${OUT:-/tmp/gpu-leg-out}"
export OUT
mkdir -p "$OUT"
exec 3>&1 > >(tee -a "$OUT/log.txt") 2>&1
tee_pid=$!
finish() {  # the log is complete before the command returns (what is under $OUT is collected then)
    exec 1>&3 2>&3
    wait "$tee_pid"
    exit "$1"
}

shopt -s nullglob
wheels=(.whl/*.whl)
if [ ${#wheels[@]} -eq 0 ]; then
    echo "no wheels in .whl/: fetch them as scripts/gpu-leg-wheels.txt says and carry .whl" >&2
    finish 2
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${wheels[@]}" \
    || { echo "installing the carried wheels failed" >&2; finish 2; }
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1

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

# shellcheck disable=SC2086  # GPU_LEG_ARGS is a list of flags
timeout -k 10 "${GPU_LEG_LIMIT_S:-390}" python3 benchmarks/trainer_gpu.py --budget-s "${GPU_LEG_BUDGET_S:-300}" \
    ${GPU_LEG_ARGS:-}
rc=$?
[ $rc -eq 124 ] && echo "the benchmark ran past ${GPU_LEG_LIMIT_S:-390} s and was stopped; $OUT/trainer_gpu.json holds the modes it finished"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv
finish $rc
