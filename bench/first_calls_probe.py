"""Where torch's first calls in `tritonlock verify` go (issue 41), on the GPU machine's own torch: each group of
first calls that verify's runner makes while the Triton binaries load, timed in a fresh process of its own (a first
call's cost — loading a kernel, picking a cuBLAS algorithm, building an SDPA plan — is paid once a process), then
all at once in threads as the runner makes them.

Usage (GPU machine, the image's python): python bench/first_calls_probe.py [ROUNDS]
Prints one JSON line per process: {"group": ..., "import_torch": s, "cuda_init": s, "first_calls": s, "parts": {...}}
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time

GROUPS = ("none", "mm64", "mm_timed", "attn_ref", "sdpa", "all_threads", "all_threads_early")


def _child(group: str) -> None:
    t0 = time.perf_counter()
    import torch

    t1 = time.perf_counter()
    torch.zeros(1, device="cuda")
    t2 = time.perf_counter()
    parts: dict[str, float] = {}

    def timed(name: str, fn) -> None:  # noqa: ANN001
        s = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        parts[name] = round(time.perf_counter() - s, 3)

    def mm(dt, m, n, k):  # noqa: ANN001, ANN202
        def go() -> None:
            a = torch.empty(m, k, device="cuda", dtype=dt)
            b = torch.empty(n, k, device="cuda", dtype=dt).t() if dt == torch.float32 else \
                torch.empty(k, n, device="cuda", dtype=dt)
            torch.matmul(a, b)
        return go

    def attn_ref(causal: bool):  # noqa: ANN202
        def go() -> None:
            q = torch.zeros(1, 2, 333, 64, device="cuda", dtype=torch.float16).double()
            s = (q @ q.transpose(-1, -2)) / math.sqrt(64)
            if causal:
                rows = torch.arange(333, device="cuda")[:, None]
                s = s.masked_fill(torch.arange(333, device="cuda")[None, :] > rows, float("-inf"))
            torch.softmax(s, dim=-1) @ q
        return go

    def sdpa(dt, d, causal):  # noqa: ANN001, ANN202
        def go() -> None:
            q = torch.zeros(8, 16, 4096, d, device="cuda", dtype=dt)
            torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=causal)
        return go

    jobs: list[tuple[str, object]] = []
    if group in ("mm64", "all_threads", "all_threads_early"):
        jobs.append(("mm fp64 1008", mm(torch.float64, 1008, 1008, 1008)))
    if group in ("mm_timed", "all_threads", "all_threads_early"):
        torch.backends.cuda.matmul.allow_tf32 = True
        jobs += [(f"mm {dt} 8192", mm(dt, 8192, 8192, 8192)) for dt in (torch.float16, torch.bfloat16, torch.float32)]
    if group in ("attn_ref", "all_threads", "all_threads_early"):
        jobs += [("attn ref", attn_ref(False)), ("attn ref causal", attn_ref(True))]
    if group in ("sdpa", "all_threads", "all_threads_early"):
        jobs += [(f"sdpa {dt} d{d}{' causal' if c else ''}", sdpa(dt, d, c))
                 for dt in (torch.float16, torch.bfloat16) for d in (64, 128) for c in (False, True)]
    t3 = time.perf_counter()
    if group.startswith("all_threads"):
        threads = [threading.Thread(target=timed, args=(n, f)) for n, f in jobs]
        for t in threads:
            t.start()
        if group == "all_threads_early":  # Triton imported meanwhile, as the runner would if they started first
            s = time.perf_counter()
            import triton  # noqa: F401
            parts["import triton (beside)"] = round(time.perf_counter() - s, 3)
        for t in threads:
            t.join()
    else:
        for n, f in jobs:
            timed(n, f)
    t4 = time.perf_counter()
    print(json.dumps({"group": group, "import_torch": round(t1 - t0, 3), "cuda_init": round(t2 - t1, 3),
                      "first_calls": round(t4 - t3, 3), "parts": parts}), flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2])
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for _ in range(rounds):
        for g in GROUPS:
            subprocess.run([sys.executable, __file__, "--child", g], check=False)


if __name__ == "__main__":
    main()
