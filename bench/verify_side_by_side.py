"""Warm `tritonlock verify` side by side with a bare `import torch` + CUDA init, interleaved round by round on one
machine (issue 26's goal: verify <= 1.25x the bare start). Each figure is the wall time of a fresh process, started
and waited for by this script; every verify report is kept (OUT/verify-N.json, OUT/quick-N.json).

    python3 bench/verify_side_by_side.py OUT ROUNDS PYTHON -- TRITONLOCK VERIFY-ARGS...

PYTHON is the environment's interpreter (the bare start runs there); the command after `--` is the verify to time
(its --json output is saved; `--quick --json` is added for the quick rows). CPU=1 (a machine without a GPU): the
bare start is `import torch` alone, and each verify's time is also given without the interpreter's kernels (the
runner's own phases for the kernels, their first calls and the compile step, from its "time:" note) — the ratio
issue 41 asks of the CPU box. PACKAGES="torchvision ..." (a lock with more native packages): also a bare import of
torch and those packages (+ CUDA init), against issue 41's second goal: verify <= that + 1 s.

Besides the wall times, each verify's time is split (from its report): `outside`, tritonlock's own work outside the
runner (the command's wall time less the runner's, start to report), and `unphased`, the runner's time outside its
named phases (the interpreter's start, the runner's imports, writing the report).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
rounds = int(sys.argv[2])
python = sys.argv[3]
verify = sys.argv[sys.argv.index("--") + 1:]
CPU = os.environ.get("CPU") == "1"
BARE = "import torch" if CPU else "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"
KERNEL_PHASES = ("vector_add", "matmul", "softmax", "attention", "fp8_matmul", "torch first calls", "compile")
PACKAGES = os.environ.get("PACKAGES", "").split()
BARE_PACKAGES = (f"import torch, {', '.join(PACKAGES)}" + ("" if CPU else "; torch.zeros(1, device='cuda'); "
                 "torch.cuda.synchronize()")) if PACKAGES else None


def split(path: Path, wall_s: float) -> tuple[float, float]:
    """(outside the runner, inside the runner but outside its phases), in seconds, from the saved report."""
    try:
        doc = json.loads(path.read_text())
        runner = float(doc["total_seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return float("nan"), float("nan")
    phased = 0.0
    for note in doc.get("notes", []):
        if note.startswith("time: "):
            phased = sum(float(part.rsplit(" ", 2)[1]) for part in note[6:].split(", "))
    return wall_s - runner, runner - phased


def kernel_seconds(path: Path) -> float:
    """The runner's kernel phases (the interpreter's work on a CPU box), from its report's "time:" note."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return 0.0
    total = 0.0
    for note in doc.get("notes", []):
        if note.startswith("time: "):
            for part in note[6:].split(", "):
                name = part.rsplit(" ", 2)[0]  # "attention 0.22 s"
                if name.startswith(KERNEL_PHASES):
                    total += float(part.rsplit(" ", 2)[1])
    return total


def wall(cmd: list[str], save: Path | None = None) -> tuple[float, int]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if save is not None:
        save.write_text(p.stdout)
    return dt, p.returncode


rows = []
for i in range(rounds):
    row = {"round": i}
    row["import_torch"], _ = wall([python, "-I", "-c", "import torch"])
    row["import_torch_cuda"], _ = wall([python, "-I", "-c", BARE])
    row["verify"], row["verify_rc"] = wall([*verify, "--json"], out / f"verify-{i}.json")
    row["quick"], row["quick_rc"] = wall([*verify, "--quick", "--json"], out / f"quick-{i}.json")
    if BARE_PACKAGES:
        row["import_packages"], _ = wall([python, "-I", "-c", BARE_PACKAGES])
    for key in ("verify", "quick"):
        row[f"{key}_outside"], row[f"{key}_unphased"] = split(out / f"{key}-{i}.json", row[key])
    if CPU:
        row["verify_less_kernels"] = row["verify"] - kernel_seconds(out / f"verify-{i}.json")
        row["quick_less_kernels"] = row["quick"] - kernel_seconds(out / f"quick-{i}.json")
    rows.append(row)
    print(json.dumps(row), flush=True)
(out / "side-by-side.json").write_text(json.dumps(rows, indent=1))
med = {k: statistics.median(r[k] for r in rows) for k in ("import_torch", "import_torch_cuda", "verify", "quick")}
print("\nround  import torch  import torch + CUDA init  verify (ratio)  verify --quick (ratio)")
for r in rows:
    print(f"{r['round']:5}  {r['import_torch']:12.2f}  {r['import_torch_cuda']:24.2f}  {r['verify']:6.2f} "
          f"({r['verify'] / r['import_torch_cuda']:.2f})  {r['quick']:6.2f} ({r['quick'] / r['import_torch_cuda']:.2f})")
print(f"median {med['import_torch']:12.2f}  {med['import_torch_cuda']:24.2f}  {med['verify']:6.2f} "
      f"({med['verify'] / med['import_torch_cuda']:.2f})  {med['quick']:6.2f} ({med['quick'] / med['import_torch_cuda']:.2f})")
if CPU:
    for key in ("verify_less_kernels", "quick_less_kernels"):
        per = sorted(r[key] / r["import_torch"] for r in rows)
        print(f"{key.replace('_', ' ')} / import torch, per round: {', '.join(f'{x:.2f}' for x in per)}; median "
              f"{statistics.median(per):.2f} (goal <= 1.25)")
for key in ("verify_outside", "verify_unphased", "quick_outside", "quick_unphased"):
    print(f"{key.replace('_', ' ')} (s), per round: {', '.join(f'{r[key]:.2f}' for r in rows)}; median "
          f"{statistics.median(r[key] for r in rows):.2f}")
if BARE_PACKAGES:
    extra = sorted(r["verify"] - r["import_packages"] for r in rows)
    print(f"verify - ({BARE_PACKAGES}), per round: {', '.join(f'{x:+.2f}' for x in extra)} s; median "
          f"{statistics.median(extra):+.2f} s (goal <= +1 s)")
print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; CPUs {os.cpu_count()}")
ratios = sorted(r["verify"] / r["import_torch_cuda"] for r in rows)
print(f"verify / (import torch + CUDA init), per round: {', '.join(f'{x:.2f}' for x in ratios)}; median "
      f"{statistics.median(ratios):.2f} (goal <= 1.25)")
