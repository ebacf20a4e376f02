"""verify's speed on a GPU host, each run side by side with a bare `import torch` in the same interpreter.

Runs, in order: cold (fresh Triton + Inductor caches), cold with one compile thread (what the parallel compile
saves), a first warm run (fills the venv's persistent caches), two warm runs, two --quick runs. Before each verify
run it times `python -I -c "import torch"`. Writes NAME.json / NAME.txt under OUT and prints a table last.

    PYTHONPATH=. python3 bench/verify_speed.py OUT [PYTHON]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tritonlock.verify import run_verify
from tritonlock.verify.report import format_report

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
python = sys.argv[2] if len(sys.argv) > 2 else sys.executable
common = {"backend": os.environ.get("BACKEND", "cu130"), "triton": os.environ.get("TRITON_PIN", "3.6.0"),
          "expect_gpu": True}


def bare_import() -> float:
    t0 = time.perf_counter()
    subprocess.run([python, "-I", "-c", "import torch"], check=True)
    return time.perf_counter() - t0


runs = [("cold", {"cold": True}, {}),
        ("cold-1thread", {"cold": True}, {"TRITONLOCK_VERIFY_COMPILE_THREADS": "1"}),
        ("warm-fill", {}, {}), ("warm-1", {}, {}), ("warm-2", {}, {}),
        ("quick-1", {"quick": True}, {}), ("quick-2", {"quick": True}, {})]
only = os.environ.get("RUNS")  # e.g. RUNS=cold,warm-1: a subset, in this order
if only:
    runs = [r for r in runs if r[0] in only.split(",")]
rows = []
for name, kw, env in runs:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        imp = bare_import()
        t0 = time.perf_counter()
        result = run_verify(python, **common, **kw)
        wall = time.perf_counter() - t0
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    text = format_report(result)
    (out / f"{name}.txt").write_text(text + "\n")
    (out / f"{name}.json").write_text(json.dumps(result.to_json(), indent=1))
    print(text, flush=True)
    rows.append((name, wall, imp, result.compile_seconds, result.ok))

print("\nrun            verify s   bare import torch s   verify - import   parallel compile s   ok")
for name, wall, imp, comp, ok in rows:
    print(f"{name:14} {wall:8.2f}   {imp:19.2f}   {wall - imp:15.2f}   {comp if comp is not None else float('nan'):18.2f}   {ok}")
(out / "summary.txt").write_text("\n".join(f"{n}\t{w:.2f}\t{i:.2f}\t{c}\t{o}" for n, w, i, c, o in rows) + "\n")
