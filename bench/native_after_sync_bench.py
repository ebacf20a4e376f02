"""`tritonlock resolve` of examples/inference with no binary facts kept, on a machine whose uv cache holds the locked
wheels (it synced this lock before: a second project, a re-resolve after the fact cache was cleared, a teammate's
lock on a box that ran it), beside the code before the native rule, interleaved.

Usage: python bench/native_after_sync_bench.py --other PYTHON [--repeat N] [-o FILE]
    PYTHON: the interpreter of a venv with the tritonlock to compare against (e.g. a worktree of the commit before)

uv's cache is a folder of the benchmark's own (UV_CACHE_DIR), filled the way a sync fills it: every file each
target locks installed by uv (`uv pip install --target`, for the target's Python and platform: the examples'
Python 3.12 is not on every machine that runs this). Each timed run of this code starts with the binary facts
forgotten, so each one reads every wheel's facts, from the files uv unpacked. This code with the rule given nothing
to read is timed too: "the code before" answers from today's index, which may ask it for other rounds than when
the rule came (vLLM 0.34.0 pins a flashinfer-python that PyPI does not have: one more check for both).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from native_bench import forget, run  # noqa: E402 — the same timed resolve (with the rule or without)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "inference"
GLIBC = {"h200": "2.35", "a100-r535": "2.31"}  # examples/inference/triton-env.toml


def fill_uv_cache(root: Path, env: dict[str, str], work: Path) -> float:
    """Every file the lock pins, installed by uv for each target (what a sync downloads and unpacks); seconds."""
    from tritonlock._subprocess import uv_bin
    from tritonlock.lock.lockfile import read_lock

    t0 = time.perf_counter()
    lock = read_lock(root / "triton-env.lock")
    for t in lock.targets:
        req = work / f"req-{t.name}.txt"
        subprocess.run([sys.executable, "-m", "tritonlock", "export", "--format", "requirements", "--target",
                        t.name, "-o", str(req)], cwd=root, env=env, check=True, capture_output=True)
        # the platform the lock was resolved for: the target's glibc, else the build's floor
        glibc = (GLIBC.get(t.name) or t.selection.glibc_floor or "2.28").replace(".", "_")
        py = t.selection.python or "3.12"
        p = subprocess.run([uv_bin(), "pip", "install", "--no-config", "--no-deps", "--target",
                            str(work / f"site-{t.name}"), "--python-version", py, "--python-platform",
                            f"x86_64-manylinux_{glibc}", "-r", str(req)], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"uv pip install for {t.name} failed:\n{p.stderr[-3000:]}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--other", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tl-bench-after-sync-") as tmp:
        root = Path(tmp) / "inference"
        shutil.copytree(EXAMPLE, root)
        (root / "triton-env.lock").unlink(missing_ok=True)
        cache = Path(tmp) / "native-cache"
        env = dict(os.environ, TRITONLOCK_NATIVE_CACHE=str(cache), UV_CACHE_DIR=str(Path(tmp) / "uv"))
        run(sys.executable, root, env)  # the lock, and uv's pages for both
        run(args.other, root, env)
        filled = fill_uv_cache(root, env, Path(tmp))
        run(sys.executable, root, env)

        read, cached, other, off = [], [], [], []
        for _ in range(args.repeat):
            forget(cache)
            read.append(run(sys.executable, root, env))
            cached.append(run(sys.executable, root, env))
            other.append(run(args.other, root, env))
            off.append(run(sys.executable, root, env, rule=False))
        o, r, c = statistics.median(other), statistics.median(read), statistics.median(cached)
        n = statistics.median(off)
        lines = [f"resolve examples/inference (2 targets) with the locked wheels in uv's cache (filled by uv in "
                 f"{filled:.0f} s), median of {args.repeat}, interleaved, {os.cpu_count()} cores:",
                 f"  without the native rule, the code before it ({args.other}): {o:6.1f} s",
                 f"  without the native rule, this code (the rule reads nothing): {n:6.1f} s",
                 f"  with it, no facts kept (read from uv's cache): {r:6.1f} s   {r / o:.2f}x the code before, "
                 f"{r / n:.2f}x this code without it (goal 1.3x)",
                 f"  with it, facts kept:                          {c:6.1f} s   {c / o:.2f}x the code before, "
                 f"{c / n:.2f}x this code without it (goal 1.05x)",
                 f"  runs: before {[round(x, 1) for x in other]} / without {[round(x, 1) for x in off]} / read "
                 f"{[round(x, 1) for x in read]} / kept {[round(x, 1) for x in cached]}"]
        print("\n".join(lines))
        if args.output:
            Path(args.output).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
