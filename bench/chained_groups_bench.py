"""A pyproject.toml whose optional-dependency groups chain through the project's own name — g0 pulls in
"myproj[g1]", g1 "myproj[g2]", … (N groups, default 5,000, each with two requirements) — locked against a local
index (tests/pkgindex.py), then the commands that read it, each as a user runs it (a fresh process): wall time.

    python bench/chained_groups_bench.py [--groups 5000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from conftest import populate  # noqa: E402
from pkgindex import LocalIndex  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=5000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tritonlock-chain-bench-") as tmp:
        root = Path(tmp)
        idx = LocalIndex(root / "index")
        populate(idx)
        idx.start()
        try:
            lines = ['[project]', 'name = "myproj"', 'version = "0"', 'dependencies = ["einops"]', '',
                     '[project.optional-dependencies]']
            for i in range(a.groups):
                nxt = f'"myproj[g{i + 1}]", ' if i + 1 < a.groups else ''
                lines.append(f'g{i} = [{nxt}"numpy", "einops>=0.{i % 8}.{i}"]')
            lines += ['', '[tool.tritonlock]', 'extras = ["g0"]', '[tool.tritonlock.environment]', 'python = "3.11"',
                      'torch = "==2.6.0"', 'cuda = "cpu"', '[tool.tritonlock.indexes]',
                      f'torch = "{idx.url}/whl/{{backend}}"', f'default = "{idx.index_url("simple")}"']
            proj = root / "p"
            proj.mkdir()
            (proj / "pyproject.toml").write_text("\n".join(lines) + "\n")
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "TRITONLOCK_"))}
            env.update(PIP_CONFIG_FILE=os.devnull, UV_CACHE_DIR=str(root / "uv-cache"), UV_PYTHON_DOWNLOADS="never")
            print(f"{a.groups} chained groups; load {os.getloadavg()[0]:.2f}")
            for args in (["resolve"], ["resolve"], ["show"], ["check"], ["export", "--format", "uv"]):
                t = time.perf_counter()
                r = subprocess.run([sys.executable, "-m", "tritonlock", *args, "-p", str(proj)], capture_output=True,
                                   text=True, env=env, timeout=900)
                print(f"  {' '.join(args):22s} exit {r.returncode}  {time.perf_counter() - t:6.1f} s")
        finally:
            idx.stop()


if __name__ == "__main__":
    main()
