# Sourced by bench/verify_ab_h200.sh and bench/verify_repeat_h200.sh (GPU machine, no network): two builds of
# tritonlock, A and B (wheels named by $A and $B), each in a venv of its own ($W/A, $W/B, tritonlock's dependencies
# from the carried $C/wheels), each with its own synced copy of the project $C/$PROJ ($W/projA, $W/projB) and one
# filling verify. One project venv for each build: a warm verify keeps what it may skip in <venv>/.tritonlock-cache,
# keyed on the runner's own sources, so two builds verifying one venv would each find the other's record and redo
# the work. Needs C, OUT, PROJ set; sets W.
export UV_PYTHON_DOWNLOADS=never UV_OFFLINE=1 PIP_NO_INDEX=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT"
W=$(mktemp -d)
for side in A B; do
  whl=${!side}
  python3 -m venv "$W/$side" && "$W/$side/bin/pip" install -q --no-index --find-links "$C/wheels" tritonlock \
    && "$W/$side/bin/pip" install -q --no-index --no-deps --force-reinstall "$whl" || { echo "install $side failed"; exit 1; }
  cp -r "$C/$PROJ" "$W/proj$side"
  (cd "$W/proj$side" && timeout 150 "$W/$side/bin/tritonlock" sync --system-site-packages \
      --find-links "${HOUSE:-$C/house}" --no-verify > "$OUT/sync-$side.txt" 2>&1) || { cat "$OUT/sync-$side.txt"; exit 1; }
  (cd "$W/proj$side" && timeout 150 "$W/$side/bin/tritonlock" verify --json > "$OUT/fill-$side.json" 2> "$OUT/fill-$side.err")
  echo "filling verify $side: exit $?"
done
