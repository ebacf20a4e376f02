#!/usr/bin/env bash
# Issue 27's run on the GPU kind that is lent (one H200: the multi-GPU kinds were withheld all session). The same
# steps a two-GPU host runs, as far as one GPU allows: tritonlock from its own venv (carried wheels, no network), the
# project locked for bench/h200/h200.toml (torch 2.11 + torchvision, .device-carry/h200-native from
# bench/h200_native_prepare.sh), `sync --system-site-packages`, then
#   cold-verify / warm-N      verify --cold, then warm, beside a bare `import torch` + CUDA init in the same run
#   node-a / node-b           verify --record --json per "node" (CUDA_VISIBLE_DEVICES=0 for a), report merge of both
#   check-host                check --require-verified --host
#   slurm                     export --format slurm
#   hidden                    CUDA_VISIBLE_DEVICES=1 (a GPU this host has not): what verify says, and how fast
#   busy                      another process keeping GPU 0 busy: which GPU ran what, and what is blamed on which
# On one GPU the NCCL all-reduce does not run (verify says so); every other step is the two-GPU script's.
#   OUT=/tmp/x bash bench/h200_issue27.sh
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
C=$REPO/.device-carry/h200-native
OUT=${OUT:-/tmp/h200-issue27}
W=$(mktemp -d)
R=$W/res
mkdir -p "$OUT" "$R/reports"
export UV_PYTHON_DOWNLOADS=never UV_OFFLINE=1 PIP_NO_INDEX=1 PYTHONUNBUFFERED=1
summary() { echo "$*" | tee -a "$R/summary.txt"; }
step() {
  local name=$1; shift
  local t0=$(date +%s.%N)
  "$@" > "$R/$name.txt" 2>&1
  local rc=$?
  local dt=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.2f}')")
  echo "exit $rc, $dt s" >> "$R/$name.txt"
  echo "$rc $dt"
}
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,mig.mode.current --format=csv; } > "$R/env.txt" 2>&1
python3 -m venv "$W/tl" && "$W/tl/bin/pip" install -q --no-index --find-links "$C/wheels" tritonlock > "$R/install.txt" 2>&1
TL=$W/tl/bin/tritonlock
"$TL" --version >> "$R/install.txt" 2>&1 || { cat "$R/install.txt"; exit 1; }
cp -r "$C/proj" "$W/proj"
cd "$W/proj"
read rc dt < <(step sync "$TL" sync --system-site-packages --find-links "$C/house" --no-verify)
summary "sync --system-site-packages --no-verify: exit $rc, $dt s"
BARE='import time; t=time.perf_counter(); import torch; torch.zeros(1, device="cuda"); torch.cuda.synchronize(); print(round(time.perf_counter()-t, 2), "s")'
read rc dt < <(step cold-verify "$TL" verify --cold --json); summary "verify --cold: exit $rc, $dt s"
for i in 0 1 2; do
  read rc dt < <(step "warm-$i" "$TL" verify --json); summary "warm verify $i: exit $rc, $dt s"
  read rc dt < <(step "bare-$i" .venv/bin/python -c "$BARE"); summary "bare import torch + CUDA init $i: $(head -1 "$R/bare-$i.txt")"
done
node() {  # node NAME CUDA_VISIBLE_DEVICES
  date -u +%Y-%m-%dT%H:%M:%SZ > "$R/reports/$1.started"; echo 0 > "$R/reports/$1.sync.rc"
  CUDA_VISIBLE_DEVICES=$2 TRITONLOCK_NODE=$1 "$TL" verify --record --json > "$R/reports/$1.json" 2> "$R/reports/$1.verify.log"
  echo $? > "$R/reports/$1.verify.rc"; summary "node $1 (CUDA_VISIBLE_DEVICES=$2): verify --record exit $(cat "$R/reports/$1.verify.rc")"
}
node h200-a 0
node h200-b 0
read rc dt < <(step merge "$TL" report merge "$R/reports" --expect 2); summary "report merge --expect 2: exit $rc"
"$TL" report merge "$R/reports" --json > "$R/merge.json" 2>&1
read rc dt < <(step check-host "$TL" check --require-verified --host); summary "check --require-verified --host: exit $rc"
read rc dt < <(step slurm "$TL" export --format slurm); summary "export --format slurm: exit $rc ($(grep -c . "$R/slurm.txt") lines)"
read rc dt < <(step hidden env CUDA_VISIBLE_DEVICES=1 "$TL" verify); summary "CUDA_VISIBLE_DEVICES=1: verify exit $rc, $dt s"
grep -E 'GPU visible|fix:' "$R/hidden.txt" | head -3 >> "$R/summary.txt"
python3 "$REPO/bench/gpu_busy.py" "$W/busy.marker" > "$R/busy-proc.log" 2>&1 &
BUSY=$!
while [ ! -e "$W/busy.marker" ] && kill -0 $BUSY 2>/dev/null; do sleep 0.2; done
read rc dt < <(step busy "$TL" verify); summary "GPU 0 kept busy by pid $BUSY: verify exit $rc, $dt s"
kill $BUSY; wait $BUSY 2>/dev/null
grep -E 'SLOW|likely cause|speed:|GPU cuda' "$R/busy.txt" | head -8 >> "$R/summary.txt"
python3 - "$R" >> "$R/summary.txt" <<'EOF'
import json, sys, pathlib
r = pathlib.Path(sys.argv[1])
for name in ["cold-verify", "warm-0", "warm-1", "warm-2"]:
    doc = json.loads((r / f"{name}.txt").read_text().rsplit("\nexit", 1)[0])
    rows = [(k["kernel"], k["dtype"], k["device"], k["ok"], k.get("ratio") and round(k["ratio"], 3),
             (k.get("speed") or {}).get("verdict")) for k in doc["kernels"]]
    bad = [c["name"] for c in doc["checks"] if not c["ok"]]
    print(name, "ok" if doc["ok"] else "FAILED", "gpus", doc.get("gpus"), "failed checks", bad)
    print("  ", [x for x in rows if x[4]])
    print("  ", [n for n in doc.get("notes", []) if "all-reduce" in n or "NCCL" in n or n.startswith("time:")])
EOF
tar -C "$R" -czf "$OUT/issue27.tar.gz" .
cp "$R/summary.txt" "$OUT/"
cat "$R/summary.txt"
