#!/usr/bin/env bash
# Where a warm verify spends its time (issue 41), on the GPU machine: builds A and B set up as verify_ab_h200.sh does,
# then for each: ROUNDS interleaved warm `tritonlock verify --json` under bench/verify_timeline.py's sampler (every
# runner thread's Python stack each 2 ms), beside a bare `import torch` + CUDA init split into its parts.
#   A=a.whl B=b.whl OUT=$OUT HOUSE=... bash bench/verify_timeline_h200.sh [ROUNDS]
set -uo pipefail
cd "$(dirname "$0")/.."
C=$PWD/.device-carry/h200-native
OUT=${OUT:-/tmp/verify-timeline}
ROUNDS=${1:-3}
PROJ=${PROJ:-proj-torch}
. bench/verify_two_builds.sh
for side in A B; do
  site=$("$W/proj$side/.venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  python3 bench/verify_timeline.py install "$site" "$W/tl-$side"
  python3 bench/verify_timeline.py install "$("$W/$side/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")" "$W/tl-$side"
  # one untimed, unsampled verify first: whatever verify keys on the venv's files sees the sampler's two files now
  (cd "$W/proj$side" && "$W/$side/bin/tritonlock" verify --json > /dev/null 2>&1)
done
PY=$W/projA/.venv/bin/python
for i in $(seq 1 "$ROUNDS"); do
  python3 - "$PY" <<'PYEOF'
import subprocess, sys, time
code = """
import time; t0 = time.perf_counter(); import torch; t1 = time.perf_counter()
torch.zeros(1, device='cuda'); torch.cuda.synchronize(); t2 = time.perf_counter()
print(f'bare: import torch {t1 - t0:.2f} s, CUDA init {t2 - t1:.2f} s', end='')"""
t = time.perf_counter()
p = subprocess.run([sys.argv[1], "-c", code], capture_output=True, text=True)
print(p.stdout.strip() or p.stderr[-300:], f"(wall, with interpreter start and exit, {time.perf_counter() - t:.2f} s)")
PYEOF
  for side in A B; do
    rm -rf "$W/tl-$side"; mkdir -p "$W/tl-$side"
    t0=$(date +%s.%N)
    (cd "$W/proj$side" && TL_TIMELINE_DIR=$W/tl-$side "$W/$side/bin/tritonlock" verify --json > "$W/r.json" 2> "$W/r.err")
    rc=$?; t1=$(date +%s.%N)
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('$side round $i rc $rc wall', round($t1-$t0, 2), 'total', round(d['total_seconds'], 2), [n for n in d['notes'] if n.startswith('time: ')])" "$W/r.json"
    (cd "$W/tl-$side" && cat *.txt > "${TLOUT:-$OUT}/timeline-$side-$i.txt")
  done
done
rm -rf "$W"
