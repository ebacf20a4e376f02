"""Lock time against the number of targets: 1, 8 and 32 machines saved as host files (target-files).

Usage: python bench/fleet_bench.py [--repeat N] [--sizes 1,8,32]
Runs against the tests' local HTTP index (tests/pkgindex.py), so the network stays out. Each size is locked with
`lock_project(upgrade=True)` twice: as shipped (targets whose resolution inputs are identical share one
`uv pip compile`) and with sharing turned off (one compile per target), to show what the sharing buys.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import populate, write_intent  # noqa: E402
from pkgindex import LocalIndex  # noqa: E402

# A realistic mix: a few GPU models and driver branches, glibc of the distributions people run, three Pythons.
GPUS = [("8.0", "535.104.05"), ("8.6", "550.54.15"), ("8.9", "550.54.15"), ("9.0", "560.35.03"),
        ("7.5", "535.104.05"), ("8.0", "525.60.13"), (None, None)]
GLIBC = ["2.31", "2.35", "2.39", "2.28"]
PYTHONS = ["3.11", "3.12", "3.10"]


def host_file(i: int) -> str:
    cc, driver = GPUS[i % len(GPUS)]
    lines = ["[[targets]]", f'name = "node-{i:02d}"', 'os = "linux"', 'arch = "x86_64"',
             f'glibc = "{GLIBC[(i // len(GPUS)) % len(GLIBC)]}"', f'python = "{PYTHONS[(i // 3) % len(PYTHONS)]}"']
    if driver:
        lines += [f'driver = "{driver}"', f'gpus = ["{cc}"]']
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="1,8,32")
    args = ap.parse_args()
    os.environ["UV_PYTHON_DOWNLOADS"] = "never"
    from tritonlock.lock import closure
    from tritonlock import project
    from tritonlock.lock.lockfile import read_lock

    shared_key = closure.compile_key
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        idx = LocalIndex(Path(tmp) / "index")
        populate(idx)
        idx.start()
        try:
            for n in (int(x) for x in args.sizes.split(",")):
                proj = Path(tmp) / f"fleet{n}"
                (proj / "hosts").mkdir(parents=True)
                for i in range(n):
                    (proj / "hosts" / f"node-{i:02d}.toml").write_text(host_file(i))
                write_intent(proj, idx, 'target-files = ["hosts/*.toml"]\n[environment]\ntorch = ">=2.6,<2.8"\n')
                result = {}
                for mode in ("shared", "one per target"):
                    closure.compile_key = (shared_key if mode == "shared" else  # type: ignore[assignment]
                                           lambda p, d, **kw: (p.selection.target.name, *shared_key(p, d, **kw)))
                    times = []
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        project.lock_project(proj / "triton-env.toml", proj / "triton-env.lock", upgrade=True)
                        times.append(time.perf_counter() - t0)
                    result[mode] = statistics.median(times)
                closure.compile_key = shared_key  # type: ignore[assignment]
                lock = read_lock(proj / "triton-env.lock")
                from tritonlock.compat.matrix import load_matrix
                from tritonlock.decide.lockplan import lock_plan

                keys = {shared_key(lock_plan(t.selection, load_matrix()), lock.default_index) for t in lock.targets}
                rows.append((n, len(keys), result["shared"], result["one per target"]))
                print(f"{n:3d} targets, {len(keys):2d} distinct closures: {result['shared']:6.2f} s shared, "
                      f"{result['one per target']:6.2f} s one compile per target", flush=True)
        finally:
            idx.stop()
    print("\n| targets | distinct closures | lock time (shared compiles) | per target | one compile per target | per target |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, k, a, b in rows:
        print(f"| {n} | {k} | {a:.2f} s | {a / n * 1000:.0f} ms | {b:.2f} s | {b / n * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
