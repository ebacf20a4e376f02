#!/usr/bin/env bash
# Refresh compat/native/ and compat/metadata/ (the binary facts and the METADATA shipped with the matrix): resolve the
# seed intents — examples/pypi, examples/inference and tools/native_seeds/*, typical package sets on an H200, an RTX
# 4090 on R550 and an A100 on R535 — in a scratch copy, then run `tritonlock compat native` and `tritonlock compat
# metadata` with their locks, so that the wheels real closures lock (the packages' dependencies too) ship beside each
# named package's newest releases. Needs your default index (PyPI or a mirror). Reads are kept in your fact cache: a
# second run reads only what changed. Usage: bash tools/native_facts.sh [compat native's options]
# (ONLY=metadata: compat/metadata alone.)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$here/.venv/bin/python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
locks=()
for dir in "$here/examples/pypi" "$here/examples/inference" "$here"/tools/native_seeds/*/; do
  name=$(basename "$dir")
  mkdir -p "$work/$name"
  cp "$dir/triton-env.toml" "$work/$name/"
  echo "resolving $name" >&2
  (cd "$work/$name" && UV_PYTHON_DOWNLOADS=${UV_PYTHON_DOWNLOADS:-never} "$py" -m tritonlock resolve \
     --allow-unchecked-native >/dev/null) || echo "  $name: resolve failed (its wheels are left out)" >&2
  [ -f "$work/$name/triton-env.lock" ] && locks+=(--lock "$work/$name/triton-env.lock")
done
[ "${ONLY:-}" = metadata ] || "$py" -m tritonlock compat native "${locks[@]}" "$@"
"$py" -m tritonlock compat metadata "${locks[@]}"
