#!/usr/bin/env bash
# Warm verifies again and again, two builds interleaved, each on its own copy of one project (as verify_ab_h200.sh
# sets them up): every report that is not ok is kept whole ($OUT/fail-<side>-<n>.json), and the count of failures
# per build is printed — a false failure that comes once in ten runs is found here, not in a timing bench.
#   A=a.whl B=b.whl OUT=$OUT HOUSE=... [VERIFY_ARGS=--quick] bash bench/verify_repeat_h200.sh [RUNS]
set -uo pipefail
cd "$(dirname "$0")/.."
C=$PWD/.device-carry/h200-native
OUT=${OUT:-/tmp/verify-repeat}
RUNS=${1:-20}
PROJ=${PROJ:-proj-torch}
. bench/verify_two_builds.sh
declare -A bad=([A]=0 [B]=0)
for i in $(seq 1 "$RUNS"); do
  for side in A B; do
    (cd "$W/proj$side" && timeout 120 "$W/$side/bin/tritonlock" verify ${VERIFY_ARGS:-} --json > "$W/r.json" 2> "$W/r.err")
    rc=$?
    if [ $rc -ne 0 ]; then
      bad[$side]=$((bad[$side] + 1)); cp "$W/r.json" "$OUT/fail-$side-$i.json"; cp "$W/r.err" "$OUT/fail-$side-$i.err"
      python3 -c "import json,sys; d=json.load(open(sys.argv[1])); [print('$side run $i:', json.dumps(c)[:700]) for c in d.get('checks', []) + d.get('kernels', []) if not c.get('ok', True)]; print([n for n in d.get('notes', []) if 'seed' in n])" "$W/r.json" 2>/dev/null || head -c 600 "$W/r.json"
    fi
  done
done
echo "runs per build: $RUNS; not ok: A ${bad[A]}, B ${bad[B]}"
rm -rf "$W"
