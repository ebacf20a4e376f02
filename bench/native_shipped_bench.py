"""What the facts shipped in compat/native/ buy a first resolve on a new machine (uv's cache, tritonlock's fact cache
and everything else kept empty), for an intent that did not seed them (tools/native_seeds/ and examples/inference
did): this code with the shipped facts, this code without them (TRITONLOCK_NO_SHIPPED_FACTS=1), and another
tritonlock (the code before), interleaved. Also how many of the closure's wheels came from the shipped facts.

Usage: python bench/native_shipped_bench.py --other PYTHON [--repeat N] [-o FILE]
Run it with UV_PYTHON_DOWNLOADS=never where uv cannot download Pythons.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# A vLLM intent the shipped facts were not seeded with: another package set, other machines (an H100 on R570, an L40S
# on R550) than the seeds' H200, RTX 4090 on R550 and A100 on R535
INTENT = """[environment]
python = "3.12"
packages = ["vllm", "bitsandbytes", "peft"]

[indexes]
torch = "default"

[[targets]]
name = "h100-r570"
driver = "570.172.08"
gpus = ["9.0"]
glibc = "2.35"

[[targets]]
name = "l40s-r550"
driver = "550.163.01"
gpus = ["8.9"]
glibc = "2.35"
"""


def run(python: str, env: dict[str, str]) -> tuple[float, dict[str, int]]:
    with tempfile.TemporaryDirectory(prefix="tl-bench-shipped-") as tmp:
        root = Path(tmp) / "p"
        root.mkdir()
        (root / "triton-env.toml").write_text(INTENT, encoding="utf-8")
        env = dict(env, UV_CACHE_DIR=f"{tmp}/uv", XDG_CACHE_HOME=f"{tmp}/xdg", TRITONLOCK_NATIVE_CACHE=f"{tmp}/facts")
        t0 = time.perf_counter()
        p = subprocess.run([python, "-m", "tritonlock", "resolve", "--json"], cwd=root, env=env, capture_output=True,
                           text=True)
        took = time.perf_counter() - t0
        if p.returncode not in (0, 3):
            raise SystemExit(f"{python}: resolve failed ({p.returncode}):\n{p.stderr[-2000:]}")
        kinds = {"shipped": 0, "read": 0}
        for f in Path(f"{tmp}/facts").glob("*.json"):
            if f.name.endswith("metadata.json"):
                continue
            source = json.loads(f.read_text(encoding="utf-8")).get("source", "")
            kinds["shipped" if source.startswith("the wheel ") else "read"] += 1
        return took, kinds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--other", required=True)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    times: dict[str, list[float]] = {"before": [], "without": [], "with": []}
    kinds: dict[str, dict[str, int]] = {}
    for _ in range(args.repeat):
        for what, python, extra in (("before", args.other, {}), ("without", sys.executable,
                                                                  {"TRITONLOCK_NO_SHIPPED_FACTS": "1"}),
                                    ("with", sys.executable, {})):
            took, k = run(python, dict(os.environ, **extra))
            times[what].append(took)
            kinds[what] = k
    m = {k: statistics.median(v) for k, v in times.items()}
    lines = [f"first resolve on a new machine of a vLLM intent the shipped facts were not seeded with (vllm, "
             f"bitsandbytes, peft; an H100 on R570 and an L40S on R550), median of {args.repeat}, interleaved, "
             f"{os.cpu_count()} cores:",
             f"  the code before ({args.other}): {m['before']:.1f} s",
             f"  this code without the shipped facts: {m['without']:.1f} s ({m['without'] / m['before']:.2f}x the code "
             f"before); wheels read: {kinds['without']['read']}",
             f"  this code with them: {m['with']:.1f} s ({m['with'] / m['without']:.2f}x without them, "
             f"{m['with'] / m['before']:.2f}x the code before); facts from compat/native: {kinds['with']['shipped']}, "
             f"read: {kinds['with']['read']}",
             f"  runs: {[[round(x, 1) for x in v] for v in times.values()]}"]
    print("\n".join(lines))
    if args.output:
        Path(args.output).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
