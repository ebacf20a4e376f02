"""Keep a GPU busy on purpose (bf16 matmuls back to back) until killed: the "another process on the GPU" case of
verify's speed verdicts. Writes MARKER once its first products have run, so a bench waits for that, not for a time.

    python3 bench/gpu_busy.py MARKER [DEVICE]
"""

import sys

import torch

marker = sys.argv[1]
dev = f"cuda:{sys.argv[2] if len(sys.argv) > 2 else 0}"
a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
for _ in range(20):
    a @ b
torch.cuda.synchronize()
open(marker, "w").write("busy\n")
while True:
    for _ in range(50):
        a @ b
    torch.cuda.synchronize()
