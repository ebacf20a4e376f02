#!/usr/bin/env bash
# Issue 42's verbs on the H200 as a user runs them (no network on the GPU machine): `sync` twice (the first verifies on
# the GPUs, the second says "verified at … with nothing changed since" and runs nothing), `run`, `tree`, `add` and
# `remove` offline, and the no-op's CPU time beside uv's own on a CUDA torch venv.
#
# Needs .device-carry/h200-sync from `bash bench/h200_sync_prepare.sh` (run first on this branch, where PyPI is
# reachable: it builds this checkout's wheel); then on the GPU machine, from the repository root:
#   bash bench/h200_verbs.sh            # reports go to $OUT (default /tmp/h200-verbs)
#
# Steps, each with its output in $OUT:
#   first-sync.txt    `sync --system-site-packages --find-links house`: installs, then verifies on the GPUs
#   second-sync.txt   plain `sync`: must say "verified at" and run no kernel (no RESULT line), in well under a second
#   run.txt           `run -- python -c "import torch; print(torch.cuda.device_count())"`: the command's own output
#   tree.txt          `tree --invert triton`: who pulls triton in, from the lock alone
#   variable.txt      plain `sync` with TRITON_PRINT_AUTOTUNING=1 set: a variable Triton reads changed, verify runs
#   noop-cpu.txt      CPU ms (user + sys) of 15 no-op `sync --no-verify`, plain `sync` (verified) and `uv pip install
#                     --offline -r pins` of the same venv, interleaved; median each
#   summary.txt       one line per step: exit code, seconds, and whether the check held
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
C=$REPO/.device-carry/h200-sync
OUT=${OUT:-/tmp/h200-verbs}
W=${WORK:-/tmp/h200-verbs-work}
mkdir -p "$OUT"
rm -rf "$W"
mkdir -p "$W"
[ -d "$C/wheels" ] || { echo "no $C: run bench/h200_sync_prepare.sh first" >&2; exit 2; }
export UV_PYTHON_DOWNLOADS=never UV_OFFLINE=1 PIP_NO_INDEX=1

summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
: > "$OUT/summary.txt"
python3 -m venv "$W/tl"
"$W/tl/bin/python" -m pip install -q --no-index --find-links "$C/wheels" tritonlock > "$OUT/install.txt" 2>&1
TL="$W/tl/bin/tritonlock"
UVB=$(command -v uv || echo "$W/tl/bin/uv")
"$TL" --version >> "$OUT/install.txt" 2>&1 || { summary "install FAILED"; exit 1; }
cp -r "$C/proj" "$W/proj"
cd "$W/proj"

step() {  # step NAME CMD...: run, keep output and exit code, time it
  local name=$1; shift
  local t0=$(date +%s.%N)
  "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  local dt=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.2f}')")
  echo "exit $rc, $dt s" >> "$OUT/$name.txt"
  echo "$rc $dt"
}

read rc dt < <(step first-sync "$TL" sync --system-site-packages --find-links "$C/house")
ok=$(grep -q "RESULT: OK" "$OUT/first-sync.txt" && echo yes || echo NO)
summary "first sync (verify on the GPUs): exit $rc, $dt s; RESULT: OK: $ok"
read rc dt < <(step second-sync "$TL" sync)
held=$(grep -q "with nothing changed since" "$OUT/second-sync.txt" && ! grep -q "RESULT" "$OUT/second-sync.txt" \
       && echo yes || echo NO)
summary "second sync: exit $rc, $dt s; 'verified at', no kernel run: $held"
read rc dt < <(step run "$TL" run -- python -c "import torch; print(torch.cuda.device_count())")
summary "run: exit $rc, $dt s; output: $(head -1 "$OUT/run.txt")"
read rc dt < <(step tree "$TL" tree --invert triton)
summary "tree --invert triton: exit $rc, $dt s"
read rc dt < <(step variable env TRITON_PRINT_AUTOTUNING=1 "$TL" sync)
ran=$(grep -q "RESULT" "$OUT/variable.txt" && echo yes || echo NO)
summary "sync with a Triton variable set: exit $rc, $dt s; verify ran: $ran"
"$TL" sync > /dev/null 2>&1  # (record again for the unchanged environment)

"$UVB" pip freeze --python .venv/bin/python > "$W/pins.txt" 2>/dev/null
python3 - "$TL" "$UVB" "$W/pins.txt" > "$OUT/noop-cpu.txt" 2>&1 <<'PYEOF'
import os, resource, statistics, subprocess, sys
tl, uv, pins = sys.argv[1:4]
rows = {"tritonlock sync --no-verify": [tl, "sync", "--no-verify"], "tritonlock sync (verified)": [tl, "sync"],
        "uv pip install --offline -r pins": [uv, "pip", "install", "--offline", "--no-deps", "--python",
                                             ".venv/bin/python", "-r", pins]}
cpu = {k: [] for k in rows}
for _ in range(15):
    for k, args in rows.items():
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run(args, capture_output=True, text=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert r.returncode == 0, (k, r.stdout, r.stderr)
        cpu[k].append((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000)
files = sum(len(f) for _, _, f in os.walk(".venv"))
uvm = statistics.median(cpu["uv pip install --offline -r pins"])
print(f"{files} files in .venv")
for k, v in cpu.items():
    print(f"{k}: median {statistics.median(v):.1f} ms CPU ({statistics.median(v) / uvm:.2f}x uv)")
PYEOF
summary "no-op CPU: $(tr '\n' ';' < "$OUT/noop-cpu.txt")"
