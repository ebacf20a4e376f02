#!/usr/bin/env bash
# Issue 22 on the H200 (and issue 23's shadowing module), as a user runs it: tritonlock in its OWN venv (carried
# wheels, no network), a project locked elsewhere for bench/h200/h200.toml with torch 2.11 and torchvision (native
# code linked to one torch), synced onto the image's preinstalled stack (--system-site-packages).
#
# Needs .device-carry/h200-native from `bash bench/h200_native_prepare.sh` (where PyPI is reachable); on the GPU
# machine, from the repository root:  OUT=/tmp/x bash bench/h200_native.sh
#
#   first-sync       sync --system-site-packages --find-links house; its verify imports torchvision on the GPU
#   warm-N           warm verify of that venv: this tritonlock (imports) and issue 26's (no imports), alternated
#   bare-import      python -c "import torch, torchvision; nms on cuda" alone (the slowest import)
#   stray-*          torchvision 0.28.0 (PyPI's build for torch 2.13) put in by hand: the issue's repro, verify,
#                    doctor, then sync (must put 0.26.0 back) and verify again
#   shadow-*         a triton.py dropped into site-packages: verify, doctor, sync (issue 23)
#   percuda-*        torch-memory-saver 0.0.10 (one hook build per CUDA major) put in by hand: verify, doctor
#   summary.txt      one line per step
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
C=$REPO/.device-carry/h200-native
OUT=${OUT:-/tmp/h200-native}
W=$(mktemp -d)
R=$W/res
mkdir -p "$OUT" "$R"
export UV_PYTHON_DOWNLOADS=never UV_OFFLINE=1 PIP_NO_INDEX=1 PYTHONUNBUFFERED=1
summary() { echo "$*" | tee -a "$R/summary.txt"; }
step() {  # step NAME CMD...: output to NAME.txt, exit code and seconds on stdout
  local name=$1; shift
  local t0=$(date +%s.%N)
  "$@" > "$R/$name.txt" 2>&1
  local rc=$?
  local dt=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.2f}')")
  echo "exit $rc, $dt s" >> "$R/$name.txt"
  echo "$rc $dt"
}
{ date -u; nvidia-smi --query-gpu=name,driver_version,mig.mode.current --format=csv
  python3 -c 'import sys, torch, triton; print(sys.prefix, torch.__version__, triton.__version__)'; } > "$R/env.txt" 2>&1

python3 -m venv "$W/tl" && "$W/tl/bin/pip" install -q --no-index --find-links "$C/wheels" tritonlock > "$R/install.txt" 2>&1
python3 -m venv "$W/tl26" && "$W/tl26/bin/pip" install -q --no-index --find-links "$C/wheels" "$C"/base/tritonlock-*.whl \
  >> "$R/install.txt" 2>&1
TL=$W/tl/bin/tritonlock
TL26=$W/tl26/bin/tritonlock
"$TL" --version >> "$R/install.txt" 2>&1 || { cat "$R/install.txt"; exit 1; }
cp -r "$C/proj" "$W/proj"
cd "$W/proj"

read rc dt < <(step first-sync "$TL" sync --system-site-packages --find-links "$C/house")
summary "first sync --system-site-packages (then verify, imports on the GPU): exit $rc, $dt s"
grep -E 'torchvision|FAIL|RESULT|speed:|note: imports' "$R/first-sync.txt" | head -12 >> "$R/summary.txt"
SITE=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
read rc dt < <(step healthy-doctor "$TL" doctor); summary "healthy venv: doctor: exit $rc, $dt s"
grep -E '^(ERROR|WARNING)' "$R/healthy-doctor.txt" | head -5 >> "$R/summary.txt"

NMS='import time; t=time.perf_counter(); import torch, torchvision; b=torch.rand(8,4,device="cuda"); b[:,2:]+=b[:,:2]; print(torchvision.__version__, torchvision.ops.nms(b, torch.rand(8,device="cuda"), 0.5).tolist(), round(time.perf_counter()-t,2), "s")'
for i in 0 1 2; do
  read rc dt < <(step "warm-new-$i" "$TL" verify --json); summary "warm verify (this tritonlock, imports) $i: exit $rc, $dt s"
  if [ -x "$TL26" ]; then  # (where issue 26's wheel is carried, in base/)
    read rc dt < <(step "warm-26-$i" "$TL26" verify --json); summary "warm verify (issue 26, no imports) $i: exit $rc, $dt s"
  fi
  read rc dt < <(step "bare-import-$i" .venv/bin/python -c "$NMS"); summary "bare import torch, torchvision + nms on cuda $i: exit $rc, $dt s"
done
python3 - "$R" >> "$R/summary.txt" <<'EOF'
import json, sys, pathlib
r = pathlib.Path(sys.argv[1])
for f in sorted(r.glob("warm-new-*.txt")):
    doc = json.loads(f.read_text().rsplit("\nexit", 1)[0])
    print(f.name, doc.get("ok"), [(c["name"], c["ok"]) for c in doc["checks"] if c["name"].startswith(("import ", "GPU code"))])
    print("  speed", [(k["kernel"], k["dtype"], k.get("ratio") and round(k["ratio"], 3), (k.get("speed") or {}).get("verdict"))
                      for k in doc["kernels"] if k.get("ratio")])
    print("  notes", [n for n in doc.get("notes", []) if n.startswith("imports")])
EOF

# the stray build: PyPI's torchvision 0.28.0 (for torch 2.13) over the locked 0.26.0, by hand (where carried)
if ls "$C"/stray/*.whl > /dev/null 2>&1; then
  uv pip install -q --offline --no-deps --reinstall --python .venv/bin/python "$C"/stray/torchvision-*.whl > "$R/stray-install.txt" 2>&1
  read rc dt < <(step stray-repro .venv/bin/python -c "$NMS"); summary "stray: the issue's repro (nms): exit $rc"
  read rc dt < <(step stray-verify "$TL" verify); summary "stray: verify: exit $rc, $dt s"
  grep -E 'FAIL|fix:|RESULT' "$R/stray-verify.txt" | head -8 >> "$R/summary.txt"
  read rc dt < <(step stray-doctor "$TL" doctor); summary "stray: doctor: exit $rc, $dt s"
  grep -iE 'torchvision' "$R/stray-doctor.txt" | head -6 >> "$R/summary.txt"
  read rc dt < <(step stray-sync "$TL" sync --no-verify --find-links "$C/house"); summary "stray: sync --no-verify: exit $rc, $dt s"
  grep -iE 'torchvision|matches' "$R/stray-sync.txt" | head -4 >> "$R/summary.txt"
  read rc dt < <(step stray-verify-after "$TL" verify --quick); summary "stray: verify --quick after sync: exit $rc, $dt s"
  grep -E 'FAIL|RESULT' "$R/stray-verify-after.txt" | head -4 >> "$R/summary.txt"
  .venv/bin/python -c 'import torchvision; print("torchvision now", torchvision.__version__)' >> "$R/summary.txt" 2>&1
fi

# issue 23: a stray module that shadows a locked import name
printf 'raise ImportError("a stray triton.py")\n' > "$SITE/triton.py"
read rc dt < <(step shadow-verify "$TL" verify --quick); summary "shadow triton.py: verify --quick: exit $rc, $dt s"
read rc dt < <(step shadow-doctor "$TL" doctor); summary "shadow triton.py: doctor: exit $rc, $dt s"
grep -iE 'triton.py|partial' "$R/shadow-doctor.txt" | head -4 >> "$R/summary.txt"
read rc dt < <(step shadow-sync "$TL" sync --no-verify --find-links "$C/house"); summary "shadow triton.py: sync --no-verify: exit $rc, $dt s"
grep -iE 'triton.py|matches' "$R/shadow-sync.txt" | head -3 >> "$R/summary.txt"
read rc dt < <(step shadow-verify-after "$TL" verify --quick); summary "shadow removed: verify --quick: exit $rc, $dt s"
[ -e "$SITE/triton.py" ] && summary "shadow: triton.py still there" || summary "shadow: triton.py gone"
# a package built once per CUDA major (torch-memory-saver 0.0.10: its hooks _cu12 and _cu13, and an unsuffixed one,
# CUDA 12, for ROCm), put in by hand beside torch's CUDA 13 build: verify imports the _cu13 builds only
if ls "$C"/percuda/*.whl > /dev/null 2>&1; then
  uv pip install -q --offline --no-deps --python .venv/bin/python "$C"/percuda/*.whl > "$R/percuda-install.txt" 2>&1
  .venv/bin/python -c 'import ctypes
for n in ("libcudart.so.12", "libcudart.so.13"):
    try:
        ctypes.CDLL(n); print("percuda:", n, "loads here")
    except OSError as e:
        print("percuda:", n, "does not load here:", e)' >> "$R/summary.txt" 2>&1
  read rc dt < <(step percuda-plain .venv/bin/python -c 'import torch, torch_memory_saver_hook_mode_torch')
  summary "percuda: importing the unsuffixed (CUDA 12) hook by hand: exit $rc"; tail -2 "$R/percuda-plain.txt" | cut -c1-300 >> "$R/summary.txt"
  read rc dt < <(step percuda-pick .venv/bin/python -c 'import torch; from torch_memory_saver.utils import get_binary_path_from_package as g; print(g("torch_memory_saver_hook_mode_torch"))')
  summary "percuda: the package's own pick: exit $rc"; head -1 "$R/percuda-pick.txt" >> "$R/summary.txt"
  read rc dt < <(step percuda-verify "$TL" verify); summary "percuda: verify: exit $rc, $dt s"
  grep -iE 'memory|FAIL|RESULT' "$R/percuda-verify.txt" | head -5 | cut -c1-400 >> "$R/summary.txt"
  read rc dt < <(step percuda-doctor "$TL" doctor); summary "percuda: doctor: exit $rc, $dt s"
  grep -iE 'memory|^(ERROR|WARNING)' "$R/percuda-doctor.txt" | head -4 | cut -c1-400 >> "$R/summary.txt"
fi
cp triton-env.lock "$R/" 2>/dev/null
tar -C "$R" -czf "$OUT/native.tar.gz" .
cp "$R/summary.txt" "$OUT/"
cat "$R/summary.txt"
