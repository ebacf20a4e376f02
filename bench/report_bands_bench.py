"""`tritonlock report bands` on a team's records: N `verify --record` runs (default 20,000) of GPU nodes, each with
the 17 timed rows verify records on every GPU of the node (--gpus, default 1), a tenth of them failed runs, in one
records file — as a user runs it (a fresh process), wall and CPU time, and the same time for reading the file alone
(tritonlock.records.read_records), so the command's own work shows beside the parse.

    python bench/report_bands_bench.py [--records 20000] [--gpus 1] [--repeat 3] [--tritonlock PATH]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tritonlock.records import KernelSummary, Record, dumps  # noqa: E402

ROWS = [("vector_add", "fp32", "GB/s", 4000.0), ("softmax", "fp32", "GB/s", 3000.0),
        ("matmul", "fp16", "TFLOP/s", 600.0), ("matmul", "bf16", "TFLOP/s", 600.0), ("matmul", "fp32", "TFLOP/s", 50.0),
        ("matmul", "tf32", "TFLOP/s", 300.0), ("fp8_matmul", "e4m3", "TFLOP/s", 1100.0)] + [
    (f"attention d{d}{c}", dt, "TFLOP/s", 300.0) for dt in ("fp16",) for d in (64, 128) for c in ("", " causal")] + [
    ("attention d128", "bf16", "TFLOP/s", 300.0), ("attention d64", "bf16", "TFLOP/s", 300.0),
    ("attention d128 causal", "bf16", "TFLOP/s", 300.0), ("attention d64 causal", "bf16", "TFLOP/s", 300.0),
    ("torch_compile", "fp32", "TFLOP/s", 20.0)]
GPUS = [("NVIDIA H200", "9.0"), ("NVIDIA H100 80GB HBM3", "9.0"), ("NVIDIA A100-SXM4-80GB", "8.0"),
        ("NVIDIA L4", "8.9")]


def records(n: int, gpus: int = 1) -> list[Record]:
    rnd = random.Random(0)
    out = []
    for i in range(n):
        model, cc = GPUS[i % len(GPUS)]
        kernels = tuple(KernelSummary(kernel=k, dtype=dt, device=f"cuda:{dev}", ok=True, metric=m,
                                      value=v * rnd.uniform(0.8, 1.1), torch_value=v, ratio=rnd.uniform(0.8, 1.1),
                                      speed="ok")
                        for dev in range(gpus) for k, dt, m, v in ROWS)
        out.append(Record(target=f"t{i % 7}", fingerprint=f"sha256:{i:016x}", packages_digest="sha256:0",
                          when="2026-12-01T12:00:00Z", host=f"node{i}", ok=i % 10 != 0, mode="gpu", os="linux",
                          arch="x86_64", driver="580.65.06", gpus=(f"{model} ({cc})",) * gpus, kernels=kernels))
    return out


def timed(cmd: list[str]) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tritonlock", default=f"{sys.executable} -m tritonlock")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tritonlock-bands-bench-") as tmp:
        path = Path(tmp) / "triton-env.verified.toml"
        path.write_text(dumps(records(a.records, a.gpus)), encoding="utf-8")
        print(f"{a.records} records, {path.stat().st_size / 1e6:.1f} MB; load {os.getloadavg()[0]:.2f}")
        read = [sys.executable, "-c", f"from tritonlock.records import read_records; read_records({str(path)!r})"]
        for name, cmd in (("read_records alone", read), ("report bands", [*a.tritonlock.split(), "report", "bands",
                                                                          str(path)])):
            runs = [timed(cmd) for _ in range(a.repeat)]
            if any(rc != 0 for _, _, rc in runs):
                print(f"{name:20s} FAILED (exit {runs[0][2]})")
                continue
            print(f"{name:20s} wall {min(w for w, _, _ in runs):6.2f} s (best of {a.repeat})   "
                  f"cpu {min(c for _, c, _ in runs):6.2f} s")


if __name__ == "__main__":
    main()
