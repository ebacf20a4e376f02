#!/usr/bin/env bash
# Issue 41's warm-verify ratio on one H200 (<= 5 minutes): after bench/h200_native.sh (in the same session: it leaves
# tritonlock's own venv in $W/tl and the torch + torchvision project, synced, in $W/proj), five interleaved rounds of
# a bare `import torch` + CUDA init, `tritonlock verify` and `verify --quick` (bench/verify_side_by_side.py).
#   W=<h200_native.sh's work dir> OUT=$OUT bash bench/verify_speed41_h200.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/verify-speed41}
W=${W:?the work directory bench/h200_native.sh made}
mkdir -p "$OUT"
cd "$W/proj"
"$W/tl/bin/tritonlock" verify --json > "$OUT/warm-fill.json" 2> "$OUT/warm-fill.err"  # fills the venv's caches
timeout 280 python3 "$OLDPWD/bench/verify_side_by_side.py" "$OUT/sbs" 5 "$W/proj/.venv/bin/python" -- \
  "$W/tl/bin/tritonlock" verify 2> "$OUT/sbs.err" | tee "$OUT/side-by-side.txt"
