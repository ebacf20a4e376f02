"""`import torch` then CUDA's start, with and without the driver started in a thread before the import (what verify's
runner does: envchecks.preinit_cuda). Each measurement is a fresh interpreter; the times are taken inside it, from its
first line to a CUDA tensor made and synchronised, and printed; the interpreter then leaves without teardown.

    python3 bench/cuda_preinit.py ROUNDS
"""

import json
import subprocess
import sys

CHILD = r"""
import time, os, sys
t0 = time.perf_counter()
if sys.argv[1] == "pre":
    import ctypes, threading
    def run():
        cuda = ctypes.CDLL("libcuda.so.1")
        if cuda.cuInit(0) == 0:
            n = ctypes.c_int(0); cuda.cuDeviceGetCount(ctypes.byref(n))
            for i in range(n.value):
                dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
                cuda.cuDeviceGet(ctypes.byref(dev), i); cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
    threading.Thread(target=run, daemon=True).start()
import torch
t1 = time.perf_counter()
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
t2 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f} {t2 - t0:.3f}", flush=True)
os._exit(0)
"""

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
out: dict[str, list[list[float]]] = {"plain": [], "pre": []}
for _ in range(rounds):
    for mode in ("plain", "pre"):
        r = subprocess.run([sys.executable, "-I", "-c", CHILD, mode], capture_output=True, text=True, check=True)
        out[mode].append([float(x) for x in r.stdout.split()])
for mode, rows in out.items():
    tot = sorted(r[2] for r in rows)
    print(f"{mode:6} import torch / CUDA init / both (s): " + "; ".join(f"{a:.2f}/{b:.2f}/{c:.2f}" for a, b, c in rows)
          + f"  median both {tot[len(tot) // 2]:.2f}")
print(json.dumps(out))
