# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""attention: a flash-attention-style forward kernel (online softmax over key blocks, tl.dot on pointer tiles),
causal and not, fp16 and bf16, head dims 64 and 128; against float64 attention and timed against torch's
scaled_dot_product_attention. Tiled loads feeding tl.dot are the code path ptxas and new GPUs break first; on Hopper
and later the same kernel reads through TMA tensor descriptors too."""

# mypy: disable-error-code="no-untyped-def,untyped-decorator,no-untyped-call,import-not-found,unused-ignore"

from __future__ import annotations

import functools
import importlib.util
import math
from typing import Any, Callable

import triton
import triton.language as tl

from . import bounds
from .common import Ctx, dtype_name
from .torchside import TIMED_HEAD_DIMS, VARIANTS, Variants, attention64, grouped, timed, variants

FAMILY = "attention"
LOG2E = 1.4426950408889634


@triton.jit
def _fold(acc, l_i, m_i, q, k, v, qk_scale, offs_m, offs_n, lo, hi,
          MASK: tl.constexpr, CAUSAL: tl.constexpr, DOT_FP32: tl.constexpr):
    """One key/value block into the running output (acc), row sums (l_i) and row maxima (m_i): online softmax."""
    if DOT_FP32:  # interpreter only: its tl.dot multiplies bf16 bit patterns as integers
        qk = tl.dot(q.to(tl.float32), k.to(tl.float32))
    else:
        qk = tl.dot(q, k)
    if MASK:  # keys outside [lo, hi) and, causal, keys after the query
        keep = (offs_n[None, :] >= lo) & (offs_n[None, :] < hi)
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        qk = tl.where(keep, qk, float("-inf"))
    # the scale (log2(e) / sqrt(d), positive) goes into one multiply-add per score below
    m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    if MASK:  # a row that has seen no key yet keeps m = -inf; exp2(-inf - -inf) would be NaN
        m_new = tl.where(m_new == float("-inf"), 0.0, m_new)
    p = tl.math.exp2(qk * qk_scale - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    p = p.to(v.dtype)
    if DOT_FP32:
        acc = tl.dot(p.to(tl.float32), v.to(tl.float32), acc)
    else:
        acc = tl.dot(p, v, acc)
    return acc, l_i, m_new


@triton.jit
def _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, start, end, offs_m, n_ctx, qk_scale,
            BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASK: tl.constexpr, CAUSAL: tl.constexpr,
            DOT_FP32: tl.constexpr, TRIPS: tl.constexpr):
    """Fold key/value blocks [start, end) into the running (acc, l_i, m_i); MASK only on diagonal and tail blocks.
    K is read transposed — a (HEAD_DIM, BLOCK_N) tile — so tl.dot(q, k) gives the scores directly."""
    offs_d = tl.arange(0, HEAD_DIM)
    if TRIPS > 0:
        # Interpreter only: triton <= 3.6's interpreter cannot take a runtime loop bound with numpy >= 2.4
        # (triton-lang/triton#9171), so it visits every block and masks those outside [start, end).
        for i in range(TRIPS):
            offs_n = i * BLOCK_N + tl.arange(0, BLOCK_N)
            k = tl.load(k_base + offs_n[None, :] * stride_kn + offs_d[:, None], mask=offs_n[None, :] < n_ctx,
                        other=0.0)
            v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :], mask=offs_n[:, None] < n_ctx,
                        other=0.0)
            acc, l_i, m_i = _fold(acc, l_i, m_i, q, k, v, qk_scale, offs_m, offs_n, start,
                                  tl.minimum(end, n_ctx), True, CAUSAL, DOT_FP32)
    else:
        for s in range(start, end, BLOCK_N):
            offs_n = s + tl.arange(0, BLOCK_N)
            k_ptrs = k_base + offs_n[None, :] * stride_kn + offs_d[:, None]
            v_ptrs = v_base + offs_n[:, None] * stride_vn + offs_d[None, :]
            if MASK:
                k = tl.load(k_ptrs, mask=offs_n[None, :] < n_ctx, other=0.0)
                v = tl.load(v_ptrs, mask=offs_n[:, None] < n_ctx, other=0.0)
            else:
                k = tl.load(k_ptrs)
                v = tl.load(v_ptrs)
            acc, l_i, m_i = _fold(acc, l_i, m_i, q, k, v, qk_scale, offs_m, offs_n, start,
                                  n_ctx, MASK, CAUSAL, DOT_FP32)
    return acc, l_i, m_i


@triton.jit(do_not_specialize=["H", "N_CTX"])
def attention_kernel(Q, K, V, O, sm_scale, stride_qz, stride_qh, stride_qm, stride_kz, stride_kh, stride_kn,
                     stride_vz, stride_vh, stride_vn, stride_oz, stride_oh, stride_om, H, N_CTX,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                     DOT_FP32: tl.constexpr, FAULT: tl.constexpr,
                     TRIPS: tl.constexpr):
    # One program per BLOCK_M queries of one (batch, head); tensors are (batch, head, token, dim), dim contiguous.
    # Causal: the last query blocks have the most keys to visit, so they start first (fewer idle SMs at the end).
    # Plain pointer tiles (Triton 3.9 removed block pointers; the TMA kernel below is the descriptor path).
    start_m = tl.num_programs(0) - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    off_hz = tl.program_id(1)
    z = (off_hz // H).to(tl.int64)
    h = (off_hz % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    k_base = K + z * stride_kz + h * stride_kh
    v_base = V + z * stride_vz + h * stride_vh
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    # softmax(x) with exp2: exp(x * scale) = exp2(x * scale * log2(e))
    qk_scale = sm_scale * 1.4426950408889634
    if FAULT == 2:
        qk_scale = sm_scale  # the injected bug: exp2 without log2(e), a softmax at the wrong temperature
    q = tl.load(Q + z * stride_qz + h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :],
                mask=offs_m[:, None] < N_CTX, other=0.0)
    if CAUSAL:
        # blocks left of the diagonal need no mask; the diagonal ones (BLOCK_M // BLOCK_N of them) do
        diag = start_m * BLOCK_M
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, 0, diag, offs_m, N_CTX,
                                qk_scale, BLOCK_N, HEAD_DIM, False, True, DOT_FP32, TRIPS)
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, diag,
                                tl.minimum(diag + BLOCK_M, N_CTX), offs_m, N_CTX, qk_scale, BLOCK_N, HEAD_DIM, True,
                                True, DOT_FP32, TRIPS)
    else:
        # whole key blocks unmasked, then the tail block (none when N_CTX is a multiple of BLOCK_N) masked
        full = (N_CTX // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, 0, full, offs_m, N_CTX,
                                qk_scale, BLOCK_N, HEAD_DIM, False, False, DOT_FP32, TRIPS)
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, full, N_CTX, offs_m, N_CTX,
                                qk_scale, BLOCK_N, HEAD_DIM, True, False, DOT_FP32, TRIPS)
    out = acc / l_i[:, None]
    if FAULT != 1 or start_m < tl.num_programs(0) - 1:  # FAULT 1: the last query block is never written
        tl.store(O + z * stride_oz + h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :],
                 out.to(O.dtype.element_ty), mask=offs_m[:, None] < N_CTX)


@triton.jit
def _attend_tma(acc, l_i, m_i, q, k_desc, v_desc, off_hz, start, end, offs_m, n_ctx, qk_scale,
                BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASK: tl.constexpr, CAUSAL: tl.constexpr,
                WS: tl.constexpr):
    """_attend with K and V read by the tensor memory accelerator: out-of-range rows of a head arrive as zeros.
    WS: Triton's automatic warp specialisation of the loop (loads, dots and the softmax in partitions of their own)."""
    for s in tl.range(start, end, BLOCK_N, warp_specialize=WS):
        k = k_desc.load([off_hz, s, 0]).reshape(BLOCK_N, HEAD_DIM)
        v = v_desc.load([off_hz, s, 0]).reshape(BLOCK_N, HEAD_DIM)
        acc, l_i, m_i = _fold(acc, l_i, m_i, q, tl.trans(k), v, qk_scale, offs_m, s + tl.arange(0, BLOCK_N), start,
                              n_ctx, MASK, CAUSAL, False)
    return acc, l_i, m_i


@triton.jit(do_not_specialize=["sm_scale"])
def attention_tma_kernel(q_desc, k_desc, v_desc, O, sm_scale, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, FAULT: tl.constexpr, WS: tl.constexpr):
    """The same attention with Q, K and V read through TMA tensor descriptors (Hopper and later), each (batch x head,
    token, dim); the output is stored through plain pointers."""
    start_m = tl.num_programs(0) - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    off_hz = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if FAULT == 2:
        qk_scale = sm_scale
    q = q_desc.load([off_hz, start_m * BLOCK_M, 0]).reshape(BLOCK_M, HEAD_DIM)
    if CAUSAL:
        diag = start_m * BLOCK_M
        acc, l_i, m_i = _attend_tma(acc, l_i, m_i, q, k_desc, v_desc, off_hz, 0, diag, offs_m, N_CTX, qk_scale,
                                    BLOCK_N, HEAD_DIM, False, True, WS)
        acc, l_i, m_i = _attend_tma(acc, l_i, m_i, q, k_desc, v_desc, off_hz, diag,
                                    tl.minimum(diag + BLOCK_M, N_CTX), offs_m, N_CTX, qk_scale, BLOCK_N, HEAD_DIM,
                                    True, True, False)
    else:
        full = (N_CTX // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = _attend_tma(acc, l_i, m_i, q, k_desc, v_desc, off_hz, 0, full, offs_m, N_CTX, qk_scale,
                                    BLOCK_N, HEAD_DIM, False, False, WS)
        acc, l_i, m_i = _attend_tma(acc, l_i, m_i, q, k_desc, v_desc, off_hz, full, N_CTX, offs_m, N_CTX, qk_scale,
                                    BLOCK_N, HEAD_DIM, True, False, False)
    out = acc / l_i[:, None]
    o_ptrs = (O + off_hz.to(tl.int64) * N_CTX * HEAD_DIM + offs_m[:, None] * HEAD_DIM
              + tl.arange(0, HEAD_DIM)[None, :])
    if FAULT != 1 or start_m < tl.num_programs(0) - 1:
        tl.store(o_ptrs, out.to(O.dtype.element_ty), mask=offs_m[:, None] < N_CTX)


KERNELS = (attention_kernel, attention_tma_kernel)  # what the harness primes before compiling in parallel


# (BLOCK_M, BLOCK_N, warps, stages) per head dim on a GPU; small blocks in the interpreter. From the H200 sweeps in
# bench/RESULTS.md (bench/attention_sweep.py, bench/attention_tma_probe.py).
GPU_CONFIG = {64: (128, 64, 8, 3), 128: (128, 128, 8, 3)}
# (BLOCK_M, BLOCK_N, warps, stages, warp-specialised) of the TMA kernel per head dim
TMA_CONFIG = {64: (128, 64, 4, 3, False), 128: (128, 128, 8, 3, False)}
INTERPRETER_CONFIG = (16, 16, 1, 1)


def _config(ctx: Ctx, d: int) -> tuple[int, int, int, int]:
    return INTERPRETER_CONFIG if ctx.interpret else GPU_CONFIG[d]


def _launch(ctx: Ctx, q: Any, k: Any, v: Any, o: Any, dims: tuple[int, int, int], d: int, causal: bool,
            fault: int, cfg: tuple[int, int, int, int] | None = None, warmup: bool = False) -> Any:
    b, h, n = dims
    bm, bn, warps, stages = cfg or _config(ctx, d)
    strides = (h * n * d, n * d, d)  # contiguous (batch, head, token, dim)
    grid = (triton.cdiv(n, bm), b * h)
    dot_fp32 = ctx.interpret and q.dtype == ctx.torch.bfloat16
    args = (q, k, v, o, 1.0 / math.sqrt(d), *strides, *strides, *strides, *strides, h, n)
    kw: dict[str, Any] = dict(HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, DOT_FP32=dot_fp32, FAULT=fault, TRIPS=triton.cdiv(n, bn) if ctx.interpret else 0)
    if not ctx.interpret:
        kw.update(num_warps=warps, num_stages=stages)
    if warmup:
        return attention_kernel.warmup(*args, grid=grid, **kw)
    attention_kernel[grid](*args, **kw)
    return None


def has_tma(ctx: Ctx) -> bool:
    """Hopper and later, with a Triton that takes host tensor descriptors (3.4+)."""
    if ctx.interpret or getattr(ctx.torch.version, "hip", None):
        return False
    try:
        if importlib.util.find_spec("triton.tools.tensor_descriptor") is None:
            return False
    except (ImportError, ValueError):
        return False
    return bool(ctx.torch.cuda.get_device_capability(ctx.index)[0] >= 9)


def _launch_tma(ctx: Ctx, q: Any, k: Any, v: Any, o: Any, dims: tuple[int, int, int], d: int, causal: bool,
                fault: int, warmup: bool = False, cfg: tuple[int, int, int, int, bool] | None = None) -> Any:
    from triton.tools.tensor_descriptor import TensorDescriptor

    b, h, n = dims
    bm, bn, warps, stages, ws = cfg or TMA_CONFIG[d]
    # (batch x head, token, dim) views: a block never crosses into the next head (those rows read as zeros)
    descs = [TensorDescriptor(t, [b * h, n, d], [n * d, d, 1], [1, blk, d]) for t, blk in ((q, bm), (k, bn), (v, bn))]
    grid = (triton.cdiv(n, bm), b * h)
    kw = dict(HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, FAULT=fault, WS=ws, num_warps=warps,
              num_stages=stages)
    if warmup:
        return attention_tma_kernel.warmup(*descs, o, 1.0 / math.sqrt(d), n, grid=grid, **kw)
    attention_tma_kernel[grid](*descs, o, 1.0 / math.sqrt(d), n, **kw)
    return None


def _tma_dims(ctx: Ctx, d: int) -> tuple[int, int, int]:
    """Where the TMA path is checked (and timed): the timed size for a timed variant, else the first check size."""
    return ctx.plan.attn_timed if timed(ctx, d) and ctx.plan.attn_timed else ctx.plan.attn_sizes[0]


def _sizes(ctx: Ctx, d: int) -> list[tuple[int, int, int]]:
    return list(ctx.plan.attn_sizes) + ([ctx.plan.attn_timed] if timed(ctx, d) and ctx.plan.attn_timed else [])


def jobs(ctx: Ctx) -> list[tuple[str, Callable[[], None]]]:
    torch = ctx.torch
    fault = ctx.faulty(FAMILY)
    # one binary per variant: H and N_CTX are not specialised on, and the tail loop runs zero times when even
    dims = ctx.plan.attn_sizes[0]
    out: list[tuple[str, Callable[[], Any]]] = []
    tma = has_tma(ctx)
    for dt, d, causal in variants(torch, ctx.plan.quick):
        t = torch.empty(16, device=ctx.device, dtype=dt)
        key = f"attention d{d}{' causal' if causal else ''} {dtype_name(torch, dt)}"
        out.append((key, functools.partial(_launch, ctx, t, t, t, t, dims, d, causal, fault, warmup=True)))
        if tma:
            b, h, n = _tma_dims(ctx, d)
            big = torch.empty(b * h * n * d, device=ctx.device, dtype=dt)  # descriptors check the extent
            out.append((key, functools.partial(_launch_tma, ctx, big, big, big, big, (b, h, n), d, causal, fault,
                                               warmup=True)))
    return out


def reference(torch: Any, q: Any, k: Any, v: Any, causal: bool, first: int = 0, name: str | None = None,
              interpret: bool = False) -> Any:
    """Attention in float64, on the device: softmax(q k^T / sqrt(d), masked) v. `first`: the position of q's first
    row among the keys (q may be the last rows of a longer sequence: causal row i sees keys up to first + i).
    With `name` (the inputs' type): (reference, bound per output)."""
    q64, k64, v64, s, w, o, hidden = attention64(torch, q, k, v, causal, first)
    if name is None:
        return o
    return o, bound(torch, q64, k64, v64, s, w, o, hidden, name, interpret)


def bound(torch: Any, q64: Any, k64: Any, v64: Any, s: Any, w: Any, o: Any, hidden: Any, name: str,
          interpret: bool = False) -> Any:
    """The online softmax of _fold, per output o[i, c] (w: the exact weights, s: the exact scaled scores).

    Each score q.k_j is an fp32 dot of d exact products (bounds.dot_fp32 over |q|.|k_j|); the exponent
    s_j log2(e) - m is then off by that over sqrt(d), times log2(e), plus three fp32 roundings of values up to
    max|s| log2(e); ex2.approx adds EXP2. As a relative error of each weight: rho_i <= max_j dot_fp32 / sqrt(d) + EXP2
    (1 + max_j |s_ij|). Weights perturbed by rho move a convex combination by at most rho (Vbar + |o|), Vbar =
    sum_j w_j |v_jc| (numerator and denominator both), twice. The weights are rounded to the input type before the
    second dot (u_in relatively; below fp16's normal range, 2^-25 each: n 2^-25 max|v| in all, the denominator being
    at least 1), which sums n products in fp32 (dot_fp32 relative to Vbar), as the row sums l are summed (the same,
    all positive); the rescaling by alpha multiplies acc and l by the same value (2^-24 each, once per key block at
    most n times: 2^-23 n), the division 2^-22, and the store rounds to the output type."""
    u_in = bounds.unit(name, interpret)
    d, n = q64.shape[-1], k64.shape[-2]
    e_dot = bounds.dot_fp32(d, q64.abs() @ k64.abs().transpose(-1, -2))
    if hidden is not None:
        e_dot = e_dot.masked_fill(hidden, 0.0)
        s = s.masked_fill(hidden, 0.0)
    rho = e_dot.amax(-1, keepdim=True) / math.sqrt(d) * (1 + 2.0 ** -20) \
        + bounds.EXP2 * (1 + s.abs().amax(-1, keepdim=True))
    vbar = w @ v64.abs()
    acc = 2.0 ** -23 * (3 * n + 34)
    rel = 2 * rho + u_in + 2 * acc * (1 + u_in) + 2.0 ** -23 * n + 2.0 ** -22
    sub = n * 2.0 ** -25 * v64.abs().amax(-2, keepdim=True) if name == "fp16" else 0.0
    exact = 1.01 * rel * (vbar + o.abs()) + sub + bounds.ref_error(d, vbar)
    return bounds.stored(exact, o.abs(), name, interpret)


def one_wrong(torch: Any, q: Any, k: Any, v: Any, causal: bool, first: int) -> tuple[tuple[int, ...], float]:
    """The smallest fault: the last query of the first head without the key that moves one of its outputs most:
    o[c] over the other keys, (sum_(j != j*) w_j v_jc) / (1 - w_j*) = o_c + w_j* (o_c - v_j*c) / (1 - w_j*)."""
    q64, k64, v64 = q[0, 0, -1].double(), k[0, 0].double(), v[0, 0].double()
    s = (k64 @ q64) / math.sqrt(q.shape[-1])
    if causal:
        s[first + q.shape[-2]:] = float("-inf")  # the last query sees keys up to its own position
    w = torch.softmax(s, dim=0)
    o = w @ v64
    delta = w[:, None] * (o[None, :] - v64) / (1 - w[:, None]).clamp(min=1e-300)
    at = int(delta.abs().argmax())
    j, c = divmod(at, v64.shape[-1])
    return (0, 0, q.shape[-2] - 1, c), float(delta[j, c])


# The timed size is checked on slices: the first and the last CHECK_ROWS / 2 queries of two heads, against every key
# (their float64 scores are 2 x 256 x 4096, not 2 x 4096 x 4096: half a gigabyte of float64 intermediates per variant
# was most of the attention step's time). The first query block sees the fewest keys when causal, the last the most
# (and is launched first); every output is also checked for the NaN poison.
CHECK_ROWS = 256

def run(ctx: Ctx) -> None:
    """Every variant, in report order: in a timed run by the threads torch's first calls started
    (torchside.first_calls; or, without them, by threads started here), else one after another."""
    if not grouped(ctx):
        for dt, d, causal in variants(ctx.torch, ctx.plan.quick):
            check(ctx, dt, d, causal)
        return
    group = VARIANTS.pop(ctx.index, None) or Variants(ctx)
    group.run(check)


def check(ctx: Ctx, dt: Any, d: int, causal: bool) -> None:
    torch, p = ctx.torch, ctx.plan
    name = dtype_name(torch, dt)
    fault = ctx.faulty(FAMILY)
    ok, worst, words = True, 0.0, []  # type: tuple[bool, float | None, list[str]]
    kernel = f"attention d{d}{' causal' if causal else ''}"
    ctx.begin(kernel, name, family=FAMILY)
    tma = has_tma(ctx)
    # with TMA, the block-pointer kernel is checked at the check sizes and the TMA one at the timed size
    runs = [(dims, "pointer tiles") for dims in (p.attn_sizes if tma else _sizes(ctx, d))]
    if tma:
        runs.append((_tma_dims(ctx, d), "TMA descriptors"))
    q: Any = None
    k: Any = None
    v: Any = None
    o: Any = None
    for ri, (dims, path) in enumerate(runs):
        b, h, n = dims
        if q is None or tuple(q.shape) != (b, h, n, d):
            key = f"{kernel} {name} {b}x{h}x{n}"
            q, k, v = (ctx.randn((b, h, n, d), f"{key} {x}", dt) for x in "qkv")
        o = ctx.poison((b, h, n, d), dt)
        if path == "TMA descriptors":
            _launch_tma(ctx, q, k, v, o, dims, d, causal, fault)
        else:
            _launch(ctx, q, k, v, o, dims, d, causal, fault)
        ctx.sync()
        if ri == 0 and ctx.one_wrong(FAMILY):
            ctx.plant(o, *one_wrong(torch, q, k, v, causal, 0))
        if dims == p.attn_timed:  # slices of it (see CHECK_ROWS); the rest only for unwritten NaN poison
            half = CHECK_ROWS // 2
            pairs = [reference(torch, q[:1, :2, at:at + half], k[:1, :2], v[:1, :2], causal, first=at, name=name,
                               interpret=ctx.interpret)
                     for at in (0, n - half)]
            ref = torch.cat([x[0] for x in pairs], dim=2)
            limit = torch.cat([x[1] for x in pairs], dim=2)
            got = torch.cat([o[:1, :2, :half], o[:1, :2, n - half:]], dim=2)
            unwritten = int(torch.isnan(o).sum())
        else:
            (ref, limit), got, unwritten = reference(torch, q, k, v, causal, name=name,
                                                             interpret=ctx.interpret), o, 0
        good, err, text = ctx.compare(got, ref, limit)
        if good and unwritten:
            good, err, text = False, None, (f"{unwritten} of {o.numel()} outputs are still NaN (the poison written "
                                            "before the run): never written or computed as NaN")
        ok &= good
        worst = None if err is None or worst is None else max(worst, err)
        checked = f" (first and last {CHECK_ROWS // 2} queries of 2 heads checked)" if dims == p.attn_timed else ""
        words.append(f"{path} {b}x{h}x{n}x{d}{checked}: {text}")
        del ref, limit
    timing = None
    if p.timed and not timed(ctx, d):
        words.append(f"not timed: a full run times head dim {', '.join(map(str, TIMED_HEAD_DIMS))}")
    if timed(ctx, d) and ok and p.attn_timed is not None:
        b, h, n = p.attn_timed
        sdpa = torch.nn.functional.scaled_dot_product_attention
        if tma:
            ms, ms_t = ctx.race(lambda: _launch_tma(ctx, q, k, v, o, (b, h, n), d, causal, 0),
                                lambda: sdpa(q, k, v, is_causal=causal), long=True)
        else:
            ms, ms_t = ctx.race(lambda: _launch(ctx, q, k, v, o, (b, h, n), d, causal, 0),
                                lambda: sdpa(q, k, v, is_causal=causal), long=True)
        flops = 4 * b * h * n * n * d * (0.5 if causal else 1.0)
        tflops = lambda t: flops / (t * 1e-3) / 1e12  # noqa: E731
        timing = ("TFLOP/s", tflops(ms), tflops(ms_t))
        bm, bn, warps, stages, ws = TMA_CONFIG[d] if tma else (*_config(ctx, d), False)
        words.append(f"timed {b}x{h}x{n}x{d}, {'TMA descriptors' if tma else 'pointer tiles'} [{bm}x{bn}, "
                     f"{warps} warps, {stages} stages{', warp-specialised' if ws else ''}] vs torch "
                     "scaled_dot_product_attention")
    ctx.record(kernel, name, ok, worst, words, timing, family=FAMILY)
