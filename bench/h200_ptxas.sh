#!/usr/bin/env bash
# On the GPU machine: which ptxas Triton uses per GPU (`verify`), and `doctor` on a good venv (no ptxas finding);
# then the same doctor with a pretend R570 driver (TRITONLOCK_DRIVER) and TRITON_PTXAS_PATH at a stand-in CUDA 13.1
# ptxas, which must report triton-ptxas-too-new. No network: tritonlock runs from this checkout with the examined
# interpreter's own click/packaging/requests (the H200 image has them), from an empty directory (no project).
#   PYTHON  the environment to examine (default /opt/torch/.venv/bin/python3: torch 2.11.0+cu130, triton 3.6.0)
#   OUT     where the outputs go: an absolute path as is (the GPU tool's $OUT), else relative to the repository
#           (default bench/h200/ptxas)
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
case "${OUT:-}" in /*) ;; "") OUT=$REPO/bench/h200/ptxas ;; *) OUT=$REPO/$OUT ;; esac
W=${WORK:-/tmp/h200-ptxas}
mkdir -p "$OUT" "$W/empty"
cd "$W/empty"
tl() { PYTHONPATH="$REPO" "$PY" -m tritonlock "$@"; }
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv > "$OUT/host.txt" 2>&1
tl verify --python "$PY" --quick > "$OUT/verify.txt" 2>&1; echo "verify exit $?" >> "$OUT/verify.txt"
tl verify --python "$PY" --quick --json > "$OUT/verify.json" 2>/dev/null
tl doctor --python "$PY" > "$OUT/doctor.txt" 2>&1; echo "doctor exit $?" >> "$OUT/doctor.txt"
printf '#!/bin/sh\necho "Cuda compilation tools, release 13.1, V13.1.80"\n' > "$W/ptxas-13.1" && chmod +x "$W/ptxas-13.1"
TRITONLOCK_DRIVER=570.133.07 TRITONLOCK_CUDA=12.8 TRITON_PTXAS_PATH="$W/ptxas-13.1" \
  tl doctor --python "$PY" > "$OUT/doctor-r570-ptxas131.txt" 2>&1
echo "doctor exit $?" >> "$OUT/doctor-r570-ptxas131.txt"
grep -h "Triton ptxas cuda" "$OUT/verify.txt"
echo "ptxas findings on the good venv: $(grep -c 'triton-ptxas-too-new' "$OUT/doctor.txt")"
grep -h "triton-ptxas-too-new" "$OUT/doctor-r570-ptxas131.txt" | sed 's/^/pretend R570 + 13.1 ptxas: /'
