#!/usr/bin/env bash
# Reproduce bench/RESULTS.md: `tritonlock verify` on this machine's GPU(s), cold cache then warm.
#   PYTHON   the environment's interpreter (default: python3 on PATH)
#   BACKEND  the torch backend it should have (default cu130); TRITON_PIN likewise (default 3.6.0)
#   OUT      where the reports go (default /tmp/tritonlock-verify-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python3)}
OUT=${OUT:-/tmp/tritonlock-verify-bench}
mkdir -p "$OUT"
args="\"backend\": \"${BACKEND:-cu130}\", \"triton\": \"${TRITON_PIN:-3.6.0}\", \"expect_gpu\": true"

verify() {  # verify NAME JSON-KWARGS: print the report, keep it as NAME.txt and NAME.json
  python3 - "$PY" "$OUT/$1.json" "$2" <<'PYEOF' | tee "$OUT/$1.txt"
import json, sys
from tritonlock.verify import run_verify
from tritonlock.verify.report import format_report
result = run_verify(sys.argv[1], **json.loads(sys.argv[3]))
print(format_report(result))
with open(sys.argv[2], "w") as f:
    json.dump(result.to_json(), f, indent=1)
PYEOF
}

verify cold "{$args, \"cold\": true}"
verify warm-first "{$args}"   # fills the default Triton cache (compiles, autotune timings)
verify warm "{$args}"
