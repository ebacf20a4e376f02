# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""matmul: tiled tl.dot with fp32 accumulation for fp16, bf16 and fp32 (tf32) inputs; against float64 torch, autotuned
over the two best-fitting tilings and timed against torch.matmul (cuBLAS)."""

# mypy: disable-error-code="no-untyped-def,untyped-decorator,no-untyped-call,import-not-found,unused-ignore"

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import triton
import triton.language as tl

from . import bounds, tma_gemm
from .common import Ctx, dtype_name
from .torchside import matmul_dtypes

FAMILY = "matmul"
TF32_INPUT = 2.0 ** -9 + 2.0 ** -20  # a product of two tf32 operands, each cut to 10 fraction bits (< 2^-10 each)


def bound(torch: Any, a: Any, b: Any, ref: Any, name: str, tf32: bool, interpret: bool = False) -> Any:
    """C = A @ B accumulated in fp32 (tl.dot: tensor cores on a GPU, numpy in the interpreter), stored as the input
    type. fp16 and bf16 products are exact in fp32; on a GPU fp32 operands are read as tf32 (10 fraction bits: each
    product within 2^-9 + 2^-20 of the exact one, whether the tensor core truncates or Triton rounds them first).
    Per output: that input error over P = sum_k |a_ik b_kj|, the fp32 accumulation (bounds.dot_fp32), then the
    output's rounding (bounds.stored), plus the float64 reference's own (bounds.ref_error)."""
    return bound_of(a.double().abs() @ b.double().abs(), a.shape[1], ref, name, tf32, interpret)


def bound_of(p: Any, kk: int, ref: Any, name: str, tf32: bool, interpret: bool = False) -> Any:
    """`bound` from P = sum_k |a_ik b_kj| per output."""
    inp = TF32_INPUT * p if tf32 else 0.0
    exact = inp + bounds.dot_fp32(kk, p * (1 + TF32_INPUT) if tf32 else p) + bounds.ref_error(kk, p)
    return bounds.stored(exact, ref.abs(), name, interpret)


def one_wrong(torch: Any, a: Any, b: Any) -> tuple[tuple[int, int], float]:
    """The smallest fault: output (0, 0) without the largest product of its sum."""
    terms = a[0].double() * b[:, 0].double()
    return (0, 0), -float(terms[int(terms.abs().argmax())])


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, K_TILES: tl.constexpr,
                  DOT_FP32: tl.constexpr, FAULT: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    # Hand out output tiles in bands of GROUP_M tile-rows, column by column, so the
    # programs resident at one time share A row-panels and B column-panels in L2.
    band = GROUP_M * tiles_n
    first_m = (pid // band) * GROUP_M
    band_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % band) % band_rows
    tile_n = (pid % band) // band_rows

    offs_m = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_live = offs_m < M
    n_live = offs_n < N
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # fp32 accumulation for every input type
    # K_TILES > 0 only under the interpreter: triton <= 3.6's interpreter cannot take a
    # runtime loop bound with numpy >= 2.4 (triton-lang/triton#9171); compiled code keeps
    # K dynamic so every size shares one binary. FAULT 2 drops the last K tile: the classic off-by-one.
    for kt in range((K_TILES if K_TILES > 0 else tl.cdiv(K, BLOCK_K)) - FAULT // 2):
        k_left = K - kt * BLOCK_K
        a = tl.load(a_ptrs, mask=m_live[:, None] & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & n_live[None, :], other=0.0)
        if DOT_FP32:
            # Interpreter only: its tl.dot multiplies bf16 bit patterns as integers.
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc)  # fp32 inputs use tf32 tensor cores (triton's default)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_live = m_live[:, None] & n_live[None, :]
    if FAULT == 1:
        c_live = c_live & (pid < tl.num_programs(0) - 1)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_live)


KERNELS = (matmul_kernel, *tma_gemm.KERNELS)  # what the harness primes before compiling in parallel
# fp32 (tf32) on Hopper and later: the persistent TMA kernel (tma_gemm), checked and timed. Hopper's tf32 wgmma reads
# its operands from shared memory as TMA lays them out; the pointer kernel reached 0.77 of cuBLAS there, this one
# 0.97-0.99 (bench/kernel_sweep.py on the H200, bench/RESULTS.md): 128x256x32 tiles in 3 stages, the epilogue in
# two halves (a 4-stage pipeline with a whole 128x256 fp32 tile for the store does not fit in 227 KiB).
TF32_TMA = (128, 256, 32, 8, 3, True, False)


def _cfg(bm: int, bn: int, bk: int, warps: int, stages: int) -> Any:
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=warps, num_stages=stages)


# Candidate tilings, best first; each input width takes the first MM_CANDIDATES that fit.
CONFIGS = [
    # 16-bit inputs (BLOCK_K 64). Large tiles over 8 warps (two warpgroups) feed Hopper's
    # wgmma; the 4-stage 128x256 needs 192 KiB of shared memory (H100/H200: 227 KiB), the
    # 3-stage ones 144 KiB (A100: 163 KiB), 128x128 in 3 stages 96 KiB (RTX 30/40: 99 KiB).
    _cfg(128, 256, 64, 8, 4),
    _cfg(128, 256, 64, 8, 3),
    _cfg(256, 128, 64, 8, 3),
    _cfg(128, 128, 64, 4, 4),
    _cfg(128, 128, 64, 4, 3),
    _cfg(64, 64, 64, 4, 3),
    # fp32 inputs (tf32, BLOCK_K 32: a 4-byte K-slice of the same tiles takes the same memory).
    _cfg(128, 256, 32, 8, 4),
    _cfg(128, 256, 32, 8, 3),
    _cfg(128, 128, 32, 8, 3),
    _cfg(128, 128, 32, 4, 3),
    _cfg(64, 64, 32, 4, 3),
]
INTERPRETER_CONFIG = _cfg(32, 32, 32, 4, 1)
# Every candidate costs a compile on a cold verify and a tuning run. The first that fits won every time on the H200
# (bench/RESULTS.md), so one is compiled, and the autotuner, with one config, benchmarks nothing.
MM_CANDIDATES = 1


def configs_for(configs: list[Any], elem_size: int, max_smem: int | None) -> list[Any]:
    """The candidate configs for one input element size that fit in shared memory."""
    want_k = 64 if elem_size <= 2 else 32
    mine = [c for c in configs if c.kwargs["BLOCK_K"] == want_k]
    if max_smem is not None:
        # Triton's pipeline keeps num_stages copies of the A and B tiles in shared memory.
        fits = [c for c in mine if (c.kwargs["BLOCK_M"] + c.kwargs["BLOCK_N"]) * c.kwargs["BLOCK_K"]
                * elem_size * c.num_stages <= max_smem]
        mine = fits or mine[-1:]
    return mine[:MM_CANDIDATES]


def max_smem(device: int | None = None) -> int | None:
    try:
        import torch
        idx = torch.cuda.current_device() if device is None else device
        props = triton.runtime.driver.active.utils.get_device_properties(idx)
        return int(props["max_shared_mem"])
    except Exception:  # an older triton without this helper: keep every candidate
        return None


def _autotune(fn: Any, configs: list[Any]) -> Any:
    def prune(configs: list[Any], named_args: dict[str, Any], **_: Any) -> list[Any]:
        return configs_for(configs, named_args["a_ptr"].element_size(), max_smem())

    def bench(kernel_call: Callable[[], Any], quantiles: Any = None) -> Any:
        return triton.testing.do_bench(kernel_call, warmup=5, rep=25, quantiles=quantiles)

    kwargs: dict[str, Any] = {"prune_configs_by": {"early_config_prune": prune}}
    params = inspect.signature(triton.autotune).parameters
    if "do_bench" in params:
        kwargs["do_bench"] = bench
    if "cache_results" in params:
        kwargs["cache_results"] = True  # tuning timings on disk: a warm verify does not tune again
    return triton.autotune(configs=configs, key=["M", "N", "K"], **kwargs)(fn)


_TUNED: dict[int, Any] = {}


def tuned(device: int) -> Any:
    """One autotuner per GPU: an autotuner keeps its state between calls, and the GPUs run at the same time."""
    if device not in _TUNED:
        _TUNED[device] = _autotune(matmul_kernel, CONFIGS)
    return _TUNED[device]


def cfg_words(cfg: Any, interpret: bool = False) -> str:
    k = cfg.kwargs
    tile = f"{k['BLOCK_M']}x{k['BLOCK_N']}x{k['BLOCK_K']}"
    return f"[{tile}]" if interpret else f"[{tile}, {cfg.num_warps} warps, {cfg.num_stages} stages]"


def _configs(ctx: Ctx, dt: Any) -> list[Any]:
    if ctx.interpret:
        return [INTERPRETER_CONFIG]
    elem = ctx.torch.empty((), dtype=dt).element_size()
    configs = configs_for(CONFIGS, elem, max_smem(ctx.index))
    return configs if ctx.plan.timed else configs[:1]


def _strides(torch: Any, m: int, n: int, kk: int, dt: Any) -> tuple[int, ...]:
    """(am, ak, bk, bn, cm, cn) of what inputs() makes: A row-major; B row-major for 16-bit, K-major for fp32."""
    b = (1, kk) if dt == torch.float32 else (n, 1)
    return (kk, 1, *b, n, 1)


def inputs(ctx: Ctx, m: int, n: int, kk: int, dt: Any, key: str | None = None) -> tuple[Any, Any]:
    """A (m x k, row-major) and B (k x n): row-major for 16-bit, K-major for fp32.

    Hopper's tf32 wgmma reads both operands K-major only; a row-major fp32 B drops Triton to a
    path about 4x slower, so fp32 B is the transpose of a row-major n x k tensor (cuBLAS takes
    the same layout for the torch comparison).
    """
    torch = ctx.torch
    if key is None:  # the timed size: fresh numbers on the device, never checked
        a = torch.randn(m, kk, device=ctx.device, dtype=dt)
        if dt == torch.float32:
            return a, torch.randn(n, kk, device=ctx.device, dtype=dt).t()
        return a, torch.randn(kk, n, device=ctx.device, dtype=dt)
    a = ctx.randn((m, kk), f"{key} a", dt)
    if dt == torch.float32:
        return a, ctx.randn((n, kk), f"{key} b", dt).t()
    return a, ctx.randn((kk, n), f"{key} b", dt)


def _launch(ctx: Ctx, a: Any, b: Any, c: Any, dims: tuple[int, int, int], cfg: Any, fault: int,
            warmup: bool = False) -> Any:
    m, n, kk = dims
    kw = dict(cfg.all_kwargs())
    grid = (triton.cdiv(m, kw["BLOCK_M"]) * triton.cdiv(n, kw["BLOCK_N"]),)
    k_tiles = triton.cdiv(kk, kw["BLOCK_K"]) if ctx.interpret else 0
    dot_fp32 = ctx.interpret and a.dtype == ctx.torch.bfloat16
    if ctx.interpret:  # launch options mean nothing to the interpreter
        kw = {k: v for k, v in kw.items() if k in cfg.kwargs}
    args = (a, b, c, m, n, kk, *_strides(ctx.torch, m, n, kk, a.dtype))
    if warmup:
        return matmul_kernel.warmup(*args, K_TILES=k_tiles, DOT_FP32=dot_fp32, FAULT=fault, grid=grid, **kw)
    else:
        matmul_kernel[grid](*args, K_TILES=k_tiles, DOT_FP32=dot_fp32, FAULT=fault, **kw)


def tma(ctx: Ctx, dt: Any) -> bool:
    """Whether this dtype is checked and timed with the persistent TMA kernel on this device."""
    return dt == ctx.torch.float32 and not ctx.interpret and tma_gemm.available(ctx.torch, ctx.index)


def _tma_sizes(ctx: Ctx) -> list[tuple[int, int, int]]:
    return list(ctx.plan.mm_sizes) + ([ctx.plan.mm_timed] if ctx.plan.timed and ctx.plan.mm_timed else [])


def jobs(ctx: Ctx) -> list[tuple[str, Callable[[], Any]]]:
    """One compile per (dtype, config, specialisation): every candidate at the aligned sizes (1008 shares its binary
    with the timed 8192), the first one at the unaligned size too."""
    torch = ctx.torch
    fault = ctx.faulty(FAMILY)
    out: list[tuple[str, Callable[[], Any]]] = []
    for dt in matmul_dtypes(torch):
        if tma(ctx, dt):
            n_sms = tma_gemm.sms(torch, ctx.index)
            for m, n, kk in _tma_sizes(ctx):  # the descriptors' extents are the real ones: empty tensors of them
                a = torch.empty(m, kk, device=ctx.device, dtype=dt)
                bt = torch.empty(n, kk, device=ctx.device, dtype=dt)
                c = torch.empty(m, n, device=ctx.device, dtype=dt)
                out.append((f"{FAMILY} {dtype_name(torch, dt)}",
                            functools.partial(tma_gemm.launch, a, bt, c, TF32_TMA, n_sms, fault=fault, warmup=True)))
            continue
        t = torch.empty(16, device=ctx.device, dtype=dt)
        for si, dims in enumerate(ctx.plan.mm_sizes):
            for cfg in _configs(ctx, dt) if si == 0 else _configs(ctx, dt)[:1]:
                out.append((f"{FAMILY} {dtype_name(torch, dt)}",
                            functools.partial(_launch, ctx, t, t, t, dims, cfg, fault, True)))
    return out


def run(ctx: Ctx) -> None:
    for dt in matmul_dtypes(ctx.torch):
        check(ctx, dt)


def check(ctx: Ctx, dt: Any) -> None:
    if tma(ctx, dt):
        return check_tma(ctx, dt)
    torch, p = ctx.torch, ctx.plan
    name = dtype_name(torch, dt)
    ctx.begin(FAMILY, name + (" (tf32)" if name == "fp32" and not ctx.interpret else ""))
    fault = ctx.faulty(FAMILY)
    ok, worst, words = True, 0.0, []  # type: tuple[bool, float | None, list[str]]
    configs = _configs(ctx, dt)
    for si, (m, n, kk) in enumerate(p.mm_sizes):
        a, b = inputs(ctx, m, n, kk, dt, f"{FAMILY} {name} {m}x{n}x{kk}")
        ref = a.double() @ b.double()
        limit = bound(torch, a, b, ref, name, tf32=name == "fp32" and not ctx.interpret, interpret=ctx.interpret)
        # every candidate config is checked on the first size, the unaligned sizes once
        for ci, cfg in enumerate(configs if si == 0 else configs[:1]):
            c = ctx.poison((m, n), dt)
            _launch(ctx, a, b, c, (m, n, kk), cfg, fault)
            ctx.sync()
            if si == 0 and ci == 0 and ctx.one_wrong(FAMILY):
                ctx.plant(c, *one_wrong(torch, a, b))
            good, err, text = ctx.compare(c, ref, limit)
            ok &= good
            worst = None if err is None or worst is None else max(worst, err)
            words.append(f"{m}x{n}x{kk} {cfg_words(cfg, ctx.interpret)}: {text}")
    timing = None
    if p.timed and ok:
        assert p.mm_timed is not None
        m, n, kk = p.mm_timed
        a, b = inputs(ctx, m, n, kk, dt)
        c = torch.empty((m, n), device=ctx.device, dtype=dt)
        tuned_mm = tuned(ctx.index)
        grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)  # noqa: E731

        def go() -> None:
            tuned_mm[grid](a, b, c, m, n, kk, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                           c.stride(0), c.stride(1), K_TILES=0, DOT_FP32=False, FAULT=0)

        go()
        ctx.sync()
        # the harness lets torch use tf32 for fp32 while the kernels run, so both sides do the same arithmetic
        ms, ms_t = ctx.race(go, lambda: torch.matmul(a, b))
        tflops = lambda t: 2 * m * n * kk / (t * 1e-3) / 1e12  # noqa: E731
        timing = ("TFLOP/s", tflops(ms), tflops(ms_t))
        words.append(f"timed {m}x{n}x{kk} with autotuned {cfg_words(tuned_mm.best_config)} vs torch.matmul")
    ctx.record(FAMILY, name + (" (tf32)" if name == "fp32" and not ctx.interpret else ""), ok, worst, words, timing)


def check_tma(ctx: Ctx, dt: Any) -> None:
    """fp32 (tf32) with the persistent TMA kernel: checked at the check sizes (the descriptors clip the edges), then
    timed against torch.matmul on the same K-major B."""
    torch, p = ctx.torch, ctx.plan
    name = dtype_name(torch, dt)
    fault = ctx.faulty(FAMILY)
    n_sms = tma_gemm.sms(torch, ctx.index)
    ok, worst, words = True, 0.0, []  # type: tuple[bool, float | None, list[str]]
    for si, (m, n, kk) in enumerate(p.mm_sizes):
        a, b = inputs(ctx, m, n, kk, dt, f"{FAMILY} {name} {m}x{n}x{kk}")
        ref = a.double() @ b.double()
        c = ctx.poison((m, n), dt)
        tma_gemm.launch(a, b.t(), c, TF32_TMA, n_sms, fault=fault)
        ctx.sync()
        if si == 0 and ctx.one_wrong(FAMILY):
            ctx.plant(c, *one_wrong(torch, a, b))
        good, err, text = ctx.compare(c, ref, bound(torch, a, b, ref, name, tf32=True))
        ok &= good
        worst = None if err is None or worst is None else max(worst, err)
        words.append(f"{m}x{n}x{kk} {tma_gemm.words(TF32_TMA)}: {text}")
    timing = None
    if p.timed and ok:
        assert p.mm_timed is not None
        m, n, kk = p.mm_timed
        a, b = inputs(ctx, m, n, kk, dt)
        bt = b.t()
        c = torch.empty((m, n), device=ctx.device, dtype=dt)
        ms, ms_t = ctx.race(lambda: tma_gemm.launch(a, bt, c, TF32_TMA, n_sms), lambda: torch.matmul(a, b))
        tflops = lambda t: 2 * m * n * kk / (t * 1e-3) / 1e12  # noqa: E731
        timing = ("TFLOP/s", tflops(ms), tflops(ms_t))
        words.append(f"timed {m}x{n}x{kk} with {tma_gemm.words(TF32_TMA)} vs torch.matmul (tf32)")
    ctx.record(FAMILY, name + " (tf32)", ok, worst, words, timing)
