#!/usr/bin/env bash
# Issue 26, first GPU call: the yardstick sweep (bench/kernel_sweep.py), what NVML answers through the runner's
# gpuhealth (idle, while verify runs, with another process keeping the GPU busy), the driver started beside
# `import torch` (bench/cuda_preinit.py), and the runner with the GPUs hidden. On the GPU machine, from the
# repository root: OUT=/tmp/probe bash bench/h200_issue26_probe.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/probe26}
mkdir -p "$OUT"
W=$(mktemp -d)
PY=python3
R=$PWD/tritonlock/verify/runner
A='{"backend": "cu130", "triton": "3.6.0", "expect_gpu": EXPECT, "ptxas_floors": {"12": "525.60.13", "13": "580.65.06"}}'
export PYTHONUNBUFFERED=1
{ date -u; nvidia-smi; nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,PIDS,ECC,TEMPERATURE | head -200
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks.max.sm,clocks.default_applications.graphics,clocks.applications.graphics,power.limit,power.default_limit,mig.mode.current --format=csv
  $PY -c 'import torch, triton, sys; print(sys.version, torch.__version__, triton.__version__)'; nproc; } > "$OUT/env.txt" 2>&1
echo "== sweep"; t0=$(date +%s.%N)
$PY bench/kernel_sweep.py "$W/sweep" > "$W/sweep.txt" 2> "$W/sweep.err"; echo "sweep rc $? $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s"
sed -n '/^tf32$/,$p' "$W/sweep.txt"
echo "== preinit"; $PY bench/cuda_preinit.py 4 > "$W/preinit.txt" 2>&1; head -2 "$W/preinit.txt"
run() { # NAME EXPECT [env...]
  local name=$1 exp=$2; shift 2
  local t0=$(date +%s.%N)
  env "$@" $PY -I "$R" --json-args "${A/EXPECT/$exp}" > "$W/$name.json" 2> "$W/$name.err"
  local rc=$?
  echo "$name rc $rc $(python3 -c "print(round($(date +%s.%N)-$t0,2))") s"
}
echo "== runner"
run cold true; run warm1 true; run warm2 true
$PY bench/gpu_busy.py "$W/busy.marker" > "$W/busy.log" 2>&1 &
BUSY=$!
while [ ! -e "$W/busy.marker" ] && kill -0 $BUSY 2>/dev/null; do sleep 0.2; done
nvidia-smi --query-gpu=clocks.sm,clocks_event_reasons.active,utilization.gpu,power.draw --format=csv > "$W/busy-smi.txt" 2>&1
run busy true
kill $BUSY; wait $BUSY 2>/dev/null
run hidden-expect true CUDA_VISIBLE_DEVICES=
run hidden-auto null CUDA_VISIBLE_DEVICES=
run warm3 true
$PY - "$W" <<'PY'
import json, sys, os
w = sys.argv[1]
for n in ("warm1", "warm2", "busy", "warm3", "hidden-expect", "hidden-auto"):
    try:
        d = json.load(open(f"{w}/{n}.json"))
    except Exception as e:
        print(n, "no report", e); continue
    print(f"-- {n}: ok {d['ok']} total {d['total_seconds']:.2f}")
    print("   ", [x for x in d["notes"] if x.startswith("time:")])
    print("   ", [(k["kernel"], k["dtype"], round(k["value"]) if k["value"] else None, round(k["ratio"], 2) if k["ratio"] else None) for k in d["kernels"] if k.get("metric")])
    for c in d["checks"]:
        if not c["ok"]: print("    FAIL", c["name"], c["detail"][:300])
    gh = d.get("gpu_health")
    if gh:
        for dev in gh.get("devices", []):
            dur = dev.get("during", {})
            print("    nvml:", {k: dev.get(k) for k in ("name", "power_limit_w", "power_default_w", "sm_clock_max", "sm_clock_default", "sm_clock_app", "pcie_gen_max", "pcie_width_max", "mig", "utilization_before", "ecc_uncorrected_volatile", "cuda_index")})
            print("    before:", dev.get("processes_before"), "after:", dev.get("processes_after"))
            print("    during:", dur)
        print("    own:", gh.get("own_pids"), gh.get("error"))
PY
tar -C "$W" -czf "$OUT/probe.tar.gz" .
echo "done"
