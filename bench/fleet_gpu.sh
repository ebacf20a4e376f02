#!/usr/bin/env bash
# Fleet verify on a GPU machine: `tritonlock verify --record` once per GPU (CUDA_VISIBLE_DEVICES=0 and =1 as two
# "nodes") and once on both together, then `tritonlock report merge` into $OUT (table, JSON, HTML, records).
#
# Two phases, because the GPU machine has no package index:
#   1. here, with PyPI reachable:        bash bench/fleet_gpu.sh --prepare
#      writes .device-carry/fleet/: the lock for the H200 target (torch 2.11.0 cu130 from the default index, as
#      preinstalled there) and the wheels tritonlock needs beside torch (click, tomlkit, packaging, requests, …).
#   2. on the GPU machine (repository root, .device-carry/fleet carried):   bash bench/fleet_gpu.sh
#      uses /opt/torch/.venv's python3 (torch 2.11.0+cu130, triton 3.6.0) as the environment to verify.
# Environment: OUT (default /tmp/fleet-gpu), PYTHON (default python3 on PATH), CARRY (default .device-carry/fleet).
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
CARRY=${CARRY:-$REPO/.device-carry/fleet}

if [ "${1:-}" = "--prepare" ]; then
  rm -rf "$CARRY" && mkdir -p "$CARRY/project/hosts" "$CARRY/deps" || exit 1
  cp bench/h200/h200.toml "$CARRY/project/hosts/h200.toml"
  cat > "$CARRY/project/triton-env.toml" <<'TOML'
# The H200 machine's stack as preinstalled there (/opt/torch/.venv): PyPI's torch 2.11.0 is the cu130 build.
target-files = ["hosts/*.toml"]
[environment]
python = "3.12"
torch = "==2.11.0"
[indexes]
torch = "default"
TOML
  tritonlock resolve -p "$CARRY/project" || exit 1
  python3 -m pip download -q --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --implementation py --no-deps -d "$CARRY/deps" \
    click tomlkit packaging requests urllib3 idna certifi charset-normalizer nvidia-ml-py || exit 1
  echo "prepared $CARRY: carry it to the GPU machine and run: bash bench/fleet_gpu.sh"
  exit 0
fi

OUT=${OUT:-/tmp/fleet-gpu}
PY=${PYTHON:-$(command -v python3)}
mkdir -p "$OUT/reports" || exit 1
SITE=/tmp/tritonlock-fleet-site
rm -rf "$SITE"
# tritonlock itself from this checkout; the small libraries it needs from the carried wheels, never over torch's
"$PY" -m pip install -q --no-index --no-deps --target "$SITE" "$CARRY"/deps/*.whl || exit 1
export PYTHONPATH="$REPO:$SITE"
PROJECT="$OUT/project"
rm -rf "$PROJECT" && cp -r "$CARRY/project" "$PROJECT" || exit 1
tl() { "$PY" -m tritonlock "$@"; }
tl --version || exit 1
tl host > "$OUT/host.txt" 2>&1
nvidia-smi -L > "$OUT/nvidia-smi-L.txt" 2>&1

run_node() {  # run_node NAME CUDA_VISIBLE_DEVICES: one "node", as the Slurm/Kubernetes jobs' verify step does
  local tag=$1
  date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/reports/$tag.started"
  echo 0 > "$OUT/reports/$tag.sync.rc"   # nothing to sync: the environment is the preinstalled one
  CUDA_VISIBLE_DEVICES=$2 TRITONLOCK_NODE=$tag timeout -k 30 900 \
    "$PY" -m tritonlock verify --json --record --target h200 -p "$PROJECT" --python "$PY" \
    > "$OUT/reports/$tag.json" 2> "$OUT/reports/$tag.verify.log"
  echo $? > "$OUT/reports/$tag.verify.rc"
  echo "$tag (CUDA_VISIBLE_DEVICES=$2): verify exit $(cat "$OUT/reports/$tag.verify.rc")"
}

# NODES: "NAME:CUDA_VISIBLE_DEVICES ..." (default: each of two GPUs, then both; a one-GPU machine: NODES="h200:0")
NODES=${NODES:-"h200-gpu0:0 h200-gpu1:1 h200-both:0,1"}
n=0
for node in $NODES; do
  run_node "${node%%:*}" "${node#*:}"
  n=$((n + 1))
done
tl report merge "$OUT/reports" --expect $n --html "$OUT/report.html" | tee "$OUT/report.txt"
tl report merge "$OUT/reports" --expect $n --json > "$OUT/report.json"
cp "$PROJECT/triton-env.verified.toml" "$OUT/triton-env.verified.toml"
tl show -p "$PROJECT" > "$OUT/show.txt" 2>&1
tl check -p "$PROJECT" --require-verified > "$OUT/check.txt" 2>&1; echo "check --require-verified: exit $?" >> "$OUT/check.txt"
rm -rf "$PROJECT/.venv"
echo "results in $OUT: report.txt report.html report.json triton-env.verified.toml show.txt check.txt reports/"
