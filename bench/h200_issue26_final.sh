#!/usr/bin/env bash
# Issue 26 on the H200, tritonlock in its own venv (carried wheels, no network), the image's torch 2.11.0+cu130 and
# triton 3.6.0 verified through `--python`, a project locked for the H200 (bench/h200/h200.toml):
#   1. a first verify (the runner's new kernels compile into the image venv's cache)
#   2. warm verify and --quick side by side with a bare import torch + CUDA init (bench/verify_side_by_side.py)
#   3. the GPU slowed on purpose: another process keeping it busy (bench/gpu_busy.py); verify, then --strict-speed
#   4. the GPUs hidden (CUDA_VISIBLE_DEVICES=''): how fast verify fails, and what it says
#   5. `verify --record` from two healthy "nodes" and the busy one, then `report merge` of their reports
# GPU settings (clocks, power limit) are read, never changed. Needs $CARRY/wheels and $CARRY/proj (issue 26's
# notes); OUT=/tmp/x bash bench/h200_issue26_final.sh
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
C=${CARRY:-$REPO/carry}
OUT=${OUT:-/tmp/i26-final}
W=$(mktemp -d)
ROUNDS=${ROUNDS:-5}
export PYTHONUNBUFFERED=1 UV_OFFLINE=1 PIP_NO_INDEX=1
mkdir -p "$OUT" "$W/res"
R=$W/res
IMG=$(python3 -c 'import sys; print(sys.executable)')
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.applications.graphics,power.limit,power.default_limit,mig.mode.current --format=csv; "$IMG" -c 'import torch, triton; print(torch.__version__, triton.__version__)'; } > "$R/env.txt" 2>&1
python3 -m venv "$W/tl" && "$W/tl/bin/pip" install -q --no-index --find-links "$C/wheels" tritonlock > "$R/install.txt" 2>&1
TL=$W/tl/bin/tritonlock
"$TL" --version >> "$R/install.txt" 2>&1 || { echo "install failed"; cat "$R/install.txt"; exit 1; }
cp -r "$C/proj" "$W/proj"
cd "$W/proj"
V=("$TL" verify --python "$IMG")
t() { local t0=$(date +%s.%N); "$@"; local rc=$?; echo "rc $rc, $(python3 -c "print(round($(date +%s.%N)-$t0,2))") s"; }
echo "== first"; t "${V[@]}" --json > "$R/first.json" 2> "$R/first.err"
echo "== side by side"; python3 "$REPO/bench/verify_side_by_side.py" "$R/sbs" "$ROUNDS" "$IMG" -- "${V[@]}" | tail -9
"${V[@]}" > "$R/healthy.txt" 2>&1; echo "healthy text rc $?"
echo "== busy"
python3 "$REPO/bench/gpu_busy.py" "$W/busy.marker" > "$R/busy-proc.log" 2>&1 &
BUSY=$!
while [ ! -e "$W/busy.marker" ] && kill -0 $BUSY 2>/dev/null; do sleep 0.2; done
"${V[@]}" > "$R/busy.txt" 2>&1; echo "busy text rc $?"
"${V[@]}" --strict-speed > "$R/busy-strict.txt" 2>&1; echo "busy --strict-speed rc $?"
mkdir -p "$R/reports"
TRITONLOCK_NODE=h200-busy "${V[@]}" --json --record > "$R/reports/h200-busy.json" 2> "$R/reports/h200-busy.verify.log"; echo $? > "$R/reports/h200-busy.verify.rc"
kill $BUSY; wait $BUSY 2>/dev/null
echo "== hidden"; CUDA_VISIBLE_DEVICES= t "${V[@]}" > "$R/hidden.txt" 2>&1; tail -1 "$R/hidden.txt"
CUDA_VISIBLE_DEVICES= t "${V[@]}" --json > "$R/hidden.json" 2>&1
echo "== records"
for n in h200-a h200-b; do
  TRITONLOCK_NODE=$n "${V[@]}" --json --record > "$R/reports/$n.json" 2> "$R/reports/$n.verify.log"; echo $? > "$R/reports/$n.verify.rc"
done
for n in h200-a h200-b h200-busy; do echo x > "$R/reports/$n.started"; echo 0 > "$R/reports/$n.sync.rc"; done
"$TL" report merge "$R/reports" > "$R/merge.txt" 2>&1; echo "merge rc $?"
"$TL" report merge "$R/reports" --json > "$R/merge.json" 2>&1
cp triton-env.verified.toml "$R/" 2>/dev/null
nvidia-smi --query-gpu=clocks.applications.graphics,power.limit,mig.mode.current --format=csv > "$R/env-after.txt" 2>&1
echo "== busy (text)"; sed -n '/SLOW\|FAST\|likely cause\|speed:/p' "$R/busy.txt" | head -30
echo "== healthy (text)"; sed -n '/kernel \|speed:\|SLOW\|FAST/p' "$R/healthy.txt"; grep -c "in band" "$R/healthy.txt"
echo "== hidden (text)"; grep -i "FAIL\|fix:" "$R/hidden.txt" | head -5
echo "== merge"; cat "$R/merge.txt"
tar -C "$R" -czf "$OUT/final.tar.gz" .
echo done
