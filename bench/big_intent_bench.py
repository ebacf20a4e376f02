"""`tritonlock resolve --dry-run` on intents with thousands of packages and several targets without a driver: how
its time grows with the number of packages (it should grow in step with them, not with their square).

Usage: python bench/big_intent_bench.py [--sizes 5000,10000,20000,50000] [--targets 2] [--repeat 3]

No network: the dry run decides from the matrix alone. Each size is one subprocess per repeat (the median shown),
with the time per 1,000 packages beside it: a flat column is linear.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def intent(n: int, targets: int) -> str:
    pkgs = ", ".join(f'"pkg{i}>=1.0"' for i in range(n))
    tables = "".join(f'[[targets]]\nname = "cpu{k}"\narch = "{("x86_64", "aarch64")[k % 2]}"\n' for k in range(targets))
    return f'[environment]\npython = "3.11"\npackages = [{pkgs}]\n{tables}'


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="5000,10000,20000,50000")
    ap.add_argument("--targets", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(f"{'packages':>9}  {'seconds':>8}  {'s per 1,000':>11}")
    for n in (int(x) for x in a.sizes.split(",")):
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "triton-env.toml").write_text(intent(n, a.targets))
            times = []
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                proc = subprocess.run([sys.executable, "-m", "tritonlock", "resolve", "--dry-run", "-p", d],
                                      capture_output=True, text=True)
                times.append(time.perf_counter() - t0)
                if proc.returncode != 0:
                    raise SystemExit(proc.stderr[-2000:])
        med = statistics.median(times)
        print(f"{n:>9}  {med:>8.2f}  {med / n * 1000:>11.3f}")


if __name__ == "__main__":
    main()
