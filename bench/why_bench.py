"""What `tritonlock why` costs now that it checks each change by locking the user's packages with uv: `why --offline`
(compat/ only), `why` (one packages decision per distinct change) and `resolve --upgrade` (the decision once, for
this machine) side by side, on your default index (PyPI or your mirror), after an untimed resolve warmed uv's cache.

Usage: python bench/why_bench.py [--packages vllm] [--driver 570.172.08] [--gpus H200] [--repeat N]

The default is the case the newcomer run found: vLLM on an H200 whose driver (R570) holds torch below what vLLM's
newest release pins, with torch from the default index ([indexes] torch = "default").
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(args: list[str], repeat: int) -> tuple[list[float], str]:
    out, text = [], ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.run(args, capture_output=True, text=True)
        out.append(time.perf_counter() - t0)
        text = proc.stdout + proc.stderr
        if proc.returncode not in (0, 3):
            raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}):\n{text[-3000:]}")
    return out, text


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--packages", default="vllm")
    ap.add_argument("--driver", default="570.172.08")
    ap.add_argument("--gpus", default="H200")
    ap.add_argument("--python", default="3.12")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    tl = [sys.executable, "-m", "tritonlock"]
    with tempfile.TemporaryDirectory(prefix="why-bench-") as tmp:
        root = Path(tmp)
        (root / "triton-env.toml").write_text(
            f'[environment]\npython = "{a.python}"\npackages = {json.dumps(a.packages.split(","))}\n'
            '[indexes]\ntorch = "default"\n\n[[targets]]\nname = "box"\nglibc = "2.35"\n'
            f'driver = "{a.driver}"\ngpus = {json.dumps(a.gpus.split(","))}\n', encoding="utf-8")
        first, _ = timed([*tl, "resolve", "-p", str(root)], 1)  # untimed in the table: it fills uv's cache
        rows = []
        for name, args in (("why --offline", [*tl, "why", "-p", str(root), "--offline"]),
                           ("why (checked with uv)", [*tl, "why", "-p", str(root)]),
                           ("resolve --upgrade", [*tl, "resolve", "-p", str(root), "--upgrade"])):
            times, text = timed(args, a.repeat)
            rows.append((name, statistics.median(times), text))
        print(f"packages {a.packages}; target driver {a.driver}, GPUs {a.gpus}, Python {a.python}; "
              f"first resolve {first[0]:.1f} s (cache warm-up); median of {a.repeat}")
        base = rows[2][1]
        for name, t, _ in rows:
            print(f"  {name:24s} {t:7.2f} s   {t / base:5.2f}x resolve --upgrade")
        print("\n`why` said:\n" + rows[1][2])


if __name__ == "__main__":
    main()
