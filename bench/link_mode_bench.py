"""What each venv owning its files costs: a torch venv (torch 2.13.0 from the default index — PyPI's is the CUDA
build, about 4.7 GB installed) synced from one warm uv cache, with uv's hard links (UV_LINK_MODE=hardlink, what
every venv got before) and with tritonlock's default (copy-on-write clones where the filesystem makes them, else
copies): `sync --no-verify` wall and CPU time, and the disk each venv adds beside the cache (du of cache + venv,
less du of the cache: a hard-linked file is counted once).

    python bench/link_mode_bench.py [--torch 2.13.0] [--keep DIR]

It downloads torch's wheels once into a uv cache of its own (under a temporary folder, removed at the end).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def du(*paths: Path) -> int:
    out = subprocess.run(["du", "-s", "-B1", *map(str, paths)], capture_output=True, text=True, check=True).stdout
    return sum(int(line.split()[0]) for line in out.splitlines())


def tl(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "tritonlock", *args], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"tritonlock {' '.join(args)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--torch", default="2.13.0")
    ap.add_argument("--keep", help="work here (kept) instead of a temporary folder")
    a = ap.parse_args()
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="tritonlock-link-bench-"))
    try:
        proj = root / "proj"
        proj.mkdir(parents=True, exist_ok=True)
        (proj / "triton-env.toml").write_text(f'[environment]\npython = "3.11"\ntorch = "=={a.torch}"\n'
                                              '[indexes]\ntorch = "default"\n')
        base = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "TRITONLOCK_"))}
        base.update(UV_CACHE_DIR=str(root / "uv-cache"), UV_PYTHON_DOWNLOADS="never")
        tl(["resolve", "-p", str(proj)], base)
        wall, _ = tl(["sync", "--no-verify", "-p", str(proj), "--venv", str(root / "warm")], base)  # fills the cache
        shutil.rmtree(root / "warm")
        cache = du(root / "uv-cache")
        print(f"torch {a.torch}; first sync (download into an empty cache) {wall:.0f} s; cache {cache / 1e9:.2f} GB; "
              f"load {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
        for name, extra in (("hard links (UV_LINK_MODE=hardlink)", {"UV_LINK_MODE": "hardlink"}),
                            ("tritonlock's default", {})):
            venv = root / ("venv-" + ("hardlink" if extra else "default"))
            wall, cpu = tl(["sync", "--no-verify", "-p", str(proj), "--venv", str(venv)], {**base, **extra})
            added = du(root / "uv-cache", venv) - cache
            print(f"  {name:36s} sync {wall:6.1f} s wall {cpu:6.1f} s CPU; venv {du(venv) / 1e9:5.2f} GB, "
                  f"{added / 1e9:5.2f} GB more disk beside the cache")
            shutil.rmtree(venv)
    finally:
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
