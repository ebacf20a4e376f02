#!/usr/bin/env bash
# Issue 44 on two H200s (the device tool's kind nvidia-h200-x2; <= 10 minutes): the warm verify runner on
# CUDA_VISIBLE_DEVICES=0 against both GPUs, interleaved, 5 rounds; the NCCL all-reduce's bus bandwidth at 8 MiB to
# 1 GiB; one run with GPU 1 kept busy; the link as nvidia-smi and NVML show it. Uses the machine's own torch + triton
# (/opt/torch/.venv when there, else python3 on PATH); nothing to carry beyond the checkout.
#   OUT=$OUT bash bench/verify_2gpu_h200.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/verify-2gpu}
mkdir -p "$OUT"
# NVLink multicast stays off on these machines (NVLS / symmetric memory / NVSHMEM)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=${PYTHON:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || command -v python3)}
{ nvidia-smi; nvidia-smi topo -m; nvidia-smi topo -p2p r; nvidia-smi nvlink -s; } > "$OUT/nvidia-smi.txt" 2>&1
"$PY" -c 'import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__, torch.cuda.device_count())' \
  > "$OUT/versions.txt" 2>&1
git log -1 --format='%H %s' > "$OUT/commit.txt" 2>/dev/null
timeout 560 "$PY" bench/verify_2gpu.py "$OUT" "${ROUNDS:-5}" 2> "$OUT/bench.err" | tee "$OUT/summary.txt"
