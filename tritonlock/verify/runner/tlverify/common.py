# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""What every kernel family shares: the sizes of one mode (Plan) and the per-device context (Ctx) that compares an
output with its reference, times a kernel against torch, injects faults and records the row."""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

import math
import time
from typing import Any, Callable

from .report import Report

# --inject-fault NAME or NAME:wrong|raise|one. A plain NAME makes the kernel's last program skip its stores (the output
# keeps its NaN poison); NAME:wrong makes it compute a finite but wrong answer (a dropped K tile, a wrong scale, ...),
# which only the bound check can catch; NAME:one, the smallest fault, leaves exactly one output wrong: the first check
# of each row has one term of one output's arithmetic missing (its largest: a product of a dot, a key of an attention
# row, an addend, a term of a softmax denominator), which a bound from the arithmetic must still see.
FAULT_TARGETS = ("vector_add", "matmul", "softmax", "attention", "fp8_matmul")
# RAISE: the check raises before its kernel runs; ONE: the kernel runs as it is and one output is changed after it
# (neither is a FAULT code a kernel is compiled with)
FAULT_SKIP, FAULT_WRONG, FAULT_RAISE, FAULT_ONE = 1, 2, 3, 4
FAULT_KINDS = {"wrong": FAULT_WRONG, "raise": FAULT_RAISE, "one": FAULT_ONE}


def parse_fault(value: str | None) -> tuple[str | None, int]:
    """("matmul", FAULT_WRONG) for "matmul:wrong"; (None, 0) for None. Raises ValueError on a bad value."""
    if value is None:
        return None, 0
    name, colon, kind = value.partition(":")
    if name not in (*FAULT_TARGETS, "all") or (colon and kind not in FAULT_KINDS):
        raise ValueError(value)
    return name, FAULT_KINDS.get(kind, FAULT_SKIP)


def row_seed(seed: int, key: str) -> int:
    """The seed of one check's inputs: the run's seed and the check's own name (kernel, dtype, size), so that each
    check draws the same inputs for the same --seed whatever ran before it, on whichever device thread."""
    import zlib

    return (int(seed) * 1_000_003 + zlib.crc32(key.encode())) % (1 << 63)


class Plan:
    """Sizes and timing for one mode (GPU or interpreter, full or --quick)."""

    vadd_timed: int | None
    mm_timed: tuple[int, int, int] | None
    sm_timed: tuple[int, int] | None
    attn_timed: tuple[int, int, int] | None
    fp8_timed: tuple[int, int, int] | None
    batch_ms: float

    def __init__(self, gpu: bool, quick: bool) -> None:
        self.gpu = gpu
        self.quick = quick
        self.timed = gpu and not quick
        if gpu:
            self.vadd_block, self.vadd_warps = 1024, 4
            # a multiple of BLOCK and not a multiple; the timed size is 768 MiB of traffic
            self.vadd_sizes = [1024 * 97, 98_765]
            self.vadd_timed = None if quick else 1 << 26
            # 1008 = 16 * 63: masked edges on every axis (not a multiple of any block) while sharing
            # the compiled binary with the timed 8192 (same divisibility by 16); 1000 adds the
            # unaligned specialisation for one config.
            self.mm_sizes = [(1008, 1008, 1008)] if quick else [(1008, 1008, 1008), (1000, 1000, 1000)]
            self.mm_timed = (8192, 8192, 8192)
            self.sm_sizes = [(1823, 781)]
            self.sm_timed = None if quick else (16384, 4000)
            # (batch, heads, sequence): 333 is no multiple of any block (masked tails); the timed size is
            # 128 heads of 4096 tokens, a few milliseconds of work
            self.attn_sizes = [(1, 2, 333)] if quick else [(1, 2, 333), (2, 3, 256)]
            self.attn_timed = None if quick else (8, 16, 4096)
            self.fp8_sizes = [(1008, 1008, 1008)]
            self.fp8_timed = None if quick else (8192, 8192, 8192)
            # alternating batches of back-to-back calls, each about batch_ms long, timed with CUDA events
            self.batch_ms = 3.0
            self.rounds = 3
        else:
            self.vadd_block, self.vadd_warps = 256, 4
            self.vadd_sizes = [256 * 3, 1031]
            self.vadd_timed = None
            self.mm_sizes = [(67, 45, 99)] if quick else [(64, 64, 64), (67, 45, 99)]
            self.mm_timed = None
            self.sm_sizes = [(9, 100)] if quick else [(9, 100), (4, 256)]
            self.sm_timed = None
            self.attn_sizes = [(1, 1, 37)]
            self.attn_timed = None
            self.fp8_sizes = []
            self.fp8_timed = None
            self.batch_ms = 0.0
            self.rounds = 0


def dtype_name(torch: Any, dt: Any) -> str:
    return {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}.get(dt, str(dt).replace("torch.", ""))


class Ctx:
    """One device: runs kernel families against their references and records the rows."""

    def __init__(self, r: Report, torch: Any, plan: Plan, device: str, index: int, fault: str | None,
                 interpret: bool, step: int = 0, seed: int = 0) -> None:
        self.r, self.torch, self.plan, self.seed = r, torch, plan, seed
        self.device, self.index, self.interpret = device, index, interpret
        self.fault, self.fault_kind = parse_fault(fault)
        self.label = "cpu (interpreter)" if interpret else device
        self.compile_seconds: dict[str, float] = {}  # kernel family -> seconds its compile jobs took
        self.step = step  # row order within this device
        self.current: tuple[str, str] | None = None  # the (kernel, dtype) being checked: a raise is reported as it

    def faulty(self, kernel: str) -> int:
        """0, or the FAULT code the kernel gets: FAULT_SKIP (never writes its last block) or FAULT_WRONG."""
        return self.fault_kind if self.fault in (kernel, "all") and self.fault_kind in (FAULT_SKIP, FAULT_WRONG) \
            else 0

    def one_wrong(self, family: str) -> bool:
        """--inject-fault FAMILY:one: the family's first check of each row gets one wrong output (see `plant`)."""
        return self.fault in (family, "all") and self.fault_kind == FAULT_ONE

    def plant(self, out: Any, index: tuple[int, ...], delta: float) -> None:
        """The one wrong output: out[index] as the kernel would have stored it with one term missing (`delta`, the
        term's effect, computed in float64 by the check), rounded to out's type."""
        torch = self.torch
        cell = out[index]
        out[index] = (cell.to(torch.float64) + delta).to(out.dtype)

    def gen(self, key: str, cpu: bool = False) -> Any:
        """The generator of one check's inputs (row_seed): on the device (fast; the same numbers for the same seed on
        the same kind of GPU and torch), or on the CPU."""
        torch = self.torch
        g = torch.Generator(device="cpu" if cpu or self.interpret else self.device)
        g.manual_seed(row_seed(self.seed, key))
        return g

    def randn(self, shape: Any, key: str, dtype: Any = None) -> Any:
        torch = self.torch
        dev = "cpu" if self.interpret else self.device
        return torch.randn(shape, generator=self.gen(key), device=dev, dtype=dtype or torch.float32)

    def begin(self, kernel: str, dtype: str, family: str | None = None) -> None:
        """A check of this kernel and dtype starts: if it raises, its row keeps this name (not an anonymous error)."""
        self.current = (kernel, dtype)
        if self.fault in (family or kernel, "all") and self.fault_kind == FAULT_RAISE:
            raise RuntimeError(f"fault injected on purpose (--inject-fault {self.fault}:raise)")

    def sync(self) -> None:
        if not self.interpret:
            self.torch.cuda.synchronize()

    def poison(self, shape: Any, dtype: Any) -> Any:
        """An output buffer full of NaN: an element the kernel never writes fails the check."""
        return self.torch.full(shape, float("nan"), device=self.device, dtype=dtype)

    def compare(self, out: Any, ref: Any, bound: Any) -> tuple[bool, float | None, str]:
        """(ok, max abs error, words) for out against a float64 reference: NaN never passes, and every element must
        be within its bound (bounds.py: what the kernel's arithmetic may lose on that output)."""
        return compare(self.torch, out, ref, bound)

    def race(self, fn: Callable[[], Any], torch_fn: Callable[[], Any], long: bool = False) -> tuple[float, float]:
        """Milliseconds per call of fn and of torch's equivalent (each the median over rounds).

        One warm call of each side (first-call costs such as cuBLAS's heuristics or a lazily loaded module stay out),
        timed to size the batches, then rounds of back-to-back batches, ours and torch's alternating: a big
        matmul runs at the power limit and the clocks drift over seconds, which would otherwise favour whichever side
        ran first. CUDA events time each batch on the GPU, with one synchronisation at the end, so the host never
        stalls the queue. No L2 flush between calls: every timed kernel is compute-bound or moves far more bytes than
        the L2 holds. `long`: batches half as long again, for kernels whose ratio is a target (attention)."""
        torch = self.torch
        sides = (fn, torch_fn)
        per_call: list[float] = []
        for f in sides:  # the warm call, timed to size the batches
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            f()
            end.record()
            end.synchronize()
            per_call.append(max(float(start.elapsed_time(end)), 1e-3))
        batch_ms = self.plan.batch_ms * (1.5 if long else 1)
        reps = [max(1, min(500, round(batch_ms / t))) for t in per_call]
        batches: list[tuple[int, Any, Any]] = []
        for _ in range(self.plan.rounds):
            for side, f in enumerate(sides):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(reps[side]):
                    f()
                end.record()
                batches.append((side, start, end))
        torch.cuda.synchronize()
        times: tuple[list[float], list[float]] = ([], [])
        for side, start, end in batches:
            times[side].append(float(start.elapsed_time(end)) / reps[side])
        return sorted(times[0])[len(times[0]) // 2], sorted(times[1])[len(times[1]) // 2]

    def record(self, kernel: str, dtype: str, ok: bool, worst: float | None, words: list[str],
               timing: tuple[str, float, float | None] | None, *, family: str | None = None,
               mode: str | None = None) -> None:
        if not ok and (self.faulty(family or kernel) or self.one_wrong(family or kernel)):
            kind = {FAULT_WRONG: ":wrong", FAULT_ONE: ":one"}.get(self.fault_kind, "")
            words.insert(0, f"fault injected on purpose (--inject-fault {self.fault}{kind})")
        if self.interpret:
            words.append("interpreter: no timing (not meaningful on the CPU)")
        elif not self.plan.timed:
            words.append("quick: no timing")
        elif not ok:
            words.append("not timed because the results are wrong")
        head = "" if ok else "WRONG RESULTS: "
        self.current = None
        self.step += 1
        self.r.kernel(kernel, self.label, dtype, ok, worst, head + "; ".join(words), timing,
                      mode=mode or ("interpreter" if self.interpret else "gpu"),
                      compile_seconds=self._compile_seconds(kernel, dtype, family),
                      order=(self.index, self.step))

    def _compile_seconds(self, kernel: str, dtype: str, family: str | None) -> float | None:
        for key in (f"{kernel} {dtype}", f"{kernel} {dtype.split()[0]}", family or kernel):
            if key in self.compile_seconds:
                return self.compile_seconds[key]
        return None

    def skip(self, kernel: str, dtype: str, why: str) -> None:
        """A row for a check this device cannot run: ok (nothing is wrong), mode "skipped", and why."""
        self.step += 1
        self.r.kernel(kernel, self.label, dtype, True, None, f"skipped: {why}", mode="skipped",
                      order=(self.index, self.step))


def compare(torch: Any, out: Any, ref: Any, bound: Any) -> tuple[bool, float | None, str]:
    out64 = out.to(torch.float64)
    unwritten = torch.isnan(out64)
    n_bad = int(unwritten.sum())
    if n_bad:
        first = int(unwritten.flatten().nonzero()[0])
        return False, None, (f"{n_bad} of {out.numel()} outputs are still NaN (the poison written "
                             f"before the run), first at flat index {first}: never written or "
                             "computed as NaN")
    err = (out64 - ref).abs()
    share = err / bound
    worst = float(share.max())
    max_err = float(err.max())
    if not math.isfinite(max_err) or not worst <= 1.0:
        n_out = int((~(err <= bound)).sum())
        at = int(share.flatten().nan_to_num(math.inf).argmax())
        return False, max_err if math.isfinite(max_err) else None, (
            f"{n_out} of {out.numel()} outputs outside the bound from the arithmetic; max |error| {max_err:.3g}; "
            f"the worst at flat index {at}: |error| {float(err.flatten()[at]):.3g} against a bound of "
            f"{float(bound.flatten()[at]):.3g}")
    return True, max_err, f"max |error| {max_err:.3g} ({worst:.0%} of its bound)"


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
