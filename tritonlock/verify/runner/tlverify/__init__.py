# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""The verify runner's modules: the harness and one module per kernel family, each with its reference and tolerance.

harness      caches, the order of the steps, parallel compiles, every GPU at once, the JSON report
options      the command line, and what the lock expects (read on stdin while torch imports)
report       the report (one JSON document) and its rows
envchecks    torch / CUDA / arch / triton / ptxas checks, before any kernel runs
common       sizes (Plan), the per-device context (compare against a reference, timing, fault injection)
k_vector_add, k_softmax, k_matmul, k_attention, k_fp8   the Triton kernel families
torchside    torch's side that needs no Triton: the attention variants, float64 attention, torch's first calls
inductor     torch.compile: Inductor writes and compiles its own kernels (run in its own process)
allreduce    NCCL all-reduce across GPUs (gloo on the CPU as a test hook)

Kernel modules import triton at their top, so the harness imports them only after TRITON_INTERPRET is decided;
torchside never imports it (its first calls start before Triton's import).
"""
