#!/usr/bin/env bash
# Issue 40 on the H200: a wheel built for another torch is refused at resolve naming a symbol, and its import fails with
# that same symbol. Needs .device-carry/h200-symbols from `bash bench/h200_symbols_prepare.sh` (where the default index
# answers). On the GPU machine (no network), from the repository root:  OUT=/tmp/x bash bench/h200_symbols.sh
#
#   resolve.txt    tritonlock resolve of symbad + torch 2.11.0 for this host, against the carried index (no wheel is
#                  read: the facts are carried, torch 2.11.0's exports are compat/torch-symbols/'s)
#   import.txt     python3 -c "import torch; import symbad" with the image's own torch (2.11.0+cu130), symbad put in
#                  by hand
#   doctor.txt     tritonlock doctor on that interpreter (symbad on its path): the symbol, read from the image's
#                  torch libraries
#   summary.txt    one line each, and whether the symbol the resolve named is the one the import failed on
# (PY: the interpreter that holds torch, python3 there; SITE: where tritonlock's dependencies are when they are not to
# be installed from the carried wheels — a rehearsal on another machine)
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PY:-python3}
C=$REPO/.device-carry/h200-symbols
OUT=${OUT:-/tmp/h200-symbols}
W=$(mktemp -d)
mkdir -p "$OUT"
export UV_PYTHON_DOWNLOADS=never UV_OFFLINE=1 PIP_NO_INDEX=1 PYTHONUNBUFFERED=1
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
: > "$OUT/summary.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  "$PY" -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.__file__)'; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt" >> "$OUT/summary.txt"

if [ -z "${SITE:-}" ]; then
  SITE=$W/site
  "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$C"/wheels/*.whl > "$OUT/install.txt" 2>&1 \
    || { summary "install of the carried wheels failed"; cat "$OUT/install.txt"; exit 1; }
fi
export PYTHONPATH=$SITE:$REPO PATH=$SITE/bin:$PATH
cp -r "$C/cache" "$W/cache" && export TRITONLOCK_NATIVE_CACHE=$W/cache
"$PY" "$REPO/bench/h200_symbols_index.py" serve "$C/index" "$W/port" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null' EXIT
for _ in $(seq 50); do [ -s "$W/port" ] && break; sleep 0.1; done
mkdir -p "$W/proj"
cat > "$W/proj/triton-env.toml" <<TOML
[environment]
python = "3.12"
torch = "==2.11.0"
packages = ["symbad"]

[indexes]
torch = "default"
default = "http://127.0.0.1:$(cat "$W/port")/simple"
TOML

t0=$(date +%s.%N)
"$PY" -m tritonlock resolve -p "$W/proj" > "$OUT/resolve.txt" 2>&1; rc=$?
summary "resolve (this host, symbad + torch 2.11.0): exit $rc (3 expected), $("$PY" -c "print(round($(date +%s.%N)-$t0,1))") s"
grep -E "cannot load|calls |fix:" "$OUT/resolve.txt" | head -4 | cut -c1-400 >> "$OUT/summary.txt"
NAMED=$(grep -oE "undefined symbol: [A-Za-z0-9_]+" "$OUT/resolve.txt" | head -1 | cut -d' ' -f3)

"$PY" -m pip install -q --no-index --no-deps --target "$W/symbad" "$C"/symbad/symbad-1.0-*.whl >> "$OUT/install.txt" 2>&1
PYTHONPATH=$W/symbad "$PY" -c "import torch; print('torch', torch.__version__); import symbad" > "$OUT/import.txt" 2>&1
rc=$?
summary "import torch; import symbad (the image's torch): exit $rc (1 expected)"
tail -1 "$OUT/import.txt" | cut -c1-300 >> "$OUT/summary.txt"
FAILED=$(grep -oE "undefined symbol: [A-Za-z0-9_]+" "$OUT/import.txt" | head -1 | cut -d' ' -f3)
if [ -n "$NAMED" ] && [ "$NAMED" = "$FAILED" ]; then
  summary "the same symbol: resolve named $NAMED, the import failed on $FAILED"
else
  summary "NOT the same symbol: resolve named '${NAMED}', the import failed on '${FAILED}'"
fi

PYTHONPATH=$W/symbad:$PYTHONPATH "$PY" -m tritonlock doctor --python "$PY" > "$OUT/doctor.txt" 2>&1
summary "doctor on the image's interpreter, symbad beside its torch: exit $? (1 expected)"
grep -E "symbad" "$OUT/doctor.txt" | head -3 | cut -c1-400 >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
