#!/usr/bin/env bash
# Issue 41 on one H200 (device tool, <= 8 minutes): verify's checks over >= 1,000 seeds per row at --quick and full
# sizes in one process (no false failure expected; the worst error as a share of its bound), then the planted faults
# (all:one, all:wrong, skipped stores: every row must fail). Run from the repository root with the image's python3:
#   OUT=$OUT bash bench/verify_seed_sweep_h200.sh
set -uo pipefail
OUT=${OUT:-/tmp/verify-seed-sweep}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
export TRITON_CACHE_DIR="$OUT/.triton-cache"
timeout 470 python3 bench/verify_seed_sweep.py "$OUT" --seeds 1000 --budget 400 2> "$OUT/stderr.txt" | tee "$OUT/seed_sweep.txt"
rm -rf "$OUT/.triton-cache"
