# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""fp8_matmul: an FP8 (e4m3) matmul with per-tensor scales on GPUs that have FP8 tensor cores (compute capability
8.9 and up); against float64 on the dequantised inputs, timed against torch._scaled_mm. Skipped, with the reason,
elsewhere."""

# mypy: disable-error-code="no-untyped-def,untyped-decorator,no-untyped-call,import-not-found,unused-ignore"

from __future__ import annotations

import functools
from typing import Any, Callable

import triton
import triton.language as tl

from . import bounds, tma_gemm
from .common import Ctx

FAMILY = "fp8_matmul"
E4M3_MAX = 448.0


def bound(torch: Any, aq: Any, bq: Any, sa: Any, sb: Any, ref: Any, pairs: bool = False) -> Any:
    """C = (A @ B) sa sb in bf16, against the float64 product of the dequantised operands (the e4m3 values times
    their scales: quantisation is the caller's choice, not the kernel's error). The products of e4m3 values are
    exact; their accumulation keeps about 13 bits on Hopper's and Ada's FP8 tensor cores, the whole K in the tensor
    core (bounds.fp8_accumulation: per output, from its own partial sums); then the epilogue: sa * sb and acc *
    scale in fp32 (2^-24 each) and the bf16 store (2^-8)."""
    acc = bounds.fp8_accumulation(torch, aq.double(), bq.double(), pairs=pairs)
    scale = sa.double() * sb.double()
    u = bounds.UNIT["bf16"] + 2.0 ** -22
    kk = aq.shape[1]
    return scale * acc * (1 + u) + u * ref.abs() + bounds.ref_error(kk, ref.abs()) + bounds.TINY


def one_wrong(torch: Any, aq: Any, bq: Any, sa: Any, sb: Any, row: int = 0) -> tuple[tuple[int, int], float]:
    """The smallest fault: one output of the first row without the largest product of its sum — the output of that
    row where the largest product stands highest over its bound (the FP8 bound is the loosest of verify's: a worst
    case of 13-bit truncations, about ten times the errors the model makes; bench/verify_tolerance_sweep.py)."""
    a = aq[row:row + 1].double()
    b = bq.double()
    terms = a.t() * b * (float(sa) * float(sb))  # K x N: the products of each output of the row
    big = terms.gather(0, terms.abs().argmax(0, keepdim=True)).squeeze(0)
    ref = terms.sum(0)
    limit = bound(torch, a, b, sa, sb, ref[None, :])[0]
    j = int((big.abs() / limit).argmax())
    return (row, j), -float(big[j])
# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages): 3 stages of 128x128 A and 128x256 B bytes are 144 KiB
CONFIG = (128, 256, 128, 8, 3)


@triton.jit
def fp8_matmul_kernel(a_ptr, b_ptr, c_ptr, scale_a, scale_b, M, N, K, stride_am, stride_bn, stride_cm,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                      FAULT: tl.constexpr):
    # A is row-major (M x K); B is column-major (K x N, stored as N x K), the layout FP8 tensor cores and
    # torch._scaled_mm want; C = (A @ B) * scale_a * scale_b in bf16.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    band = GROUP_M * tiles_n
    first_m = (pid // band) * GROUP_M
    band_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % band) % band_rows
    tile_n = (pid % band) // band_rows
    offs_m = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_n[None, :] * stride_bn + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kt in range(tl.cdiv(K, BLOCK_K)):
        k_left = K - kt * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    scale = tl.load(scale_a) * tl.load(scale_b)
    if FAULT == 2:
        scale = tl.load(scale_a)  # the injected bug: one scale forgotten
    live = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if FAULT == 1:
        live = live & (pid < tl.num_programs(0) - 1)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], (acc * scale).to(c_ptr.dtype.element_ty), mask=live)


KERNELS = (fp8_matmul_kernel, *tma_gemm.KERNELS)  # what the harness primes before compiling in parallel
# Hopper and later: the persistent TMA kernel (tma_gemm) is checked and timed; the pointer kernel above reached 0.68-0.77
# of torch._scaled_mm on the H200, this one 1.00 (bench/kernel_sweep.py, bench/RESULTS.md). Ada (8.9) has FP8 tensor
# cores but no TMA: the pointer kernel runs there.
FP8_TMA = (128, 256, 128, 8, 3, True, False)


def unsupported(ctx: Ctx) -> str | None:
    """Why this device cannot run the FP8 check, or None when it can."""
    torch = ctx.torch
    if ctx.interpret:
        return "no GPU: FP8 tensor cores need a GPU of compute capability 8.9 or higher (Ada, Hopper, Blackwell)"
    if getattr(torch.version, "hip", None):
        return "ROCm GPU: this check compares with torch._scaled_mm on NVIDIA FP8 (e4m3fn) only"
    major, minor = torch.cuda.get_device_capability(ctx.index)
    if (major, minor) < (8, 9):
        return (f"{torch.cuda.get_device_name(ctx.index)} is compute capability {major}.{minor}; FP8 tensor cores "
                "need 8.9 or higher (Ada, Hopper, Blackwell)")
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        return f"torch {torch.__version__} has no float8_e4m3fn / _scaled_mm"
    return None


def quantize(torch: Any, x: Any) -> tuple[Any, Any]:
    """x in e4m3 with one fp32 scale: x ~ q * scale."""
    scale = (x.abs().max().float() / E4M3_MAX).clamp(min=1e-12)
    return (x / scale).to(torch.float8_e4m3fn), scale.reshape(())


def _launch(ctx: Ctx, a: Any, b: Any, c: Any, sa: Any, sb: Any, dims: tuple[int, int, int], fault: int,
            warmup: bool = False) -> Any:
    m, n, kk = dims
    bm, bn, bk, warps, stages = CONFIG
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    args = (a, b, c, sa, sb, m, n, kk, kk, kk, n)
    kw = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, FAULT=fault, num_warps=warps, num_stages=stages)
    if warmup:
        return fp8_matmul_kernel.warmup(*args, grid=grid, **kw)
    else:
        fp8_matmul_kernel[grid](*args, **kw)


def _tma(ctx: Ctx) -> bool:
    return tma_gemm.available(ctx.torch, ctx.index)


def _tma_launch(ctx: Ctx, a: Any, b: Any, c: Any, sa: Any, sb: Any, fault: int, warmup: bool = False) -> Any:
    """b is K x N column-major (what _scaled_mm takes): its transpose is the N x K row-major tensor TMA reads."""
    return tma_gemm.launch(a, b.t(), c, FP8_TMA, tma_gemm.sms(ctx.torch, ctx.index), scale_a=sa, scale_b=sb,
                           fault=fault, warmup=warmup)


def jobs(ctx: Ctx) -> list[tuple[str, Callable[[], Any]]]:
    if unsupported(ctx):
        return []
    torch = ctx.torch
    if _tma(ctx):
        fault = ctx.faulty(FAMILY)
        s = torch.ones((), device=ctx.device)
        out: list[tuple[str, Callable[[], Any]]] = []
        for m, n, kk in list(ctx.plan.fp8_sizes) + ([ctx.plan.fp8_timed] if ctx.plan.fp8_timed else []):
            a = torch.empty(m, kk, device=ctx.device, dtype=torch.float8_e4m3fn)
            bt = torch.empty(n, kk, device=ctx.device, dtype=torch.float8_e4m3fn)
            c = torch.empty(m, n, device=ctx.device, dtype=torch.bfloat16)
            out.append((FAMILY, functools.partial(_tma_launch, ctx, a, bt.t(), c, s, s, fault, warmup=True)))
        return out
    t8 = torch.empty(16, device=ctx.device, dtype=torch.float8_e4m3fn)
    c = torch.empty(16, device=ctx.device, dtype=torch.bfloat16)
    s = torch.ones((), device=ctx.device)
    fault = ctx.faulty(FAMILY)
    return [(FAMILY, functools.partial(_launch, ctx, t8, t8, c, s, s, dims, fault, warmup=True))
            for dims in ctx.plan.fp8_sizes]


def run(ctx: Ctx) -> None:
    why = unsupported(ctx)
    if why:
        ctx.skip(FAMILY, "e4m3", why)
        return
    ctx.begin(FAMILY, "e4m3")
    torch, p = ctx.torch, ctx.plan
    fault = ctx.faulty(FAMILY)
    ok, worst, words = True, 0.0, []  # type: tuple[bool, float | None, list[str]]

    def operands(m: int, n: int, kk: int, key: str | None) -> tuple[Any, Any, Any, Any]:
        if key is None:  # the timed size: fresh numbers, never checked
            a, sa = quantize(torch, torch.randn(m, kk, device=ctx.device))
            bt, sb = quantize(torch, torch.randn(n, kk, device=ctx.device))
        else:
            a, sa = quantize(torch, ctx.randn((m, kk), f"{key} a"))
            bt, sb = quantize(torch, ctx.randn((n, kk), f"{key} b"))
        return a, bt.t(), sa, sb  # b: K x N, column-major

    tma = _tma(ctx)
    for si, (m, n, kk) in enumerate(p.fp8_sizes):
        a, b, sa, sb = operands(m, n, kk, f"{FAMILY} e4m3 {m}x{n}x{kk}")
        c = ctx.poison((m, n), torch.bfloat16)
        if tma:
            _tma_launch(ctx, a, b, c, sa, sb, fault)
        else:
            _launch(ctx, a, b, c, sa, sb, (m, n, kk), fault)
        ctx.sync()
        ref = (a.double() * sa.double()) @ (b.double() * sb.double())
        if si == 0 and ctx.one_wrong(FAMILY):
            ctx.plant(c, *one_wrong(torch, a, b, sa, sb))
        good, err, text = ctx.compare(c, ref, bound(torch, a, b, sa, sb, ref))
        ok &= good
        worst = None if err is None or worst is None else max(worst, err)
        words.append(f"{m}x{n}x{kk} e4m3 -> bf16{' ' + tma_gemm.words(FP8_TMA) if tma else ''}: {text}")
    timing = None
    if p.timed and ok and p.fp8_timed is not None:
        m, n, kk = p.fp8_timed
        a, b, sa, sb = operands(m, n, kk, None)
        c = torch.empty((m, n), device=ctx.device, dtype=torch.bfloat16)
        if tma:
            ms, ms_t = ctx.race(lambda: _tma_launch(ctx, a, b, c, sa, sb, 0),
                                lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16))
        else:
            ms, ms_t = ctx.race(lambda: _launch(ctx, a, b, c, sa, sb, (m, n, kk), 0),
                                lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16))
        tflops = lambda t: 2 * m * n * kk / (t * 1e-3) / 1e12  # noqa: E731
        timing = ("TFLOP/s", tflops(ms), tflops(ms_t))
        bm, bn, bk, warps, stages = CONFIG
        used = tma_gemm.words(FP8_TMA) if tma else f"[{bm}x{bn}x{bk}, {warps} warps, {stages} stages]"
        words.append(f"timed {m}x{n}x{kk} {used} vs torch._scaled_mm")
    ctx.record(FAMILY, "e4m3", ok, worst, words, timing)
