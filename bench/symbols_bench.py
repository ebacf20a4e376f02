"""What checking torch symbols costs (issue 40): `tritonlock resolve` of a project whose package links torch's C++ API
and names no torch (sgl-kernel), with its wheels' facts kept (a re-resolve) — the rule checking each module's torch
symbols against the locked torch's exports, beside the same code with that check given no exports — interleaved; and
what the first read of a torch build's exports costs on a machine (not shipped: every library of the wheel streamed
as far as its symbols need; shipped in compat/torch-symbols/: the set decoded).

Usage: python bench/symbols_bench.py [--repeat N] [--torch 2.9.1] [-o FILE]
Needs the default index (PyPI): the resolve and the torch wheel. Run with UV_PYTHON_DOWNLOADS=never where uv cannot
download Pythons.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INTENT = """[environment]
python = "3.12"
torch = "=={torch}"
packages = ["sgl-kernel==0.3.21"]

[indexes]
torch = "default"

[[targets]]
name = "h100"
glibc = "2.35"
driver = "580.95.05"
gpus = ["9.0"]
"""

# The same tritonlock with the torch-symbol check given no exports (what the check costs, all else equal)
# (both ways it is asked: the closure's torch wheel, and a line's torch whose set is shipped, before uv is asked)
NO_SYMBOLS = ("import sys, tritonlock.native.judge as j; j.torch_exports = lambda sel, pkgs: 'not asked (bench)'; "
              "j.shipped_exports = lambda sha256, filename: None; "
              "sys.argv = ['tritonlock', 'resolve', '--upgrade', '--json']; from tritonlock._entry import main; main()")


def resolve(root: Path, env: dict[str, str], *, symbols: bool) -> float:
    cmd = [sys.executable, "-m", "tritonlock", "resolve", "--upgrade", "--json"] if symbols else \
        [sys.executable, "-c", NO_SYMBOLS]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if p.returncode not in (0, 3):
        raise SystemExit(f"resolve failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return took


def in_process(root: Path, env: dict[str, str]) -> str:
    """The torch-symbol check alone, timed in a fresh process on the lock the resolve wrote: the torch build's
    exports (the shipped set decoded, or the kept one) and each module's symbols looked up."""
    code = f"""
import time, json
from tritonlock.lock.lockfile import read_lock
from tritonlock.native import judge
from tritonlock.native.read import cached
from tritonlock.native.rule import check, with_reach, Item
lock = read_lock({str(root / "triton-env.lock")!r})
(t,) = lock.targets
facts = {{f.sha256: f for f in lock.native}}
facts.update({{s: c for s in facts if (c := cached(s, gpu=True)) is not None}})
t0 = time.perf_counter(); ex = judge.torch_exports(t.selection, t.packages); t1 = time.perf_counter()
items = [Item(name=p.name, version=p.version, facts=facts[w.sha256]) for p in t.packages for w in p.wheels
         if w.sha256 in facts][:50]
n = sum(len(m.torch_symbols) for i in items for m in i.facts.members)
t2 = time.perf_counter(); miss = [s for i in items for m in i.facts.members for s in ex.missing(m.torch_symbols)]
t3 = time.perf_counter()
print(json.dumps([round((t1 - t0) * 1000), round((t3 - t2) * 1000, 1), n, len(miss), ex.source]))
"""
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        return f"not measured ({p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode})"
    import json

    exports_ms, lookup_ms, n, miss, source = json.loads(p.stdout.strip().splitlines()[-1])
    return (f"exports {exports_ms} ms ({source}), {n} symbols looked up in {lookup_ms} ms, {miss} missing")


def first_read(version: str, cache: Path) -> tuple[float, float, int, str]:
    """(seconds to read a torch wheel's exports on a new machine, seconds to decode the shipped set, names, which
    wheel)."""
    code = f"""
import time, json
from tritonlock.lock.index import IndexClient, default_index
from tritonlock.native import torchsyms
idx = IndexClient(default_index())
(f,) = [f for f in idx.files("torch") if f.filename == "torch-{version}-cp312-cp312-manylinux_2_28_x86_64.whl"]
t = time.perf_counter(); names = torchsyms.read_remote(f.url, f.size, idx.session); read = time.perf_counter() - t
row = next((r for r in torchsyms.shipped() if f.sha256 in r.sha256), None)
t = time.perf_counter(); torchsyms._shipped_set(row) if row else None; dec = time.perf_counter() - t
print(json.dumps([read, dec if row else -1, len(names), f.filename]))
"""
    env = dict(os.environ, TRITONLOCK_NATIVE_CACHE=str(cache))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    import json

    read, dec, n, name = json.loads(p.stdout.strip().splitlines()[-1])
    return read, dec, n, name


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--torch", default="2.9.1")
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="tl-bench-symbols-") as tmp:
        root = Path(tmp) / "proj"
        root.mkdir()
        (root / "triton-env.toml").write_text(INTENT.format(torch=a.torch), encoding="utf-8")
        cache = Path(tmp) / "native-cache"
        env = dict(os.environ, TRITONLOCK_NATIVE_CACHE=str(cache))
        resolve(root, env, symbols=True)  # facts read, uv's cache warm
        resolve(root, env, symbols=False)
        on, off = [], []
        for _ in range(a.repeat):
            on.append(resolve(root, env, symbols=True))
            off.append(resolve(root, env, symbols=False))
        lock = (root / "triton-env.lock").read_text(encoding="utf-8") if (root / "triton-env.lock").exists() else ""
        check_ms = in_process(root, env)
        med_on, med_off = statistics.median(on), statistics.median(off)
        out.append(f"resolve sgl-kernel 0.3.21 + torch {a.torch} (facts kept), {a.repeat} interleaved runs:")
        out.append(f"  with the torch-symbol check: median {med_on:.2f} s ({', '.join(f'{x:.2f}' for x in on)})")
        out.append(f"  without it:                  median {med_off:.2f} s ({', '.join(f'{x:.2f}' for x in off)})")
        out.append(f"  ratio {med_on / med_off:.3f} (goal <= 1.1); lock written: {bool(lock)}")
        out.append(f"  the check itself, in one process (fresh): {check_ms}")
        read, dec, n, name = first_read(a.torch, Path(tmp) / "fresh-cache")
        out.append(f"first read of {name}'s exports on a new machine (not shipped): {read:.1f} s, {n} names")
        out.append("  the shipped set decoded instead: " + (f"{dec * 1000:.0f} ms" if dec >= 0 else "not shipped"))
    text = "\n".join(out)
    print(text)
    if a.output:
        Path(a.output).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
