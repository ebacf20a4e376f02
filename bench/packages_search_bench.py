"""The packages decision (one search: the facts first, then uv per torch line) on real packages, side by side with a
plain `uv pip compile` of the same requirements in the user's order (your default index: PyPI or your mirror): what
each locks, and the time ratio.

Usage: python bench/packages_search_bench.py [--repeat N] [--cold] [--only NAME] [-o FILE]    (needs the network)

Each case is resolved by both tools for the same machine (platform, Python), interleaved (a busy machine slows both
alike), the median of --repeat runs. Warm (the default): uv's cache and tritonlock's (the wheels' binary facts, kept
METADATA) warmed by a first untimed run of each tool, so the ratio compares decisions, not downloads. --cold: both
start from empty caches every run (a fresh UV_CACHE_DIR for both, a fresh XDG_CACHE_HOME and TRITONLOCK_NATIVE_CACHE
for tritonlock). Both re-resolve from nothing (uv with --upgrade, as tritonlock resolve --upgrade), and neither may
download a Python (UV_PYTHON_DOWNLOADS=never). The cases are issue 21's and issue 39's: package sets whose newest
releases fight each other (vllm + sglang, vllm + xformers), whose order matters (lmcache before vllm), a pin below
newest whose partner needs an old release (vllm==0.19.* + lmcache), an extra only old releases have (unsloth), CUDA 12
builds beside CUDA 13 torch, a package with no code for the GPU (sgl-kernel on a V100), a Linux-only package on a Mac,
a training stack and an inference mix.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

H200 = {"name": "h200", "driver": "580.95.05", "gpus": ["9.0"], "glibc": "2.35"}
RTX4090_R550 = {"name": "rtx4090", "driver": "550.54.15", "gpus": ["8.9"], "glibc": "2.35"}
V100_R535 = {"name": "v100", "driver": "535.183.01", "gpus": ["7.0"], "glibc": "2.35"}
T4_R535 = {"name": "t4", "driver": "535.183.01", "gpus": ["7.5"], "glibc": "2.31"}
MAC = {"name": "mac", "os": "macos", "arch": "arm64", "macos": "14.5"}

# name, packages (the user's order), target, torch =, what the best answer is (issues 21 and 39)
CASES = [
    ("numpy+requests", ["numpy", "requests"], H200, "", "both at their newest, torch newest"),
    # (PyPI on 2026-12-04: vllm 0.34.0 needs flashinfer-python==0.7.3, which PyPI does not serve; vllm 0.33.0 pins
    # torch 2.14.0, beside which no lmcache release loads — 0.5.6 and the pre-release 0.5.7rc2 call a c10 symbol
    # torch 2.14.0 does not export)
    ("vllm+lmcache", ["vllm", "lmcache"], H200, "", "a conflict naming both (vllm 0.33.0, torch 2.14.0, no lmcache "
                                                    "loads there); fix: vllm<=0.32.0 (+ lmcache 0.5.6, torch 2.13.0)"),
    ("lmcache+vllm", ["lmcache", "vllm"], H200, "", "lmcache 0.5.6 + vllm 0.32.0 + torch 2.13.0 (uv alone: vllm "
                                                    "0.2.5)"),
    ("vllm+lmcache/R550", ["vllm", "lmcache"], RTX4090_R550, "", "vllm 0.19.1 + lmcache 0.4.4 + torch 2.10.0"),
    ("vllm0.19+lmcache", ["vllm==0.19.*", "lmcache"], H200, "", "vllm 0.19.1 + lmcache 0.4.4 + torch 2.10.0"),
    ("unsloth-cu124", ["unsloth[cu124-torch240]"], H200, "", "torch 2.4.1 + unsloth"),
    ("vllm+xformers", ["vllm", "xformers"], H200, "", "a conflict naming both; fix: the newest vllm that admits "
                                                      "xformers (0.19.1)"),
    ("vllm+sglang", ["vllm", "sglang"], H200, "", "a conflict naming both, with the least fix"),
    ("vllm+sglang/R550", ["vllm", "sglang"], RTX4090_R550, "", "the same decision as the H200's: a conflict"),
    ("vllm+flashinfer", ["vllm", "flashinfer-python"], H200, "", "both at the newest vllm allows"),
    ("sgl-kernel", ["sgl-kernel"], H200, "", "sgl-kernel newest (a CUDA 12 build of torch 2.9.1's C++ API: torch "
                                               "2.10.0's libc10 lacks symbols it calls) + torch 2.9.1"),
    ("sgl-kernel/V100", ["sgl-kernel"], V100_R535, "", "a conflict: no code for sm_70"),
    ("nccl/mac", ["nvidia-nccl-cu12"], MAC, "", "a conflict naming the platform (exit 3)"),
    ("training", ["transformers", "accelerate", "peft", "trl", "bitsandbytes", "datasets", "liger-kernel"], H200, "",
     "each at its newest"),
    ("inference", ["vllm", "flashinfer-python", "liger-kernel", "huggingface-hub"], H200, "",
     "vllm newest and what it pins"),
    ("vllm/torch2.15", ["vllm"], H200, "==2.15.*", "a conflict: fix torch = \"==2.14.*\""),
    # (stop 65: a per-CUDA library picked at run time, and a provider library loaded by name)
    ("bnb<0.44/T4", ["bitsandbytes<0.44", "transformers"], T4_R535, "", "bitsandbytes 0.43.3 + torch 2.6.0 (cu124): "
     "its libbitsandbytes_cuda*.so stop at CUDA 12.5, and it loads the one for torch's exact CUDA"),
    ("onnxruntime-gpu/R550", ["onnxruntime-gpu"], RTX4090_R550, "", "onnxruntime-gpu 1.26.0 (its CUDA provider a "
     "CUDA 12 build) + torch 2.10.0; 1.28.0-1.31.1's providers are CUDA 13 builds"),
]


def _platform(t: dict[str, object]) -> str:
    return "aarch64-apple-darwin" if t.get("os") == "macos" else f"x86_64-manylinux_{str(t['glibc']).replace('.', '_')}"


def _toml(v: object) -> str:
    return json.dumps(v)


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, proc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cold", action="store_true", help="both tools from empty caches, every run")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("-o", "--output", help="also write the report here")
    args = ap.parse_args()
    from uv import find_uv_bin

    uv = str(find_uv_bin())
    tl = [sys.executable, "-m", "tritonlock"]
    # Measure as installed: with byte-code on disk, as pip leaves it after an install (this box sets
    # PYTHONDONTWRITEBYTECODE, so an editable checkout would compile every module it imports on every run)
    import tritonlock

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(tritonlock.__file__).parent)], check=True)
    report: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        report.append(line)

    when = time.strftime("%Y-%m-%d %H:%M")
    say(f"{'cold' if args.cold else 'warm'} caches, median of {args.repeat}, interleaved; {when}")
    say("case                  uv pip compile    tritonlock resolve   ratio   uv locks / tritonlock locks")
    for name, packages, target, torch, best in CASES:
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory(prefix="tl-bench-search-") as tmp:
            root = Path(tmp)
            body = "".join(f"{k} = {_toml(v)}\n" for k, v in target.items())
            (root / "triton-env.toml").write_text(
                f'[environment]\npython = "3.12"\npackages = {_toml(packages)}\n'
                + (f"torch = {_toml(torch)}\n" if torch else "")
                + f'[indexes]\ntorch = "default"\n[[targets]]\n{body}', encoding="utf-8")
            (root / "requirements.in").write_text("\n".join(packages + [f"torch{torch}" if torch else "torch"])
                                                  + "\n", encoding="utf-8")
            # --upgrade as tritonlock's (an existing uv.txt would otherwise be uv's preferences: a lock to start
            # from, 3x faster here); no Python downloads for either (uv would fetch a CPython 3.12 to resolve for it)
            uv_cmd = [uv, "pip", "compile", "requirements.in", "--no-config", "--python-version", "3.12",
                      "--python-platform", _platform(target), "--generate-hashes", "--quiet", "-o", "uv.txt",
                      "--upgrade", "--no-python-downloads"]
            tl_cmd = [*tl, "resolve", "--upgrade", "--json"]
            env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
            if not args.cold:
                _run(uv_cmd, root, env)  # warm uv's cache for both
                _run(tl_cmd, root, env)
            uv_t: list[float] = []
            tl_t: list[float] = []
            for _ in range(args.repeat):  # interleaved, so load on the machine hits both alike
                with tempfile.TemporaryDirectory(prefix="tl-bench-cold-") as fresh:
                    cold = {"UV_CACHE_DIR": f"{fresh}/uv", "XDG_CACHE_HOME": f"{fresh}/xdg",
                            "TRITONLOCK_NATIVE_CACHE": f"{fresh}/native"} if args.cold else {}
                    t, uvp = _run(uv_cmd, root, {**env, **cold})
                    uv_t.append(t)
                    if args.cold:  # (uv's cache of that run is not tritonlock's: each starts empty)
                        cold["UV_CACHE_DIR"] = f"{fresh}/uv-tl"
                    t, tlp = _run(tl_cmd, root, {**env, **cold})
                    tl_t.append(t)
            pins = {}
            if uvp.returncode == 0:
                pins = dict(line.split("==", 1) for line in (root / "uv.txt").read_text().splitlines()
                            if "==" in line and not line.startswith((" ", "#")))
            names = [re.split(r"[\[<>=!~ ;]", p, maxsplit=1)[0] for p in packages]
            uv_says = " + ".join(f"{p} {pins.get(p, '?').split()[0]}" for p in [*names, "torch"]) \
                if pins else f"fails (exit {uvp.returncode})"
            try:
                doc = json.loads(tlp.stdout)
                (t,) = doc["targets"]
            except (ValueError, KeyError):
                doc, t = {}, {}
            if t.get("ok"):
                got = {d["name"]: d["version"] for d in t.get("direct", [])}
                tl_says = " + ".join(f"{p} {got.get(p, '?')}" for p in names) + f" + torch {t.get('torch')}"
            else:
                first = (t.get("conflict") or tlp.stderr.strip() or "?").splitlines()[0]
                tl_says = f"exit {tlp.returncode}: {first[:160]}"
            u, w = statistics.median(uv_t), statistics.median(tl_t)
            over = "  OVER 120 s" if max(tl_t) > 120 else ""
            say(f"{name:20s}  {u:8.1f} s        {w:8.1f} s        {w / u:5.2f}x  uv: {uv_says}{over}")
            say(f"{'':20s}  {'':8s}          {'':8s}                  tritonlock: {tl_says}")
            say(f"{'':20s}  best answer (issues 21, 39): {best}")
    if args.output:
        Path(args.output).write_text("\n".join(report) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
