# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""softmax: one program per row, the whole row in registers; against float64 torch, timed against torch.softmax."""

# mypy: disable-error-code="no-untyped-def,untyped-decorator,no-untyped-call,import-not-found,unused-ignore"

from __future__ import annotations

import functools
from typing import Any, Callable

import triton
import triton.language as tl

from . import bounds
from .common import Ctx

FAMILY = "softmax"


def bound(torch: Any, x: Any, ref: Any) -> Any:
    """exp(x_j - m) / sum_k exp(x_k - m) in fp32, m the row's maximum. Each numerator: x_j - m rounded (2^-24 of it),
    times log2(e) rounded (2^-24), ex2.approx (EXP2): relative error rho_j <= EXP2 + 2^-22 |x_j - m| (an error of
    2^-23 |x_j - m| log2(e) in the exponent is ln 2 times that, relatively). The denominator: those terms, all
    positive, summed in fp32 (bounds.dot_fp32 with every product 1: 2^-23 (3n + 34) relatively) off by at most
    max rho too. The division: 2 ulp (div.full.f32), 2^-22. So each output is within (rho_j + max rho + 2^-23 (3n +
    34) + 2^-22) of itself, times 1.01 for the products of these small terms, plus a flushed subnormal."""
    x64 = x.double()
    spread = x64.max(dim=-1, keepdim=True).values - x64
    rho = bounds.EXP2 + 2.0 ** -22 * spread
    n = x.shape[-1]
    rel = rho + rho.max(dim=-1, keepdim=True).values + 2.0 ** -23 * (3 * n + 34) + 2.0 ** -22
    return 1.01 * rel * ref + bounds.TINY


def one_wrong(torch: Any, ref: Any, limit: Any) -> tuple[tuple[int, int], float]:
    """The smallest fault: one output divided by a denominator without one term — a row's largest output without
    the row's next largest term (p_i / (1 - p_j) instead of p_i: the largest change one dropped term makes), in the
    row where that change stands highest over its bound (a row whose largest term dwarfs the rest changes by less
    than the bound)."""
    top = ref.topk(2, dim=-1)
    delta = top.values[:, 0] * top.values[:, 1] / (1 - top.values[:, 1])
    at = top.indices[:, :1]
    r = int((delta / limit.gather(1, at).squeeze(1)).argmax())
    return (r, int(at[r, 0])), float(delta[r])


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, x_stride, out_stride, BLOCK: tl.constexpr, FAULT: tl.constexpr):
    # One program per row; the whole row lives in registers (BLOCK >= n_cols).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    live = cols < n_cols
    x = tl.load(x_ptr + row.to(tl.int64) * x_stride + cols, mask=live, other=-float("inf"))
    # Subtracting the row maximum keeps exp() from overflowing; padding lanes give exp(-inf) = 0.
    num = tl.exp(x - tl.max(x, axis=0))
    den = tl.sum(num, axis=0)
    if FAULT == 1:
        live = live & (row < tl.num_programs(0) - 1)
    if FAULT == 2:
        den = den * 1.001  # rows that sum to 0.999: finite, plausible, wrong
    tl.store(out_ptr + row.to(tl.int64) * out_stride + cols, num / den, mask=live)


KERNELS = (softmax_kernel,)  # what the harness primes before compiling in parallel


def _launch(x: Any, out: Any, rows: int, cols: int, fault: int, warmup: bool = False) -> Any:
    """x and out are contiguous rows x cols (a warm-up passes any tensor of the dtype: only the ints matter)."""
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 1024 else (8 if block <= 4096 else 16)
    args = (x, out, cols, cols, cols)
    if warmup:
        return softmax_kernel.warmup(*args, BLOCK=block, FAULT=fault, num_warps=warps, grid=(rows,))
    else:
        softmax_kernel[(rows,)](*args, BLOCK=block, FAULT=fault, num_warps=warps)


def _sizes(ctx: Ctx) -> list[tuple[int, int]]:
    return list(ctx.plan.sm_sizes) + ([ctx.plan.sm_timed] if ctx.plan.sm_timed else [])


def jobs(ctx: Ctx) -> list[tuple[str, Callable[[], Any]]]:
    torch = ctx.torch
    fault = ctx.faulty(FAMILY)
    t = torch.empty(16, device=ctx.device)
    return [(FAMILY, functools.partial(_launch, t, t, rows, cols, fault, True))
            for rows, cols in _sizes(ctx)]


def run(ctx: Ctx) -> None:
    ctx.begin(FAMILY, "fp32")
    torch, p = ctx.torch, ctx.plan
    fault = ctx.faulty(FAMILY)
    ok, worst, words = True, 0.0, []  # type: tuple[bool, float | None, list[str]]
    x: Any = None
    out: Any = None
    for i, (rows, cols) in enumerate(_sizes(ctx)):
        x = ctx.randn((rows, cols), f"{FAMILY} {rows}x{cols}") * 4
        out = ctx.poison((rows, cols), torch.float32)
        _launch(x, out, rows, cols, fault)
        ctx.sync()
        ref = torch.softmax(x.double(), dim=-1)
        limit = bound(torch, x, ref)
        if i == 0 and ctx.one_wrong(FAMILY):
            ctx.plant(out, *one_wrong(torch, ref, limit))
        good, err, text = ctx.compare(out, ref, limit)
        ok &= good
        worst = None if err is None or worst is None else max(worst, err)
        words.append(f"{rows}x{cols}: {text}")
    timing = None
    if p.timed and ok:
        rows, cols = x.shape  # the timed size is the last one checked above
        ms, ms_t = ctx.race(lambda: _launch(x, out, rows, cols, fault), lambda: torch.softmax(x, dim=-1))
        gbs = lambda t: 2 * rows * cols * 4 / (t * 1e-3) / 1e9  # noqa: E731 - read once, write once
        timing = ("GB/s", gbs(ms), gbs(ms_t))
        words.append(f"timed {rows}x{cols} vs torch.softmax")
    ctx.record(FAMILY, "fp32", ok, worst, words, timing)
