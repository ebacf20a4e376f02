#!/usr/bin/env bash
# `tritonlock sync --system-site-packages` on the H200 as a user runs it: tritonlock in its OWN venv (installed from
# carried wheels, no network), a project elsewhere, the image's preinstalled torch/triton in /opt/torch/.venv.
#
# Needs .device-carry/h200-sync from `bash bench/h200_sync_prepare.sh` (run first, where PyPI is reachable); then
# on the GPU machine, from the repository root:
#   bash bench/h200_sync.sh            # reports go to $OUT (default /tmp/h200-sync)
#
# Steps, each with its output in $OUT:
#   env.txt         which python3 / python3.12 / uv the machine has, PATH
#   first-sync.txt  the first `sync --system-site-packages --find-links house` (then verify runs by itself)
#   plain-sync.txt  a later plain `sync --find-links house` (the flag forgotten): keeps the preinstalled stack
#   noop.txt        ten no-op `sync --no-verify` timings against `uv pip install --offline` of the same pins
#   doctor.txt      `tritonlock doctor` on that venv
#   drop-ssp.txt    `sync --no-system-site-packages` (torch is not in the wheelhouse): must fail and leave the venv
#   repair.txt      a file deleted from numpy and the stamp removed: the next sync repairs it
#   kill.txt        rounds of kill -9 of tritonlock and uv mid-install, each followed by a sync that must repair
#   summary.txt     one line per step: exit code, seconds, and whether the check held
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
C=$REPO/.device-carry/h200-sync
OUT=${OUT:-/tmp/h200-sync}
W=${WORK:-/tmp/h200-sync-work}
ROUNDS=${KILL_ROUNDS:-10}
mkdir -p "$OUT"
rm -rf "$W"
mkdir -p "$W"
[ -d "$C/wheels" ] || { echo "no $C: run bench/h200_sync_prepare.sh first" >&2; exit 2; }
export UV_PYTHON_DOWNLOADS=never UV_OFFLINE=1 PIP_NO_INDEX=1

summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
: > "$OUT/summary.txt"
{ echo "PATH=$PATH"; for c in python3 python3.12 uv; do echo "$c: $(command -v $c) -> $(readlink -f "$(command -v $c)")"; done
  python3 -c 'import sys, torch, triton; print(sys.prefix, torch.__version__, triton.__version__)'; } > "$OUT/env.txt" 2>&1

# tritonlock in its own venv (pipx style): not the image's venv, so it has no torch
python3 -m venv "$W/tl"
"$W/tl/bin/python" -m pip install -q --no-index --find-links "$C/wheels" tritonlock > "$OUT/install.txt" 2>&1
TL="$W/tl/bin/tritonlock"
UVB=$(command -v uv || echo "$W/tl/bin/uv")
export PATH="$PATH:$W/tl/bin-uv"
mkdir -p "$W/tl/bin-uv" && ln -sf "$UVB" "$W/tl/bin-uv/uv"  # `uv` for the steps below, whichever there is
"$TL" --version >> "$OUT/install.txt" 2>&1 || { summary "install FAILED"; exit 1; }
cp -r "$C/proj" "$W/proj"
cd "$W/proj"
"$TL" host --json > "$OUT/host.json" 2>&1
"$TL" resolve --dry-run --target-file "$REPO/bench/h200/h200.toml" > "$OUT/resolve-dry-run.txt" 2>&1

step() {  # step NAME CMD...: run, keep output and exit code, time it
  local name=$1; shift
  local t0=$(date +%s.%N)
  "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  local dt=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.2f}')")
  echo "exit $rc, $dt s" >> "$OUT/$name.txt"
  echo "$rc $dt"
}

# 1. first sync: the venv is built on the interpreter with the preinstalled stack, found on PATH
read rc dt < <(step first-sync "$TL" sync --system-site-packages --find-links "$C/house")
summary "first sync --system-site-packages (then verify): exit $rc, $dt s"
if [ "$rc" != 0 ] && [ "$rc" != 1 ]; then  # sync itself failed (1 is a failed verify): try with the interpreter named
  read rc dt < <(step first-sync-python "$TL" sync --system-site-packages --python "$(command -v python3)" \
                 --find-links "$C/house")
  summary "first sync with --python $(command -v python3): exit $rc, $dt s"
fi
.venv/bin/python -c 'import torch, triton; print("torch from", torch.__file__); print("triton from", triton.__file__)' \
  >> "$OUT/first-sync.txt" 2>&1

# 2. the flag forgotten
# (verify keeps its Triton/Inductor caches in .venv/.tritonlock-cache: verify's, not sync's, so left out)
list_venv() { find .venv \( -path '*/__pycache__' -o -path .venv/.tritonlock-cache \) -prune -o -type f \
              -printf '%P %s %T@\n' | sort; }
snap() { list_venv | sha256sum; }
list_venv > "$W/venv-before.txt"
before=$(snap)
read rc dt < <(step plain-sync "$TL" sync --find-links "$C/house")
after=$(snap)
list_venv > "$W/venv-after.txt"
diff "$W/venv-before.txt" "$W/venv-after.txt" > "$OUT/plain-sync-venv-diff.txt"
held=$([ "$before" = "$after" ] && grep -q "already matches" "$OUT/plain-sync.txt" && echo yes || echo NO)
summary "plain sync (flag forgotten, then verify): exit $rc, $dt s; venv untouched and 'already matches': $held"

# 3. no-op speed, against uv's own no-op on the same pins
uv pip freeze --python .venv/bin/python > "$W/pins.txt" 2>/dev/null
python3 - "$TL" "$W/pins.txt" > "$OUT/noop.txt" 2>&1 <<'PYEOF'
import statistics, subprocess, sys, time
tl, pins = sys.argv[1], sys.argv[2]
def t(args):
    out = []
    for _ in range(10):
        t0 = time.perf_counter()
        r = subprocess.run(args, capture_output=True, text=True)
        out.append(time.perf_counter() - t0)
        assert r.returncode == 0, r.stdout + r.stderr
    return out
a = t([tl, "sync", "--no-verify"])
b = t(["uv", "pip", "install", "--offline", "--no-deps", "--python", ".venv/bin/python", "-r", pins])
print("tritonlock sync --no-verify (no-op), ms:", " ".join(f"{x * 1000:.0f}" for x in a))
print("uv pip install --offline -r pins (no-op), ms:", " ".join(f"{x * 1000:.0f}" for x in b))
print(f"median: tritonlock {statistics.median(a) * 1000:.0f} ms, uv {statistics.median(b) * 1000:.0f} ms, "
      f"ratio {statistics.median(a) / statistics.median(b):.2f}x")
PYEOF
summary "no-op: $(tail -1 "$OUT/noop.txt")"

# 4. doctor, then verify again (warm caches) and --quick, each beside a bare `import torch`
read rc dt < <(step doctor "$TL" doctor)
summary "doctor: exit $rc, $dt s"
read rc dt < <(step verify-warm "$TL" verify --json)
read rc2 dt2 < <(step verify-quick "$TL" verify --quick)
read rc3 dt3 < <(step bare-import .venv/bin/python -c "import torch")
summary "verify warm: exit $rc, $dt s; verify --quick: exit $rc2, $dt2 s; bare import torch: $dt3 s"
# the table as a user reads it (warm: the torch.compile row reused, and said so), then with it run again
read rc dt < <(step verify-warm-text "$TL" verify)
read rc2 dt2 < <(step verify-no-reuse "$TL" verify --no-reuse)
summary "verify warm (text): exit $rc, $dt s; verify --no-reuse: exit $rc2, $dt2 s"

# 5. asked to drop the preinstalled stack: torch is not in the wheelhouse, so the rebuild must fail, venv intact
before=$(snap)
read rc dt < <(step drop-ssp "$TL" sync --no-system-site-packages --find-links "$C/house" --no-verify)
after=$(snap)
.venv/bin/python -c 'import torch, triton, numpy; print("still imports torch", torch.__version__)' >> "$OUT/drop-ssp.txt" 2>&1
ok=$?
held=$([ "$rc" = 5 ] && [ "$before" = "$after" ] && [ $ok = 0 ] && grep -q "is unchanged (checked" "$OUT/drop-ssp.txt" \
       && [ ! -e ..venv.tritonlock-new ] && echo yes || echo NO)
summary "sync --no-system-site-packages without torch wheels: exit $rc; venv unchanged and still working: $held"

# 6. damage and repair
site=$(ls -d .venv/lib/python3*/site-packages)
rm -f "$site/numpy/__init__.py"  # the no-op stamp stays: damage must outrank it (issue 14)
"$TL" doctor > "$OUT/repair.txt" 2>&1
read rc dt < <(step repair-sync "$TL" sync --find-links "$C/house" --no-verify)
cat "$OUT/repair-sync.txt" >> "$OUT/repair.txt"
.venv/bin/python -c 'import numpy; print("numpy", numpy.__version__)' >> "$OUT/repair.txt" 2>&1
held=$([ "$rc" = 0 ] && [ -f "$site/numpy/__init__.py" ] && grep -q "repaired" "$OUT/repair.txt" && echo yes || echo NO)
summary "numpy damaged, then sync: exit $rc, $dt s; repaired: $held"

# 7. kill -9 of tritonlock and uv mid-install, then a sync that must repair
"$W/tl/bin/python" - "$TL" "$C/house" "$ROUNDS" > "$OUT/kill.txt" 2>&1 <<'PYEOF'
import os, random, signal, subprocess, sys, time
from pathlib import Path
tl, house, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
from tritonlock.environment._venv import venv_damage

def tree(pid):
    kids = {}
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                kids.setdefault(int(open(f"/proc/{e}/stat").read().rsplit(")", 1)[1].split()[1]), []).append(int(e))
            except OSError:
                pass
    out, todo = {pid}, [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            if c not in out:
                out.add(c); todo.append(c)
    return out

def kill(pid):
    seen = set()
    while new := tree(pid) - seen:
        for p in new:
            try: os.kill(p, signal.SIGSTOP)
            except ProcessLookupError: pass
        seen |= new
    for p in seen:
        try: os.kill(p, signal.SIGKILL)
        except ProcessLookupError: pass

rng = random.Random(1)
venv = Path(".venv")
broken = repaired = 0
for i in range(rounds):
    subprocess.run(["uv", "pip", "uninstall", "-q", "--python", ".venv/bin/python", "numpy", "sympy", "networkx"],
                   check=True)
    p = subprocess.Popen([tl, "sync", "--find-links", house, "--no-verify"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    delay = rng.uniform(0.1, 2.5)
    time.sleep(delay)
    kill(p.pid); p.wait()
    damage = venv_damage(venv)
    broken += bool(damage)
    r = subprocess.run([tl, "sync", "--find-links", house, "--no-verify"], capture_output=True, text=True)
    ok = r.returncode == 0 and not venv_damage(venv) and subprocess.run(
        [".venv/bin/python", "-c", "import numpy, sympy, networkx, torch"], capture_output=True).returncode == 0
    repaired += bool(damage) and ok
    print(f"round {i}: killed after {delay:.2f} s, damaged {[d.name for d in damage]}, re-sync exit {r.returncode}, "
          f"{'ok' if ok else 'NOT REPAIRED'}")
    if not ok:
        print(r.stdout, r.stderr)
print(f"kill -9 rounds: {rounds}, left damaged by the kill: {broken}, of those repaired by the next sync: {repaired}")
PYEOF
summary "kill -9 rounds: $(grep -c ', ok$' "$OUT/kill.txt")/$ROUNDS repaired ok; $(grep -c 'NOT REPAIRED' "$OUT/kill.txt") not repaired"
cp "$W/proj/triton-env.lock" "$OUT/triton-env.lock"
echo "done: $OUT"
