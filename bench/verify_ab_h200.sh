#!/usr/bin/env bash
# Two builds of tritonlock's verify side by side on one GPU machine (issue 41): A and B, each in a venv of its own
# (carried wheels, no network), each verifying its own copy of one project (bench/h200_native_prepare.sh's proj-torch:
# torch alone, synced onto the image's stack with --system-site-packages), one filling verify each, then ROUNDS interleaved
# rounds of a bare `import torch` + CUDA init, `verify` by A and by B (their order alternating). Prints each round and
# the medians; every report's "time:" note goes to $OUT/ab-phases.txt.
#   A=path/to/a.whl B=path/to/b.whl OUT=$OUT bash bench/verify_ab_h200.sh [ROUNDS]
# HOUSE: the folder of the locked wheels the image lacks (default $C/house). (device tool: carry
# .device-carry/h200-native/wheels, .device-carry/h200-native/proj-torch, that folder and the two wheels)
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
C=$REPO/.device-carry/h200-native
OUT=${OUT:-/tmp/verify-ab}
ROUNDS=${1:-7}
PROJ=${PROJ:-proj-torch}
. bench/verify_two_builds.sh
PY=$W/projA/.venv/bin/python
python3 - "$W" "$ROUNDS" "$PY" "$OUT" <<'PYEOF'
import json, statistics, subprocess, sys, time
w, rounds, py, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
bare = "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"
def timed(cmd):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - t, p
rows = {"bare": [], "A": [], "B": []}
phases = open(f"{out}/ab-phases.txt", "w")
for i in range(rounds):
    order = ("A", "B") if i % 2 == 0 else ("B", "A")
    t, _ = timed([py, "-c", bare]); rows["bare"].append(t)
    line = [f"round {i}: bare {t:.2f}"]
    for side in order:
        t0 = time.perf_counter()
        p = subprocess.run([f"{w}/{side}/bin/tritonlock", "verify", "--json"], capture_output=True, text=True,
                           cwd=f"{w}/proj{side}")
        t = time.perf_counter() - t0
        rows[side].append(t)
        try:
            doc = json.loads(p.stdout)
            note = next((n for n in doc.get("notes", []) if n.startswith("time: ")), "")
            phases.write(f"round {i} {side} rc={p.returncode} ok={doc.get('ok')} total={doc.get('total_seconds'):.2f} {note}\n")
        except ValueError:
            phases.write(f"round {i} {side} rc={p.returncode} no JSON: {p.stderr[-500:]}\n")
        line.append(f"{side} {t:.2f} (rc {p.returncode})")
    print(", ".join(line), flush=True)
med = {k: statistics.median(v) for k, v in rows.items()}
print(f"median: bare import torch + CUDA init {med['bare']:.2f} s; A {med['A']:.2f} s ({med['A']/med['bare']:.2f}x); "
      f"B {med['B']:.2f} s ({med['B']/med['bare']:.2f}x); goal <= 1.25x")
print("per-round ratios A:", ", ".join(f"{a/b:.2f}" for a, b in zip(rows["A"], rows["bare"])))
print("per-round ratios B:", ", ".join(f"{a/b:.2f}" for a, b in zip(rows["B"], rows["bare"])))
PYEOF
rm -rf "$W"
