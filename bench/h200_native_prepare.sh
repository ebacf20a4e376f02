#!/usr/bin/env bash
# Prepare, on a machine that reaches PyPI, what bench/h200_native.sh needs on the GPU machine (no network):
#   .device-carry/h200-native/wheels/  tritonlock and its dependencies as wheels for Python 3.12 / manylinux x86_64
#   .device-carry/h200-native/proj-torch/ the same project without torchvision (a lock of torch alone)
#   .device-carry/h200-native/proj/    a project locked for the H200 (bench/h200/h200.toml): torch 2.11 and
#                                      torchvision from PyPI — a package with native code linked to one torch
#   .device-carry/h200-native/house/   the locked wheels the H200 image does not already hold
#   .device-carry/h200-native/stray/   torchvision 0.28.0, PyPI's build for torch 2.13: the mismatched build that
#                                      bench/h200_native.sh puts into the venv by hand (issue 22)
#   .device-carry/h200-native/percuda/ torch-memory-saver 0.0.10, which carries one build per CUDA major
# Run from the repository root in an environment where this checkout is installed (`pip install -e .`):
#   bash bench/h200_native_prepare.sh
# The lock holds the index's file URLs: it stays under .device-carry/ (ignored by git), never in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
C=.device-carry/h200-native
PY=${PYTHON:-python3}
rm -rf "$C"
mkdir -p "$C/wheels" "$C/proj" "$C/house" "$C/stray" "$C/percuda"
PLAT=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --platform manylinux_2_28_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)

# 1. tritonlock and its dependencies
"$PY" -m pip wheel -q --no-deps -w "$C/wheels" .
"$PY" -m pip download -q "${PLAT[@]}" -d "$C/wheels" "$C"/wheels/tritonlock-*.whl

# 2. the project and its lock, for the H200's saved profile (the native facts are read here, by ranged reads)
cat > "$C/proj/triton-env.toml" <<'EOF'
# torch 2.11 as PyPI ships it (the CUDA 13.0 build) and torchvision, whose extension links that torch.
[environment]
python = "3.12"
torch = "==2.11.*"
packages = ["numpy==2.5.2", "cuda-bindings==13.3.1", "cuda-pathfinder==1.8.1", "torchvision"]  # the image's: less to carry

[indexes]
torch = "default"
EOF
/usr/bin/time -f "resolve: %e s" "$PY" -m tritonlock resolve -p "$C/proj" --target-file bench/h200/h200.toml

# 2b. the same without torchvision: a lock of torch alone (bench/verify_speed41_h200.sh with PROJ=proj-torch)
mkdir -p "$C/proj-torch"
sed -e 's/, "torchvision"\]/]/' -e 's/ and torchvision, whose extension links that torch/ alone/' \
  "$C/proj/triton-env.toml" > "$C/proj-torch/triton-env.toml"
"$PY" -m tritonlock resolve -p "$C/proj-torch" --target-file bench/h200/h200.toml > /dev/null

# 3. the wheelhouse: every locked wheel except what the image has
"$PY" - "$C/proj/triton-env.lock" "$C/house" <<'PYEOF'
import hashlib, sys, urllib.request
from pathlib import Path
from tritonlock.environment._plan import wheel_for
from tritonlock.lock.lockfile import read_lock

lock = read_lock(sys.argv[1])
house = Path(sys.argv[2])
(target,) = [t for t in lock.targets if t.name == "h200"]
# what the image holds, as an earlier sync onto it listed it ("= name version  (preinstalled)")
image = {tuple(line.split()[1:3]) for line in Path("bench/h200/final-1201/first-sync.txt").read_text().splitlines()
         if line.startswith("  = ") and line.endswith("(preinstalled)")}
image |= {("numpy", "2.5.2"), ("cuda-bindings", "13.3.1"), ("cuda-pathfinder", "1.8.1")}
for p in target.packages:
    if (p.name, p.version) in image:
        continue
    w = wheel_for(p, "3.12")
    if w is None:
        sys.exit(f"no wheel of {p.name} {p.version} for Python 3.12 in the lock")
    data = urllib.request.urlopen(w.url, timeout=120).read()
    if hashlib.sha256(data).hexdigest() != w.sha256:
        sys.exit(f"{w.name}: sha256 differs from the lock")
    (house / w.name).write_bytes(data)
    print(f"house: {w.name} ({len(data) / 1e6:.1f} MB)")
PYEOF

# 4. the stray build
"$PY" -m pip download -q --no-deps "${PLAT[@]}" -d "$C/stray" "torchvision==0.28.0"
du -sh "$C"/* "$C"

# 5. a package built once per CUDA major (hook _cu12 / _cu13, and an unsuffixed CUDA 12 build for ROCm)
"$PY" -m pip download -q "${PLAT[@]}" --no-deps -d "$C/percuda" "torch-memory-saver==0.0.10"
