#!/usr/bin/env bash
# Prepare, on a machine that reaches PyPI, everything bench/h200_sync.sh needs on the GPU machine (no network):
#   .device-carry/h200-sync/wheels/  tritonlock and its dependencies as wheels for Python 3.12 / manylinux x86_64
#   .device-carry/h200-sync/proj/    a project locked for the H200 (bench/h200/h200.toml), torch 2.11 from PyPI
#   .device-carry/h200-sync/house/   the locked wheels the H200 image does not already hold (it has torch 2.11.0,
#                                    triton 3.6.0 and the CUDA 13 nvidia-* libraries in /opt/torch/.venv)
# Run from the repository root in an environment where this checkout is installed (`pip install -e .`):
#   bash bench/h200_sync_prepare.sh
# The lock holds the index's file URLs: it stays under .device-carry/ (ignored by git), never in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
C=.device-carry/h200-sync
PY=${PYTHON:-python3}
rm -rf "$C"
mkdir -p "$C/wheels" "$C/proj" "$C/house"

# 1. tritonlock and its dependencies
"$PY" -m pip wheel -q --no-deps -w "$C/wheels" .
"$PY" -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$C/wheels" "$C"/wheels/tritonlock-*.whl

# 2. the project and its lock, for the H200's saved profile
cat > "$C/proj/triton-env.toml" <<'EOF'
# torch 2.11 as PyPI ships it (the CUDA 13.0 build), for the H200 in bench/h200/h200.toml.
[environment]
python = "3.12"
torch = "==2.11.*"
packages = ["numpy>=2"]

[indexes]
torch = "default"
EOF
"$PY" -m tritonlock resolve -p "$C/proj" --target-file bench/h200/h200.toml

# 3. the wheelhouse: every locked wheel except what the image has
"$PY" - "$C/proj/triton-env.lock" "$C/house" <<'PYEOF'
import hashlib, sys, urllib.request
from pathlib import Path
from tritonlock.environment._plan import wheel_for
from tritonlock.lock.lockfile import read_lock

lock = read_lock(sys.argv[1])
house = Path(sys.argv[2])
(target,) = [t for t in lock.targets if t.name == "h200"]
image = ("torch", "triton", "cuda-toolkit")
total = 0
for p in target.packages:
    if p.name in image or p.name.startswith("nvidia-"):
        continue
    w = wheel_for(p, "3.12")
    if w is None:
        sys.exit(f"no wheel of {p.name} {p.version} for Python 3.12 in the lock")
    data = urllib.request.urlopen(w.url, timeout=120).read()
    if hashlib.sha256(data).hexdigest() != w.sha256:
        sys.exit(f"{w.name}: sha256 differs from the lock")
    (house / w.name).write_bytes(data)
    total += len(data)
    print(f"house: {w.name} ({len(data) / 1e6:.1f} MB)")
print(f"house: {total / 1e6:.1f} MB in all")
PYEOF
du -sh "$C"/* "$C"
