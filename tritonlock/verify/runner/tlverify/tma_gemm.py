# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""A persistent matmul that reads its tiles through TMA tensor descriptors (Hopper and later): the fair yardstick for
the fp32 (tf32) and FP8 rows, whose pointer kernels trail cuBLAS on Hopper because wgmma there wants its operands in
shared memory in the layout the tensor memory accelerator writes.

One program per multiprocessor walks the output tiles (grouped, so programs running at once share A and B panels in
L2); A is M x K and B is N x K (K-major, what tf32 and FP8 wgmma read), both row-major in memory; C = A @ B^T, times
the two per-tensor scales for FP8. The descriptors clip and zero-fill the edges, so any size whose rows are 16-byte
aligned runs with no masks.
"""

# mypy: disable-error-code="no-untyped-def,untyped-decorator,no-untyped-call,import-not-found,unused-ignore"

from __future__ import annotations

import importlib.util
from typing import Any

import triton
import triton.language as tl


@triton.jit
def gemm_tma_kernel(a_desc, b_desc, c_desc, scale_a, scale_b, M, N, K,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                    SCALED: tl.constexpr, SUBTILE: tl.constexpr, WS: tl.constexpr, FAULT: tl.constexpr):
    first = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles = tiles_m * tiles_n
    # FAULT 2 drops the last K tile: the classic off-by-one
    k_tiles = tl.cdiv(K, BLOCK_K) - FAULT // 2
    band = GROUP_M * tiles_n
    for tile in tl.range(first, tiles, tl.num_programs(0), flatten=True, warp_specialize=WS):
        first_m = (tile // band) * GROUP_M
        band_rows = tl.minimum(tiles_m - first_m, GROUP_M)
        om = (first_m + (tile % band) % band_rows) * BLOCK_M
        on = ((tile % band) // band_rows) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_tiles):
            a = a_desc.load([om, kt * BLOCK_K])
            b = b_desc.load([on, kt * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        if SCALED:
            acc = acc * (tl.load(scale_a) * tl.load(scale_b))
        keep = True
        if FAULT == 1:  # the last tile is never written
            keep = tile < tiles - 1
        if keep:
            if SUBTILE:  # the epilogue in two halves: half the shared memory for the store
                halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
                c0, c1 = tl.split(halves)
                c_desc.store([om, on], c0.to(c_desc.dtype))
                c_desc.store([om, on + BLOCK_N // 2], c1.to(c_desc.dtype))
            else:
                c_desc.store([om, on], acc.to(c_desc.dtype))


KERNELS = (gemm_tma_kernel,)


def available(torch: Any, index: int) -> bool:
    """Hopper or later, NVIDIA, with a Triton that takes host tensor descriptors (3.4+)."""
    if getattr(torch.version, "hip", None):
        return False
    try:
        if importlib.util.find_spec("triton.tools.tensor_descriptor") is None:
            return False
    except (ImportError, ValueError):
        return False
    return bool(torch.cuda.get_device_capability(index)[0] >= 9)


def sms(torch: Any, index: int) -> int:
    return int(torch.cuda.get_device_properties(index).multi_processor_count)


def launch(a: Any, bt: Any, c: Any, cfg: tuple[int, int, int, int, int, bool, bool], n_sms: int, *,
           scale_a: Any = None, scale_b: Any = None, fault: int = 0, warmup: bool = False) -> Any:
    """C = A @ Bt^T (times scale_a * scale_b when given). a: M x K, bt: N x K, c: M x N, all row-major.
    cfg: (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, subtile, warp-specialised)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    bm, bn, bk, warps, stages, subtile, ws = cfg
    m, kk = a.shape
    n = bt.shape[0]
    da = TensorDescriptor(a, [m, kk], [kk, 1], [bm, bk])
    db = TensorDescriptor(bt, [n, kk], [kk, 1], [bn, bk])
    dc = TensorDescriptor(c, [m, n], [n, 1], [bm, bn // 2 if subtile else bn])
    scaled = scale_a is not None
    sa = scale_a if scaled else c
    sb = scale_b if scaled else c
    grid = (min(n_sms, triton.cdiv(m, bm) * triton.cdiv(n, bn)),)
    kw = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, SCALED=scaled, SUBTILE=subtile, WS=ws, FAULT=fault,
              num_warps=warps, num_stages=stages)
    if warmup:
        return gemm_tma_kernel.warmup(da, db, dc, sa, sb, m, n, kk, grid=grid, **kw)
    gemm_tma_kernel[grid](da, db, dc, sa, sb, m, n, kk, **kw)
    return None


def words(cfg: tuple[int, int, int, int, int, bool, bool]) -> str:
    bm, bn, bk, warps, stages, subtile, ws = cfg
    extra = "".join((", split epilogue" if subtile else "", ", warp-specialised" if ws else ""))
    return f"[persistent TMA {bm}x{bn}x{bk}, {warps} warps, {stages} stages{extra}]"
