# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""vector_add: the smallest Triton kernel (bandwidth-bound), against float64 torch and timed against torch.add."""

# mypy: disable-error-code="no-untyped-def,untyped-decorator,no-untyped-call,import-not-found,unused-ignore"

from __future__ import annotations

import functools
import time
from typing import Any, Callable

import triton
import triton.language as tl

from . import bounds
from .common import Ctx

FAMILY = "vector_add"


def bound(torch: Any, ref: Any) -> Any:
    """x + y of two fp32 inputs: one fp32 rounding of the exact sum, u = 2^-24 of it, or a flushed subnormal (the
    float64 reference of two fp32 numbers is their exact sum but where their exponents lie 29 apart: 2^-53 of it)."""
    return (bounds.U32 + 2.0 ** -52) * ref.abs() + bounds.TINY


def one_wrong(torch: Any, y: Any) -> tuple[tuple[int], float]:
    """The smallest fault: one output without its largest addend y (out = x there)."""
    i = int(y.abs().argmax())
    return (i,), -float(y[i])


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, FAULT: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    live = offs < n
    if FAULT == 1:
        # The injected bug: the last program decides it has nothing to do.
        live = live & (pid < tl.num_programs(0) - 1)
    x = tl.load(x_ptr + offs, mask=live)
    y = tl.load(y_ptr + offs, mask=live)
    out = x + y
    if FAULT == 2:
        out = out + 1e-3  # finite, and wrong by far more than one rounding
    tl.store(out_ptr + offs, out, mask=live)


KERNELS = (vector_add_kernel,)  # what the harness primes before compiling in parallel


def _launch(ctx: Ctx, x: Any, y: Any, out: Any, n: int, fault: int, warmup: bool = False) -> Any:
    p = ctx.plan
    grid = (triton.cdiv(n, p.vadd_block),)
    if warmup:
        return vector_add_kernel.warmup(x, y, out, n, BLOCK=p.vadd_block, FAULT=fault, num_warps=p.vadd_warps,
                                        grid=grid)
    else:
        vector_add_kernel[grid](x, y, out, n, BLOCK=p.vadd_block, FAULT=fault, num_warps=p.vadd_warps)


def jobs(ctx: Ctx) -> list[tuple[str, Callable[[], Any]]]:
    """Compile-only warm-ups, one per binary the check launches (n divisible by 16 or not)."""
    torch = ctx.torch
    t = torch.empty(16, device=ctx.device)
    fault = ctx.faulty(FAMILY)
    return [(FAMILY, functools.partial(_launch, ctx, t, t, t, n, fault, True))
            for n in sorted({16 if n % 16 == 0 else 17 for n in ctx.plan.vadd_sizes})]


def run(ctx: Ctx) -> None:
    ctx.begin(FAMILY, "fp32")
    torch, p = ctx.torch, ctx.plan
    fault = ctx.faulty(FAMILY)
    ok, worst, words = True, 0.0, []  # type: tuple[bool, float | None, list[str]]
    sizes = list(p.vadd_sizes) + ([p.vadd_timed] if p.vadd_timed else [])
    x: Any = None
    y: Any = None
    out: Any = None
    for i, n in enumerate(sizes):
        x = ctx.randn((n,), f"{FAMILY} x {n}")
        y = ctx.randn((n,), f"{FAMILY} y {n}")
        out = ctx.poison((n,), torch.float32)
        t0 = time.perf_counter()
        _launch(ctx, x, y, out, n, fault)
        ctx.sync()
        if ctx.index == 0 and i == 0 and not ctx.interpret:  # the interpreter compiles nothing
            ctx.r.jit_seconds = time.perf_counter() - t0
        if i == 0 and ctx.one_wrong(FAMILY):
            ctx.plant(out, *one_wrong(torch, y))
        ref = x.double() + y.double()
        good, err, text = ctx.compare(out, ref, bound(torch, ref))
        ok &= good
        worst = None if err is None or worst is None else max(worst, err)
        words.append(f"n={n}: {text}")
    timing = None
    if p.timed and ok:
        nt = x.numel()  # the timed size is the last one checked above
        out_t = torch.empty_like(x)
        ms, ms_t = ctx.race(lambda: _launch(ctx, x, y, out, nt, fault), lambda: torch.add(x, y, out=out_t))
        gbs = lambda t: 3 * nt * 4 / (t * 1e-3) / 1e9  # noqa: E731 - read x, read y, write out
        timing = ("GB/s", gbs(ms), gbs(ms_t))
        words.append(f"timed n={nt} (BLOCK {p.vadd_block}, {p.vadd_warps} warps) vs torch.add")
    ctx.record(FAMILY, "fp32", ok, worst, words, timing)


