# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""Several GPUs: an NCCL all-reduce across one spawned process per GPU (gloo over CPU processes is the test hook)."""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

import datetime
import json
import os
import tempfile
import time
from typing import Any

from .report import Report, tail as _tail

ORDER = (1 << 20, 0)  # after every device's rows


def allreduce_worker(rank: int, world: int, backend: str, init: str, outdir: str, numel: int) -> None:
    """One rank: all-reduce rank+1 from everyone, check the sum, time a few more rounds."""
    import torch
    import torch.distributed as dist

    gpu = backend == "nccl"
    result: dict[str, Any] = {"rank": rank, "ok": False}
    try:
        if gpu:
            torch.cuda.set_device(rank)
        dist.init_process_group(backend, init_method=init, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=120))
        x = torch.full((numel,), float(rank + 1), device=f"cuda:{rank}" if gpu else "cpu")
        sync = torch.cuda.synchronize if gpu else (lambda: None)
        dist.all_reduce(x)
        sync()
        want = world * (world + 1) / 2
        result["ok"] = bool((x == want).all())
        result["max_err"] = float((x - want).abs().max())
        for _ in range(2):
            dist.all_reduce(x)
        sync()
        dist.barrier()
        iters = 10
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        sync()
        sec = (time.perf_counter() - t0) / iters
        # bus bandwidth as nccl-tests defines it: algorithm bandwidth x 2(n-1)/n
        result["busbw"] = numel * 4 / sec / 1e9 * 2 * (world - 1) / world
        dist.destroy_process_group()
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {e}"
    with open(os.path.join(outdir, f"rank{rank}.json"), "w", encoding="utf-8") as f:
        json.dump(result, f)


def run_allreduce(r: Report, n: int, backend: str = "nccl") -> None:
    """All-reduce across n spawned processes (one per GPU for nccl; gloo on the CPU is the test hook)."""
    import torch.multiprocessing as mp

    # 256 MiB of fp32 on GPUs, so bandwidth rather than latency is measured; a token size on the CPU
    numel = (64 << 20) if backend == "nccl" else (1 << 16)
    kernel = f"{backend}_all_reduce"
    label = f"cuda:0..{n - 1}" if backend == "nccl" else f"cpu x{n}"
    with tempfile.TemporaryDirectory(prefix="tritonlock-allreduce-") as tmp:
        init = "file://" + os.path.join(tmp, "rendezvous")
        try:
            mp.start_processes(allreduce_worker, args=(n, backend, init, tmp, numel), nprocs=n,
                               join=True, start_method="spawn")
        except Exception as e:
            r.kernel(kernel, label, "fp32", False, None, f"the all-reduce processes failed: {_tail(str(e))}", order=ORDER)
            return
        ranks = []
        for i in range(n):
            try:
                with open(os.path.join(tmp, f"rank{i}.json"), encoding="utf-8") as f:
                    ranks.append(json.load(f))
            except (OSError, ValueError):
                ranks.append({"rank": i, "ok": False, "error": "no result written"})
    bad = [x for x in ranks if not x.get("ok")]
    if bad:
        words = "; ".join(f"rank {x['rank']}: {x.get('error', 'wrong sum')}" for x in bad)
        r.kernel(kernel, label, "fp32", False, None, f"all-reduce over {n} processes failed: {words}", order=ORDER)
        return
    busbw = min(float(x["busbw"]) for x in ranks)
    r.kernel(kernel, label, "fp32", True, max(float(x["max_err"]) for x in ranks),
             f"{n} processes, {numel * 4 / 2**20:g} MiB all-reduce ({backend}) gave the right sum on "
             "every rank; value is bus bandwidth (no torch comparison)", ("GB/s", busbw, None), order=ORDER)


