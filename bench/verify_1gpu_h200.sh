#!/usr/bin/env bash
# Issue 44 on ONE H200 (<= 3 minutes), what one GPU can show: the all-reduce skipped with its reason (no process
# spawned: the runner's phases have no "NCCL all-reduce start"), so the set-up overlap costs one GPU nothing — the warm
# runner timed over 3 rounds to compare with earlier single-GPU runs; NVML's link read on an H200 with no peer
# (gpu_health: nvlink_links/nvlink_active, no peers) and nvidia-smi's topology. Same driver as the 2-GPU script.
#   OUT=$OUT bash bench/verify_1gpu_h200.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/verify-1gpu}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=${PYTHON:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || command -v python3)}
{ nvidia-smi; nvidia-smi topo -m; nvidia-smi topo -p2p r; nvidia-smi nvlink -s; } > "$OUT/nvidia-smi.txt" 2>&1
"$PY" -c 'import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__, torch.cuda.device_count())' \
  > "$OUT/versions.txt" 2>&1
git log -1 --format='%H %s' > "$OUT/commit.txt" 2>/dev/null
timeout 170 "$PY" bench/verify_2gpu.py "$OUT" "${ROUNDS:-3}" 2> "$OUT/bench.err" | tee "$OUT/summary.txt"
"$PY" - "$OUT/all-1.json" <<'PYEOF' | tee -a "$OUT/summary.txt"
import json, sys
doc = json.load(open(sys.argv[1]))
print("notes:", [n for n in doc["notes"] if "all-reduce" in n])
print("phases:", next(n for n in doc["notes"] if n.startswith("time: ")))
for d in doc.get("gpu_health", {}).get("devices", []):
    print("NVML:", {k: d.get(k) for k in ("name", "nvlink_links", "nvlink_active", "peers")})
PYEOF
