#!/usr/bin/env bash
# The issue-17 verify runs on one H200 (device tool): speed runs side by side with a bare `import torch`, then the
# attention tile sweep. OUT is where the reports go.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/verify-h200}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
PYTHONPATH=. python3 bench/verify_speed.py "$OUT" "$(command -v python3)" 2>"$OUT/stderr.txt"
[ "${SWEEP:-1}" = 1 ] && python3 bench/attention_sweep.py 2>>"$OUT/stderr.txt" | tee "$OUT/attention_sweep.txt"
