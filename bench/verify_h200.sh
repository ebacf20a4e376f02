#!/usr/bin/env bash
# The issue-17 verify runs on one H200 (device tool): speed runs side by side with a bare `import torch`, then the
# attention tile sweep. OUT is where the reports go.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/verify-h200}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
PYTHONPATH=. python3 bench/verify_speed.py "$OUT" "$(command -v python3)" 2>"$OUT/stderr.txt"
if [ "${SWEEP:-0}" = 1 ]; then
  for dt in fp16 bf16; do DTYPE=$dt python3 bench/attention_sweep.py 2>>"$OUT/stderr.txt" | tee -a "$OUT/attention_sweep.txt"; done
fi
