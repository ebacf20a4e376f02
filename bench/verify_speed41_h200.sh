#!/usr/bin/env bash
# Issue 41's warm-verify ratio on one H200, on its own (about 3-4 minutes of device time): tritonlock in its own venv
# (carried wheels, no network), the torch + torchvision project of bench/h200_native_prepare.sh synced onto the
# image's stack (`sync --system-site-packages`, no verify), one verify to fill the venv's caches (Triton's binaries,
# the torch.compile check's passing row), then five interleaved rounds of a bare `import torch` + CUDA init, a bare
# `import torch, torchvision` + CUDA init, `tritonlock verify` and `verify --quick` (bench/verify_side_by_side.py).
#
# Needs .device-carry/h200-native from `bash bench/h200_native_prepare.sh`, run on THIS checkout (its tritonlock wheel
# is the code measured) where PyPI is reachable. On the GPU machine, from the repository root:
#   OUT=$OUT bash bench/verify_speed41_h200.sh
# (device tool: carry [".device-carry"]). PROJ=proj-torch (a folder of $C: a lock of torch alone, made the same way
# without torchvision) with PACKAGES= measures the first goal's case of torch alone. Results: $OUT/side-by-side.txt (the ratios against their goals),
# $OUT/sbs/*.json (every report), $OUT/fill.* (the filling run), $OUT/env.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
C=$REPO/.device-carry/h200-native
OUT=${OUT:-/tmp/verify-speed41}
PROJ=${PROJ:-proj}
PKGS=${PACKAGES-torchvision}
[ -d "$C/wheels" ] && [ -f "$C/$PROJ/triton-env.lock" ] || { echo "no $C: run bash bench/h200_native_prepare.sh" >&2; exit 2; }
W=$(mktemp -d)
mkdir -p "$OUT"
export UV_PYTHON_DOWNLOADS=never UV_OFFLINE=1 PIP_NO_INDEX=1 PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv; nproc; uptime
  python3 -c 'import sys, torch, triton; print(sys.prefix, torch.__version__, triton.__version__)'
  git -C "$REPO" log -1 --format='%h %s' 2>/dev/null; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
python3 -m venv "$W/tl" && "$W/tl/bin/pip" install -q --no-index --find-links "$C/wheels" tritonlock > "$OUT/install.txt" 2>&1 \
  || { cat "$OUT/install.txt"; exit 1; }
TL=$W/tl/bin/tritonlock
"$TL" --version >> "$OUT/install.txt" 2>&1
cp -r "$C/$PROJ" "$W/proj"
cd "$W/proj"
timeout 150 "$TL" sync --system-site-packages --find-links "$C/house" --no-verify > "$OUT/sync.txt" 2>&1
echo "sync: exit $?, $(( $(date +%s) - t0 )) s since start" | tee -a "$OUT/env.txt"
# the first verify compiles the kernels and runs the torch.compile check; later ones find both (what a user's
# second verify finds)
timeout 150 "$TL" verify --json > "$OUT/fill.json" 2> "$OUT/fill.err"
echo "filling verify: exit $?, $(( $(date +%s) - t0 )) s since start" | tee -a "$OUT/env.txt"
PACKAGES=$PKGS timeout 240 python3 "$REPO/bench/verify_side_by_side.py" "$OUT/sbs" 5 "$W/proj/.venv/bin/python" -- \
  "$TL" verify 2> "$OUT/sbs.err" | tee "$OUT/side-by-side.txt"
echo "done: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.txt"
rm -rf "$W"
