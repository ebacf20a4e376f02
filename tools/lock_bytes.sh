#!/usr/bin/env bash
# The bytes tritonlock writes for every example project, so that two trees (before and after a refactoring) can be
# compared byte for byte. For each examples/*/ with an intent: `resolve --dry-run --json` (the decision, no network)
# and `resolve` (the written triton-env.lock, or the error that stopped it, exit code included).
#
#   git archive <old-commit> | tar -x -C /tmp/before-src        # the old tree, beside this one
#   SRC=/tmp/before-src tools/lock_bytes.sh /tmp/lock-before      # lock with the old code
#   tools/lock_bytes.sh /tmp/lock-after                            # lock with this checkout
#   diff -r /tmp/lock-before /tmp/lock-after && echo identical
#
# Both runs use the same interpreter ($PYTHON, default: python3 on PATH with tritonlock's dependencies), the same uv
# cache (UV_CACHE_DIR, default /tmp/lock-bytes-uv-cache) and a fresh tritonlock cache each (XDG_CACHE_HOME). Resolving
# reads the default index (PyPI here): run the two close together, so that no new release lands in between.
# Examples whose torch comes from PyTorch's own index fail where that index is unreachable — identically in both
# trees (the error text is compared too). The per-target progress lines on stderr ("target h200: 30 packages locked
# (4.9 s)") come in the order the worker threads finish, with timings: they are left out, and so are uv's retry
# timings ("after 3 retries in 9.7s").
set -u
out=${1:?usage: [SRC=tree] tools/lock_bytes.sh OUT_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
src=${SRC:-$here}
python=${PYTHON:-python3}
export UV_CACHE_DIR=${UV_CACHE_DIR:-/tmp/lock-bytes-uv-cache}
export UV_PYTHON_DOWNLOADS=never
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
rm -rf "$out" && mkdir -p "$out"
for ex in "$here"/examples/*/; do
  name=$(basename "$ex")
  [ -f "$ex/triton-env.toml" ] || continue
  work=$out/$name
  cp -r "$ex" "$work"
  rm -f "$work/triton-env.lock"
  run() { (cd "$work" && XDG_CACHE_HOME=$cache PYTHONPATH=$src "$python" -m tritonlock "$@"); }
  run resolve --dry-run --json > "$out/$name.dry-run.json" 2> "$out/$name.dry-run.err"
  echo "exit $?" >> "$out/$name.dry-run.err"
  run resolve > "$out/$name.resolve.out" 2> "$out/$name.resolve.raw"
  echo "exit $?" >> "$out/$name.resolve.raw"
  grep -Ev '^target [^:]+: (locking .* with uv…|[0-9]+ packages locked.*|failed)$' "$out/$name.resolve.raw" \
    | sed -E 's/ retries in [0-9.]+m?s/ retries in Ns/' > "$out/$name.resolve.err"
  rm "$out/$name.resolve.raw"
  echo "$name: $(tail -n1 "$out/$name.resolve.err"), lock $( [ -f "$work/triton-env.lock" ] && echo written || echo absent)"
done
