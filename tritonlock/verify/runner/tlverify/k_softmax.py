# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""softmax: one program per row, the whole row in registers; against float64 torch, timed against torch.softmax."""

# mypy: disable-error-code="no-untyped-def,untyped-decorator,no-untyped-call,import-not-found,unused-ignore"

from __future__ import annotations

import functools
from typing import Any, Callable

import triton
import triton.language as tl

from .common import Ctx

FAMILY = "softmax"
# fp32 with exp(): a few roundings relative to each output, which lie in [0, 1]
RTOL, ATOL = 1e-5, 1e-7


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
    for rows, cols in _sizes(ctx):
        x = torch.randn(rows, cols, device=ctx.device) * 4
        out = ctx.poison((rows, cols), torch.float32)
        _launch(x, out, rows, cols, fault)
        ctx.sync()
        good, err, text = ctx.compare(out, torch.softmax(x.double(), dim=-1), RTOL, ATOL)
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
