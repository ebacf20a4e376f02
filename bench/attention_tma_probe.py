"""Probe: the same online-softmax attention with K/V (and Q) read through Hopper TMA tensor descriptors instead of
block pointers, to see how far the load path alone moves the ratio to torch's SDPA at head dim 128.

    python3 bench/attention_tma_probe.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tritonlock", "verify", "runner"))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402
from tlverify.k_attention import _fold  # noqa: E402


@triton.jit
def _attend_tma(acc, l_i, m_i, q, k_desc, v_desc, off_hz, start, end, offs_m, n_ctx, qk_scale,
                BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASK: tl.constexpr, CAUSAL: tl.constexpr):
    for s in range(start, end, BLOCK_N):
        k = k_desc.load([off_hz, s, 0]).reshape(BLOCK_N, HEAD_DIM)
        v = v_desc.load([off_hz, s, 0]).reshape(BLOCK_N, HEAD_DIM)
        acc, l_i, m_i = _fold(acc, l_i, m_i, q, tl.trans(k), v, qk_scale, offs_m, s + tl.arange(0, BLOCK_N), start, n_ctx,
                              MASK, CAUSAL, False)
    return acc, l_i, m_i


@triton.jit
def attention_tma(q_desc, k_desc, v_desc, O, sm_scale, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.num_programs(0) - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    off_hz = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    q = q_desc.load([off_hz, start_m * BLOCK_M, 0]).reshape(BLOCK_M, HEAD_DIM)
    if CAUSAL:
        diag = start_m * BLOCK_M
        acc, l_i, m_i = _attend_tma(acc, l_i, m_i, q, k_desc, v_desc, off_hz, 0, diag, offs_m, N_CTX, qk_scale,
                                    BLOCK_N, HEAD_DIM, False, True)
        acc, l_i, m_i = _attend_tma(acc, l_i, m_i, q, k_desc, v_desc, off_hz, diag,
                                    tl.minimum(diag + BLOCK_M, N_CTX), offs_m, N_CTX, qk_scale, BLOCK_N, HEAD_DIM,
                                    True, True)
    else:
        full = (N_CTX // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = _attend_tma(acc, l_i, m_i, q, k_desc, v_desc, off_hz, 0, full, offs_m, N_CTX, qk_scale,
                                    BLOCK_N, HEAD_DIM, False, False)
        acc, l_i, m_i = _attend_tma(acc, l_i, m_i, q, k_desc, v_desc, off_hz, full, N_CTX, offs_m, N_CTX, qk_scale,
                                    BLOCK_N, HEAD_DIM, True, False)
    out = acc / l_i[:, None]
    o_blk = tl.make_block_ptr(O + off_hz.to(tl.int64) * N_CTX * HEAD_DIM, shape=(N_CTX, HEAD_DIM),
                              strides=(HEAD_DIM, 1), offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM),
                              order=(1, 0))
    tl.store(o_blk, out.to(O.dtype.element_ty), boundary_check=(0,))


def run(q, k, v, o, causal, cfg):
    b, h, n, d = q.shape
    bm, bn, warps, stages = cfg
    descs = [TensorDescriptor(t.view(b * h, n, d), [b * h, n, d], [n * d, d, 1], [1, blk, d])
             for t, blk in ((q, bm), (k, bn), (v, bn))]
    attention_tma[(triton.cdiv(n, bm), b * h)](*descs, o, d ** -0.5, n, HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn,
                                                CAUSAL=causal, num_warps=warps, num_stages=stages)


B, H, N = 8, 16, 4096
sdpa = torch.nn.functional.scaled_dot_product_attention
for dt in (torch.float16, torch.bfloat16):
    for d, cfgs in ((64, [(128, 64, 8, 3), (128, 64, 4, 3), (128, 128, 8, 3)]),
                    (128, [(128, 128, 8, 3), (128, 64, 8, 3), (128, 128, 8, 2), (128, 64, 4, 3)])):
        q, k, v = (torch.randn(B, H, N, d, device="cuda", dtype=dt) for _ in range(3))
        o = torch.empty_like(q)
        for causal in (False, True):
            ref = sdpa(q, k, v, is_causal=causal)
            flops = 4 * B * H * N * N * d * (0.5 if causal else 1.0)
            ms_t = triton.testing.do_bench(lambda: sdpa(q, k, v, is_causal=causal), warmup=10, rep=50,
                                           return_mode="median")
            for cfg in cfgs:
                try:
                    run(q, k, v, o, causal, cfg)
                    err = (o.float() - ref.float()).abs().max().item()
                    ms = triton.testing.do_bench(lambda: run(q, k, v, o, causal, cfg), warmup=10, rep=50,
                                                 return_mode="median")
                except Exception as e:
                    print(dt, d, causal, cfg, "failed:", str(e)[:200], flush=True)
                    continue
                print(f"tma {str(dt)[6:]:9} d{d:<4} causal={causal!s:5} {str(cfg):18} {flops / ms / 1e9:6.0f} TFLOP/s "
                      f"sdpa {flops / ms_t / 1e9:6.0f} ratio {ms_t / ms:5.2f} max|err| {err:.2g}", flush=True)

# which kernels torch's SDPA runs here (cuDNN, flash, memory-efficient)
from torch.profiler import ProfilerActivity, profile  # noqa: E402

for d in (64, 128):
    q, k, v = (torch.randn(B, H, N, d, device="cuda", dtype=torch.float16) for _ in range(3))
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        sdpa(q, k, v)
        torch.cuda.synchronize()
    names = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
    print(f"SDPA d{d} kernels:", [n[:90] for n in names])
