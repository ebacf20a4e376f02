#!/usr/bin/env bash
# On the GPU machine: what `resolve --dry-run --json` and `why` answer for the real host (NVML's driver, CUDA and
# GPUs), and that `doctor` finds no driver-too-old/new-for-gpu on it; then the same host with a pretend R535 driver
# (TRITONLOCK_DRIVER/CUDA), which an H200 (sm_90, first in CUDA 11.8 -> R520) still drives, and with a pretend
# RTX 5090 (TRITONLOCK_GPUS=12.0), which R535 does not (R570+): resolve must say so, doctor too. No network:
# tritonlock runs from this checkout with the image's own click/packaging/tomlkit (bench/h200_ptxas.sh does the same).
#   PYTHON  interpreter to run tritonlock with and to examine (default /opt/torch/.venv/bin/python3)
#   OUT     where the outputs go: an absolute path as is (the GPU tool's $OUT), else relative to the repository
#           (default bench/h200/resolve-audit)
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
case "${OUT:-}" in /*) ;; "") OUT=$REPO/bench/h200/resolve-audit ;; *) OUT=$REPO/$OUT ;; esac
W=${WORK:-/tmp/h200-resolve-audit}
mkdir -p "$OUT" "$W/proj"
cd "$W/proj"
tl() { PYTHONPATH="$REPO" "$PY" -m tritonlock "$@"; }
printf '[environment]\npython = "3.12"\n' > triton-env.toml  # the host itself is the one target
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv > "$OUT/host.txt" 2>&1
tl host --json > "$OUT/host.json" 2>&1
tl resolve --dry-run --json > "$OUT/resolve.json" 2>&1; echo "resolve exit $?" >> "$OUT/resolve.exit"
tl why --no-sources > "$OUT/why.txt" 2>&1
tl doctor --python "$PY" > "$OUT/doctor.txt" 2>&1; echo "doctor exit $?" >> "$OUT/doctor.txt"
TRITONLOCK_DRIVER=535.104.05 TRITONLOCK_CUDA=12.2 tl resolve --dry-run --json > "$OUT/resolve-r535.json" 2>&1
TRITONLOCK_DRIVER=535.104.05 TRITONLOCK_CUDA=12.2 TRITONLOCK_GPUS=12.0 \
  tl resolve --dry-run --json > "$OUT/resolve-r535-rtx5090.json" 2>&1; echo "exit $?" >> "$OUT/resolve.exit"
TRITONLOCK_DRIVER=535.104.05 TRITONLOCK_CUDA=12.2 TRITONLOCK_GPUS=12.0 \
  tl doctor --python "$PY" > "$OUT/doctor-r535-rtx5090.txt" 2>&1
"$PY" - "$OUT" <<'EOF'
import json, sys
out = sys.argv[1]
for name in ("resolve.json", "resolve-r535.json", "resolve-r535-rtx5090.json"):
    try:
        t = json.load(open(f"{out}/{name}"))["targets"][0]
    except Exception as e:  # noqa: BLE001 - a report, not a test
        print(f"{name}: unreadable ({e})"); continue
    print(f"{name}: ok={t['ok']} torch={t['torch']} backend={t['backend']} triton={t['triton']}"
          + ("" if t["ok"] else " | " + t["conflict"].splitlines()[1].strip()[:160]))
EOF
echo "driver findings on the real host: $(grep -c 'driver-too-' "$OUT/doctor.txt")"
grep -h "does not know" "$OUT/doctor-r535-rtx5090.txt" | head -1 | sed 's/^/pretend R535 + RTX 5090: /'
