"""Issue 26's yardstick sweep: verify's tf32, FP8 and head-dim-128 attention kernels in candidate shapes against
cuBLAS, torch._scaled_mm and SDPA on one GPU, timed as verify times them (CUDA events around alternating batches,
the median of rounds). Every candidate is the runner's own kernel (tlverify.tma_gemm, k_matmul, k_fp8, k_attention)
with another configuration; each is checked against torch's answer before it is timed.

    python3 bench/kernel_sweep.py OUT        # on the GPU machine, from the repository root

Compiles every candidate first in worker processes (Triton's cache), then times them one at a time in this process.
Writes OUT/sweep.json and prints one table per kernel, best first.
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

RUNNER = Path(__file__).resolve().parent.parent / "tritonlock" / "verify" / "runner"
sys.path.insert(0, str(RUNNER))

T = True
F = False
# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, split epilogue, warp-specialised)
TF32 = [(128, 256, 32, 8, 3, T, F), (128, 256, 32, 8, 4, T, F), (128, 128, 32, 8, 4, F, F), (128, 128, 32, 4, 4, F, F),
        (128, 128, 32, 8, 5, F, F), (128, 128, 64, 8, 3, T, F), (256, 128, 32, 8, 3, T, F),
        (128, 256, 32, 8, 3, T, T), (128, 128, 32, 8, 4, F, T)]
FP8 = [(128, 256, 128, 8, 3, T, F), (128, 256, 128, 8, 4, T, F), (128, 256, 128, 8, 3, F, F),
       (128, 128, 128, 8, 4, F, F), (128, 128, 128, 4, 4, F, F), (128, 256, 64, 8, 4, T, F),
       (128, 256, 64, 8, 5, T, F), (256, 128, 128, 8, 3, T, F), (128, 256, 128, 8, 3, T, T),
       (128, 128, 128, 8, 4, F, T)]
# (BLOCK_M, BLOCK_N, warps, stages, warp-specialised) of the TMA attention kernel, head dim 128
ATTN = [(128, 128, 8, 3, F), (128, 128, 8, 2, F), (128, 128, 8, 4, F), (128, 64, 8, 3, F), (128, 64, 4, 3, F),
        (64, 128, 4, 3, F), (128, 128, 8, 3, T), (128, 128, 8, 2, T), (128, 64, 8, 3, T)]
MM = (8192, 8192, 8192)
ATT = (8, 16, 4096)


def variants() -> list[tuple[str, str, Any]]:
    out: list[tuple[str, str, Any]] = [("tf32", "pointer 128x256x32 w8 s4 (today)", None)]
    out += [("tf32", f"tma {c}", c) for c in TF32]
    out += [("fp8", "pointer 128x256x128 w8 s3 (today)", None)]
    out += [("fp8", f"tma {c}", c) for c in FP8]
    for dt in ("fp16", "bf16"):
        for causal in (False, True):
            out += [(f"attn {dt}{' causal' if causal else ''}", f"tma {c}", c) for c in ATTN]
    return out


def setup(torch: Any) -> dict[str, Any]:
    g = torch.Generator(device="cuda").manual_seed(0)
    m, n, k = MM
    a32 = torch.randn(m, k, device="cuda", generator=g)
    bt32 = torch.randn(n, k, device="cuda", generator=g)
    from tlverify.k_fp8 import quantize

    a8, sa = quantize(torch, torch.randn(m, k, device="cuda", generator=g))
    bt8, sb = quantize(torch, torch.randn(n, k, device="cuda", generator=g))
    b, h, s = ATT
    att = {dt: [torch.randn(b, h, s, 128, device="cuda", dtype=getattr(torch, {"fp16": "float16", "bf16": "bfloat16"}[dt]),
                            generator=g) for _ in range(3)] for dt in ("fp16", "bf16")}
    return {"a32": a32, "bt32": bt32, "c32": torch.empty(m, n, device="cuda"), "a8": a8, "bt8": bt8, "sa": sa,
            "sb": sb, "c8": torch.empty(m, n, device="cuda", dtype=torch.bfloat16), "att": att,
            "o": {dt: torch.empty_like(att[dt][0]) for dt in att}, "sms": torch.cuda.get_device_properties(0).multi_processor_count}


def runner_fn(torch: Any, d: dict[str, Any], family: str, cfg: Any, warmup: bool = False) -> Any:
    """A callable that launches one candidate (or, with warmup, compiles it)."""
    import triton
    from tlverify import k_attention, k_fp8, k_matmul, tma_gemm

    m, n, k = MM
    if family == "tf32":
        if cfg is None:
            a, b, c = d["a32"], d["bt32"].t(), d["c32"]
            kw = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=32, GROUP_M=8, K_TILES=0, DOT_FP32=False, FAULT=0,
                      num_warps=8, num_stages=4)
            grid = (triton.cdiv(m, 128) * triton.cdiv(n, 256),)
            args = (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
            if warmup:
                return k_matmul.matmul_kernel.warmup(*args, grid=grid, **kw)
            return lambda: k_matmul.matmul_kernel[grid](*args, **kw)
        if warmup:
            return tma_gemm.launch(d["a32"], d["bt32"], d["c32"], cfg, d["sms"], warmup=True)
        return lambda: tma_gemm.launch(d["a32"], d["bt32"], d["c32"], cfg, d["sms"])
    if family == "fp8":
        a, bt, c, sa, sb = d["a8"], d["bt8"], d["c8"], d["sa"], d["sb"]
        if cfg is None:
            class _C:  # the runner's launcher wants a Ctx for its interpret flag only
                interpret = False
            if warmup:
                return k_fp8._launch(_C(), a, bt.t(), c, sa, sb, MM, 0, warmup=True)
            return lambda: k_fp8._launch(_C(), a, bt.t(), c, sa, sb, MM, 0)
        if warmup:
            return tma_gemm.launch(a, bt, c, cfg, d["sms"], scale_a=sa, scale_b=sb, warmup=True)
        return lambda: tma_gemm.launch(a, bt, c, cfg, d["sms"], scale_a=sa, scale_b=sb)
    dt = "bf16" if "bf16" in family else "fp16"
    causal = "causal" in family
    q, kk, v = d["att"][dt]
    o = d["o"][dt]

    class _A:
        interpret = False
    if warmup:
        return k_attention._launch_tma(_A(), q, kk, v, o, ATT, 128, causal, 0, warmup=True, cfg=cfg)
    return lambda: k_attention._launch_tma(_A(), q, kk, v, o, ATT, 128, causal, 0, cfg=cfg)


def torch_fn(torch: Any, d: dict[str, Any], family: str) -> Any:
    if family == "tf32":
        a, b = d["a32"], d["bt32"].t()
        return lambda: torch.matmul(a, b)
    if family == "fp8":
        a, b, sa, sb = d["a8"], d["bt8"].t(), d["sa"], d["sb"]
        return lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    dt = "bf16" if "bf16" in family else "fp16"
    q, k, v = d["att"][dt]
    causal = "causal" in family
    return lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def output(d: dict[str, Any], family: str) -> Any:
    if family == "tf32":
        return d["c32"]
    if family == "fp8":
        return d["c8"]
    return d["o"]["bf16" if "bf16" in family else "fp16"]


def flops(family: str) -> float:
    if family in ("tf32", "fp8"):
        m, n, k = MM
        return 2.0 * m * n * k
    b, h, s = ATT
    return 4.0 * b * h * s * s * 128 * (0.5 if "causal" in family else 1.0)


def worker(names: list[int]) -> list[tuple[int, str | None, float]]:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = True
    d = setup(torch)
    vs = variants()
    out = []
    for i in names:
        family, _, cfg = vs[i]
        t0 = time.perf_counter()
        try:
            runner_fn(torch, d, family, cfg, warmup=True)
            out.append((i, None, time.perf_counter() - t0))
        except Exception as e:  # noqa: BLE001 - reported in the table
            out.append((i, f"{type(e).__name__}: {str(e)[-400:]}", time.perf_counter() - t0))
    return out


def race(torch: Any, fn: Any, ref: Any, batch_ms: float = 6.0, rounds: int = 5) -> tuple[float, float]:
    sides = (fn, ref)
    per = []
    for f in sides:
        f()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        f()
        e.record()
        e.synchronize()
        per.append(max(float(s.elapsed_time(e)), 1e-3))
    reps = [max(1, min(500, round(batch_ms / t))) for t in per]
    batches = []
    for _ in range(rounds):
        for side, f in enumerate(sides):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(reps[side]):
                f()
            e.record()
            batches.append((side, s, e))
    torch.cuda.synchronize()
    times: tuple[list[float], list[float]] = ([], [])
    for side, s, e in batches:
        times[side].append(float(s.elapsed_time(e)) / reps[side])
    return sorted(times[0])[len(times[0]) // 2], sorted(times[1])[len(times[1]) // 2]


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    vs = variants()
    n_proc = int(os.environ.get("SWEEP_PROCS", "14"))
    chunks = [list(range(i, len(vs), n_proc)) for i in range(n_proc)]
    t0 = time.perf_counter()
    compiled: dict[int, tuple[str | None, float]] = {}
    with mp.get_context("spawn").Pool(n_proc) as pool:
        for res in pool.imap_unordered(worker, chunks):
            for i, err, secs in res:
                compiled[i] = (err, secs)
    print(f"compiled {len(vs)} candidates in {time.perf_counter() - t0:.1f} s", flush=True)
    import torch

    torch.backends.cuda.matmul.allow_tf32 = True
    d = setup(torch)
    rows = []
    for i, (family, name, cfg) in enumerate(vs):
        err, secs = compiled.get(i, ("not compiled", 0.0))
        row: dict[str, Any] = {"family": family, "name": name, "cfg": cfg, "compile_s": round(secs, 2)}
        if err is not None:
            row["error"] = err
            rows.append(row)
            continue
        try:
            fn = runner_fn(torch, d, family, cfg)
            ref = torch_fn(torch, d, family)
            o = output(d, family)
            o.fill_(float("nan"))
            fn()
            want = ref().float()
            got = o.float()
            rel = float((got - want).norm() / want.norm())
            row["rel_err"] = rel
            row["nan"] = bool(torch.isnan(got).any())
            ms, ms_t = race(torch, fn, ref)
            row["tflops"] = flops(family) / (ms * 1e-3) / 1e12
            row["torch_tflops"] = flops(family) / (ms_t * 1e-3) / 1e12
            row["ratio"] = ms_t / ms
        except Exception as e:  # noqa: BLE001 - reported in the table
            row["error"] = f"{type(e).__name__}: {str(e)[-400:]}"
            traceback.print_exc()
        rows.append(row)
        print(json.dumps(row), flush=True)
    (out / "sweep.json").write_text(json.dumps({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                                                "rows": rows}, indent=1))
    for family in dict.fromkeys(r["family"] for r in rows):
        mine = sorted((r for r in rows if r["family"] == family), key=lambda r: -(r.get("ratio") or 0))
        print(f"\n{family}")
        for r in mine:
            if "error" in r:
                print(f"  {r['name']:45} ERROR {r['error'][:160]}")
            else:
                bad = " WRONG" if r["nan"] or not math.isfinite(r["rel_err"]) or r["rel_err"] > 2e-2 else ""
                print(f"  {r['name']:45} {r['tflops']:7.0f} vs {r['torch_tflops']:7.0f} TFLOP/s  ratio "
                      f"{r['ratio']:.3f}  rel err {r['rel_err']:.1e}{bad}")


if __name__ == "__main__":
    main()
