# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""What a correct kernel may be off by, per output: bounds derived from the arithmetic, never a constant that random
inputs sometimes cross.

Every check compares a kernel's output with a float64 reference of the same inputs (the inputs as the kernel reads
them: fp16, bf16, fp32 or the e4m3 values). The bound on each output is the sum of what each step of the kernel's
arithmetic may lose, written beside the kernel that does it (k_*.py) from the facts here:

* rounding to nearest of a result in a format with p bits of precision loses at most u = 2^-p of it (the unit
  roundoff): fp32 2^-24, fp16 2^-11, bf16 2^-8 (IEEE 754-2019 §4.3; bf16 and fp16 as stored by `.to()` and by
  Triton's stores, which round to nearest);
* a dot product of K exact products summed in fp32 — by the CPU in any order (Triton's interpreter: numpy), or by a
  tensor core in blocks of f <= 32 products that are aligned to the block's largest exponent with at least 23
  fraction bits and truncated (V100 to B200: Khattak & Mikaitis, "Accurate Models of NVIDIA Tensor Cores",
  arXiv:2512.07004, and their models github.com/north-numerical-computing/MATLAB-tensor-core) — loses at most
  ``dot_fp32(K, P)`` with P = sum |a_k b_k| (derivation at `dot_fp32`);
* FP8 tensor cores on Hopper (and Ada) keep fewer bits: the products of a block of 32 and the accumulator are aligned
  to the largest exponent among them and truncated to 13 fraction bits (the same paper's H100 model: fma = 32,
  neab = -10; "the accumulation precision of FP8 GEMM on NVIDIA H800 GPUs is limited to retaining around 14 bits",
  DeepSeek-V3 Technical Report, arXiv:2412.19437 §3.3.2), and Triton accumulates the whole K there without promoting
  to fp32 (triton/backends/nvidia/compiler.py: max_num_imprecise_acc_default = 2**30 on capability 9.0;
  triton-lang/triton#2300). That bound needs each output's partial sums: `fp8_accumulation`, one bit below the
  measured 13 (a margin for the model);
* exp2 on the GPU is PTX's ex2.approx.f32 (Triton lowers tl.exp and tl.math.exp2 to it), at most 2 ulp off (2^-22
  relative, PTX ISA "ex2"); taken as 2^-21 here, which also covers libdevice's expf and numpy's exp.

Each bound is a worst case: every rounding at its limit, in the same direction. bench/verify_tolerance_sweep.py
emulates each kernel's arithmetic (quantisation, block accumulation with the reduced precision, output rounding) in
float64 on the CPU for >= 10,000 random problems per row and size and checks that no error exceeds its bound, and
that one dropped term (the fault switch's `:one`) always does.
"""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

from typing import Any

U32 = 2.0 ** -24
UNIT = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8, "fp32": 2.0 ** -24}  # unit roundoff of each stored type
EXP2 = 2.0 ** -21  # relative error allowed to exp2 (ex2.approx.f32: 2 ulp, 2^-22; doubled)
FP8_BITS = 12  # fraction bits the FP8 accumulation keeps: 13 measured (H100 model, DeepSeek-V3), one bit of margin
FP8_BLOCK = 32  # products per FP8 tensor core block (wgmma / mma k = 32 for e4m3)
TINY = 2.0 ** -126  # a flushed subnormal (the GPU's FTZ): the least absolute error any fp32 result may carry


def dot_fp32(k: int, abs_sum: Any) -> Any:
    """What a dot product of k exact products, summed in fp32, may be off by: 2^-23 (3k + 34) P, P = sum |a_k b_k|.

    Derivation: the sum runs in n = ceil(k / f) steps of f products each (f = 1 for a scalar loop, up to 32 for a tensor
    core block). One step aligns its f products and the running sum S to their largest exponent e (2^e <= max of
    their magnitudes <= |S| + Q, Q the block's sum of |products|), cuts each to 2^(e - 23) (at least 23 fraction bits:
    each term loses < 2^(e-23)) and rounds the total to fp32 (< 2^-23 of it): at most (f + 2) 2^-23 (|S| + Q) per
    step. With |S| <= P at every step, the n steps lose at most (f + 2) 2^-23 n P <= 2^-23 (k + 2k/f + f + 2) P, which
    is at most 2^-23 (3k + 34) P for any f from 1 to 32 (and covers recursive or pairwise fp32 summation: k u P)."""
    return 2.0 ** -23 * (3 * k + 34) * abs_sum


def unit(dtype: str, interpret: bool = False) -> float:
    """What storing a value as `dtype` may lose of it, relatively. Triton's interpreter casts fp32 to bf16 by cutting
    the low 16 bits (triton/runtime/interpreter.py: cast_impl calls _convert_float with no rounding mode): 2^-7."""
    return 2.0 ** -7 if interpret and dtype == "bf16" else UNIT[dtype]


def stored(exact_bound: Any, ref_abs: Any, dtype: str, interpret: bool = False) -> Any:
    """The bound once the result is rounded to its stored type: the error before, plus u of the (perturbed) value,
    plus a flushed subnormal."""
    u = unit(dtype, interpret)
    return exact_bound * (1 + u) + u * ref_abs + TINY


def fp8_accumulation(torch: Any, aq: Any, bq: Any, bits: int = FP8_BITS, block: int = FP8_BLOCK,
                     pairs: bool = False) -> Any:
    """What an FP8 tensor core accumulation of aq @ bq may be off by, per output, in the operands' own units (aq: M x K
    and bq: K x N, the e4m3 values as float64; multiply by the scales). `pairs`: aq's row i with bq's column i only
    (M = N; one bound per pair: what bench/verify_tolerance_sweep.py checks).

    Derivation (the H100 model above): the K products go in blocks of 32, in order; a block's products and the
    running sum S are aligned to the exponent e of the largest of them and each is truncated toward zero to
    2^(e - bits): each loses less than 2^(e - bits), toward zero, so the block loses less than
    max(n+, n-) 2^(e - bits), n+ and n- the terms of each sign (truncation moves every positive term down and every
    negative one up, so only terms of one sign add up; S is counted on both sides while its sign is uncertain);
    the aligned sum is then exact in fp32 (bits + 7 < 24 bits), and a fp32 rounding of it is allowed too (2^-23 of
    it). 2^e is at most the largest of |S| + E (the exact partial sum plus the error so far) and max|a| max|b| over
    the block. Each step's terms are computed here exactly (float64 partial sums, sign counts by matmuls of 0/1
    matrices), step by step: E never falls below what the model can lose."""
    f64 = torch.float64
    k = aq.shape[1]
    if pairs:
        def dot(x: Any, y: Any) -> Any:
            return (x * y.t()).sum(1)

        def outer(x: Any, y: Any) -> Any:
            return x.reshape(-1) * y.reshape(-1)
        shape: tuple[int, ...] = (aq.shape[0],)
    else:
        def dot(x: Any, y: Any) -> Any:
            return x @ y

        def outer(x: Any, y: Any) -> Any:
            return x * y
        shape = (aq.shape[0], bq.shape[1])
    s = torch.zeros(shape, dtype=f64, device=aq.device)
    e = torch.zeros_like(s)
    for lo in range(0, k, block):
        a, b = aq[:, lo:lo + block], bq[lo:lo + block, :]
        pmax = outer(a.abs().amax(1, keepdim=True), b.abs().amax(0, keepdim=True))
        ap, an = (a > 0).to(f64), (a < 0).to(f64)
        bp, bn = (b > 0).to(f64), (b < 0).to(f64)
        unsure = (s.abs() <= e) & (e > 0)  # the computed sum's sign is not known: count it on both sides
        pos = dot(ap, bp) + dot(an, bn) + ((s > 0) | unsure).to(f64)
        neg = dot(ap, bn) + dot(an, bp) + ((s < 0) | unsure).to(f64)
        big = torch.maximum(s.abs() + e, pmax)
        _, ex = torch.frexp(big)  # big = f 2^ex, f in [0.5, 1): the largest exponent is ex - 1
        ulp = torch.ldexp(torch.ones_like(big), ex - 1 - bits)
        s = s + dot(a, b)
        e = e + torch.maximum(pos, neg) * ulp
        e = e + 2.0 ** -23 * (s.abs() + e)
    return e


def ref_error(k: int, abs_sum: Any) -> Any:
    """What the float64 reference itself may be off by (its own dot products): negligible, but counted."""
    return 2.0 ** -52 * (3 * k + 34) * abs_sum

