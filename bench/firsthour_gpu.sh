#!/usr/bin/env bash
# Issue #9 on the GPU machine: the first-hour paths a new user takes, with tritonlock in its own venv and the
# machine's preinstalled torch/triton (/opt/torch/.venv), no network. Each check prints PASS or FAIL in summary.txt.
#
# Needs .device-carry/h200-sync from `bash bench/h200_sync_prepare.sh` (run first where PyPI is reachable: it
# carries tritonlock's wheels and a project locked for the H200). Then on the GPU machine, from the repository root:
#   bash bench/firsthour_gpu.sh            # reports go to $OUT (default /tmp/firsthour-gpu)
#   IMAGE_PY=/opt/torch/.venv/bin/python3  # the preinstalled environment (default)
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
C=$REPO/.device-carry/h200-sync
OUT=${OUT:-/tmp/firsthour-gpu}
W=${WORK:-/tmp/firsthour-gpu-work}
IMAGE_PY=${IMAGE_PY:-/opt/torch/.venv/bin/python3}
mkdir -p "$OUT"
rm -rf "$W"
mkdir -p "$W"
[ -d "$C/wheels" ] || { echo "no $C: run bench/h200_sync_prepare.sh first" >&2; exit 2; }
export UV_PYTHON_DOWNLOADS=never UV_OFFLINE=1 PIP_NO_INDEX=1
umask 022
: > "$OUT/summary.txt"
check() {  # check NAME CONDITION-EXIT-CODE: one summary line
  if [ "$2" -eq 0 ]; then echo "PASS $1" | tee -a "$OUT/summary.txt"; else echo "FAIL $1" | tee -a "$OUT/summary.txt"; fi
}

# tritonlock in its own venv, as a user installs it (pipx style)
python3 -m venv "$W/tl"
"$W/tl/bin/python" -m pip install -q --no-index --find-links "$C/wheels" tritonlock > "$OUT/install.txt" 2>&1
TL="$W/tl/bin/tritonlock"
"$TL" --version > "$OUT/version.txt" 2>&1
check "tritonlock installs offline into its own venv" $?

# 1. start-up budgets (#9: --help <= 100 ms, show and resolve --dry-run <= 150 ms): median of 9, wall and CPU
cp -r "$C/proj" "$W/proj"
mkdir -p "$W/proj/src/deeper"
"$W/tl/bin/python" - "$TL" "$W/proj" > "$OUT/startup.txt" 2>&1 <<'PYEOF'
import resource, statistics, subprocess, sys, time
tl, proj = sys.argv[1], sys.argv[2]
budget = {"--help": 100, "show": 150, "resolve --dry-run": 150}
bad = 0
for sub, ms in budget.items():
    walls, cpus = [], []
    for _ in range(9):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN); t0 = time.perf_counter()
        subprocess.run([tl, *sub.split()], cwd=proj, capture_output=True)
        walls.append(time.perf_counter() - t0); r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    w, c = statistics.median(walls) * 1000, statistics.median(cpus) * 1000
    ok = w <= ms
    bad += not ok
    print(f"{sub:20} wall {w:6.1f} ms  cpu {c:6.1f} ms  budget {ms} ms  {'ok' if ok else 'OVER'}")
sys.exit(1 if bad else 0)
PYEOF
check "start-up within budget (startup.txt)" $?

# 2. init on a machine with no network: says neither index answers, writes a valid intent whose commented
#    [[targets]] table is this machine as `host --save` writes it
mkdir -p "$W/new"
( cd "$W/new" && "$TL" init ) > "$OUT/init.txt" 2>&1
grep -q "neither PyTorch's index" "$OUT/init.txt"
check "init without network says neither index answered" $?
"$TL" host --save "$W/host.toml" > "$OUT/host-save.txt" 2>&1
"$W/tl/bin/python" - "$W/new/triton-env.toml" "$W/host.toml" <<'PYEOF' >> "$OUT/init.txt" 2>&1
import sys, tomllib
text = open(sys.argv[1]).read()
block = text.split("This machine, as `tritonlock host --save` writes it:\n", 1)[1]
mine = tomllib.loads("\n".join(l.removeprefix("# ") for l in block.splitlines()))
saved = tomllib.loads(open(sys.argv[2]).read())
print("init's table:", mine, "\nhost --save:", saved)
sys.exit(0 if mine == saved and saved["targets"][0]["driver"] else 1)
PYEOF
check "init's commented target is host --save's, with this driver" $?
( cd "$W/new" && "$TL" resolve --dry-run ) > "$OUT/dry-run.txt" 2>&1
grep -q "torch .* (cu1" "$OUT/dry-run.txt"
check "resolve --dry-run of init's intent picks a CUDA build for this GPU" $?

# 3. from a subdirectory: the project is found; same mistake, same exit code
( cd "$W/proj/src/deeper" && "$TL" show --target h200 ) > "$OUT/subdir-show.txt" 2>&1
check "show from a subdirectory finds the project" $?
: > "$OUT/unknown-target.txt"
bad=0
for cmd in show "export --format requirements" "sync --dry-run" "verify --python $IMAGE_PY"; do
  ( cd "$W/proj/src" && "$TL" $cmd --target nope ) >> "$OUT/unknown-target.txt" 2>&1
  rc=$?
  echo "$cmd: exit $rc" >> "$OUT/unknown-target.txt"
  [ $rc -eq 2 ] || bad=1
done
check "an unknown --target is exit 2 in show, export, sync, verify" $bad
( cd "$W/proj" && "$TL" show | head -1 > /dev/null; echo "exit ${PIPESTATUS[0]}" ) > "$OUT/pipe.txt" 2>&1
! grep -q "error" "$OUT/pipe.txt"
check "show | head stops quietly" $?

# 4. export: the Dockerfile for the H200 target needs no tritonlock from an index; its runner works on the GPU
( cd "$W/proj" && "$TL" export --format dockerfile --target h200 -o Dockerfile ) > "$OUT/export.txt" 2>&1
cp "$W/proj/Dockerfile" "$OUT/Dockerfile" 2>/dev/null
grep -q "ARG BASE_IMAGE=nvidia/cuda:13.0.2-base-ubuntu" "$W/proj/Dockerfile" \
  && ! grep -q "tritonlock==" "$W/proj/Dockerfile" && [ -f "$W/proj/tritonlock-image/verify.py" ]
check "exported Dockerfile: nvidia/cuda 13.0.2, no tritonlock install, runner in the build context" $?
stat -c '%a %n' "$W/proj/Dockerfile" "$W/proj/tritonlock-image/"* "$W/new/triton-env.toml" > "$OUT/modes.txt"
! grep -qv "^644 " "$OUT/modes.txt"
check "written files are 0644 under umask 022 (modes.txt)" $?
CMD=$("$W/tl/bin/python" -c "import json,re,sys; print(' '.join(json.loads(re.search(r'^CMD (.+)$', open(sys.argv[1]).read(), re.M)[1])[2:]))" "$W/proj/Dockerfile")
"$IMAGE_PY" "$W/proj/tritonlock-image/verify.py" $CMD > "$OUT/image-runner.json" 2> "$OUT/image-runner.stderr"
check "the image's command (runner $CMD) passes with the preinstalled torch on the GPU" $?

# 5. verify and doctor agree on the preinstalled environment
"$TL" verify --python "$IMAGE_PY" -p "$W/proj" > "$OUT/verify.txt" 2>&1
vrc=$?
"$TL" doctor --python "$IMAGE_PY" -p "$W/proj" > "$OUT/doctor.txt" 2>&1
drc=$?
echo "verify exit $vrc, doctor exit $drc" >> "$OUT/doctor.txt"
[ $vrc -eq 0 ] && [ $drc -eq 0 ] && ! grep -q "triton-interpreter-no-numpy" "$OUT/doctor.txt"
check "verify passes on the GPU and doctor finds no error (no numpy finding with a GPU)" $?
"$TL" verify --python "$IMAGE_PY" -p "$W/proj" --interpret --quick > "$OUT/verify-interpret.txt" 2>&1
irc=$?
if "$IMAGE_PY" -c "import numpy" 2>/dev/null; then
  [ $irc -eq 0 ]
else  # the interpreter needs numpy: the failure must name it, and no kernel may be claimed
  grep -q "numpy (Triton interpreter)" "$OUT/verify-interpret.txt" && grep -q "was asked for (--interpret)" \
    "$OUT/verify-interpret.txt" && ! grep -q "ran the kernels" "$OUT/verify-interpret.txt"
fi
check "verify --interpret passes, or names numpy as the cause" $?

echo
cat "$OUT/summary.txt"
! grep -q "^FAIL" "$OUT/summary.txt"
