"""Tile sweep for verify's attention kernel against torch's SDPA on this GPU (how GPU_CONFIG was chosen).

    PYTHONPATH=tritonlock/verify/runner python3 bench/attention_sweep.py
"""

from __future__ import annotations

import concurrent.futures
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tritonlock", "verify", "runner"))

import torch  # noqa: E402
import triton  # noqa: E402
from tlverify import k_attention as A  # noqa: E402
from tlverify.common import Ctx, Plan  # noqa: E402
from tlverify.report import Report  # noqa: E402

B, H, N = 8, 16, 4096
CANDIDATES = {
    64: [(128, 64, 8, 3), (128, 64, 4, 3), (128, 64, 8, 4), (128, 64, 8, 2), (128, 128, 8, 2), (128, 128, 8, 3)],
    128: [(128, 128, 8, 3), (128, 128, 8, 2), (128, 64, 8, 3), (128, 64, 8, 2), (64, 128, 4, 3), (128, 128, 4, 2)],
}
ctx = Ctx(Report(), torch, Plan(True, quick=False), "cuda:0", 0, None, False)
dt = torch.float16 if os.environ.get("DTYPE", "fp16") == "fp16" else torch.bfloat16
print("dtype", dt)
jobs = []
t = torch.empty(16, device="cuda", dtype=dt)
for d, cfgs in CANDIDATES.items():
    for causal in (False, True):
        for cfg in cfgs:
            jobs.append(lambda d=d, causal=causal, cfg=cfg: A._launch(ctx, t, t, t, t, (B, H, N), d, causal, 0, cfg, True))
with concurrent.futures.ThreadPoolExecutor(16) as pool:
    list(pool.map(lambda f: f(), jobs))
sdpa = torch.nn.functional.scaled_dot_product_attention
print(f"{'d':>4} {'causal':>6} {'config':>20} {'TFLOP/s':>8} {'SDPA':>8} {'ratio':>6}")
for d, cfgs in CANDIDATES.items():
    q, k, v = (torch.randn(B, H, N, d, device="cuda", dtype=dt) for _ in range(3))
    o = torch.empty_like(q)
    for causal in (False, True):
        flops = 4 * B * H * N * N * d * (0.5 if causal else 1.0)
        ms_t = triton.testing.do_bench(lambda: sdpa(q, k, v, is_causal=causal), warmup=10, rep=50, return_mode="median")
        for cfg in cfgs:
            try:
                ms = triton.testing.do_bench(lambda: A._launch(ctx, q, k, v, o, (B, H, N), d, causal, 0, cfg),
                                             warmup=10, rep=50, return_mode="median")
            except Exception as e:  # out of shared memory and the like
                print(d, causal, cfg, "failed:", str(e)[:80])
                continue
            print(f"{d:>4} {causal!s:>6} {str(cfg):>20} {flops / ms / 1e9:8.0f} {flops / ms_t / 1e9:8.0f} {ms_t / ms:6.2f}")
