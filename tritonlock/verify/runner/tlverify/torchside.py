# tritonlock verify runner: runs in the target venv without tritonlock (stdlib and torch only: no triton here).
"""torch's side of the checks, which needs no Triton: which attention variants are checked and which timed, attention
in float64, and torch's first calls (FirstCalls). A first call of a torch kernel loads it, picks its cuBLAS algorithm or
builds its cuDNN plan — about 0.7 s on an H200, paid once a process. They start as soon as CUDA is up, so they run
beside Triton's import, the ptxas check and the loading of the kernel binaries, not after them (Triton is not imported
yet when they start: nothing here may import it)."""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

import contextlib
import functools
import math
import threading
import traceback
from typing import Any, Callable

from .common import Ctx

HEAD_DIMS = (64, 128)

# A full run times the head-dim-128 variants (both dtypes, causal and not: the head dim of most models, and the hardest
# to be fast at) and checks head dim 64 without timing it: each timed variant costs torch a cuDNN plan of its own,
# about 0.1 s of CPU, which was most of a warm verify's time beyond `import torch` (bench/RESULTS.md, issue 26).
TIMED_HEAD_DIMS = (128,)


def variants(torch: Any, quick: bool = False) -> list[tuple[Any, int, bool]]:
    """(dtype, head dim, causal) in report order. --quick takes two that cover both of each: the interpreter runs a
    block a second, not a microsecond, and on a GPU each variant is two binaries to compile or load (pointer tiles
    and, from Hopper, TMA descriptors) — --quick is the proof, the full run the measurement."""
    if quick:
        return [(torch.float16, 64, True), (torch.bfloat16, 128, False)]
    return [(dt, d, causal) for dt in (torch.float16, torch.bfloat16) for d in HEAD_DIMS for causal in (False, True)]


def timed(ctx: Ctx, d: int) -> bool:
    return bool(ctx.plan.timed and ctx.plan.attn_timed is not None and d in TIMED_HEAD_DIMS)


def grouped(ctx: Ctx) -> bool:
    """Whether the attention variants run in threads of their own (Variants): a timed run of more than one."""
    return bool(ctx.plan.timed and ctx.plan.attn_timed is not None and len(variants(ctx.torch, ctx.plan.quick)) > 1)


def matmul_dtypes(torch: Any) -> list[Any]:
    return [torch.float16, torch.bfloat16, torch.float32]


def attention64(torch: Any, q: Any, k: Any, v: Any, causal: bool, first: int = 0) -> tuple[Any, ...]:
    """Attention in float64, on the device: softmax(q k^T / sqrt(d), masked) v. `first`: the position of q's first
    row among the keys (q may be the last rows of a longer sequence: causal row i sees keys up to first + i).
    (q64, k64, v64, the scaled scores, the weights, the output, the mask or None)."""
    q64, k64, v64 = q.double(), k.double(), v.double()
    d = q.shape[-1]
    s = (q64 @ k64.transpose(-1, -2)) / math.sqrt(d)
    hidden = None
    if causal:
        rows = torch.arange(q.shape[-2], device=q.device)[:, None] + first
        hidden = torch.arange(k.shape[-2], device=q.device)[None, :] > rows
        s = s.masked_fill(hidden, float("-inf"))
    w = torch.softmax(s, dim=-1)
    return q64, k64, v64, s, w, w @ v64, hidden


# Timed runs on each device: the attention variants' threads (Variants), started with torch's first calls, each
# building its scaled_dot_product_attention plan (cuDNN's, on Hopper: about 0.1 s of CPU, kept per thread) then
# waiting for run(). By device index; taken by the attention family's run.
VARIANTS: dict[int, Any] = {}


class Variants:
    """One thread per attention variant, for a timed run: each builds torch's SDPA plan for its shape at once (all in
    parallel, beside the compile step), then, once run(check) says go, checks and times its variant in report order,
    one at a time, so that no GPU work overlaps another variant's timing."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.vs = variants(ctx.torch, ctx.plan.quick)
        self.check: Callable[[Ctx, Any, int, bool], None] | None = None
        self.built = threading.Barrier(len(self.vs) + 1, timeout=300)
        self.go = threading.Event()
        self.turns = [threading.Event() for _ in self.vs]
        self.errors: list[BaseException | None] = [None] * len(self.vs)
        self.threads = [threading.Thread(target=self.one, args=(i,), name=f"attention-{i}", daemon=True)
                        for i in range(len(self.vs))]
        for t in self.threads:
            t.start()
        with contextlib.suppress(threading.BrokenBarrierError):
            self.built.wait()  # every plan built (no GPU work of theirs can overlap a timing)

    def one(self, i: int) -> None:
        ctx, torch = self.ctx, self.ctx.torch
        dt, d, causal = self.vs[i]
        try:
            with torch.cuda.device(ctx.index):
                try:
                    if timed(ctx, d):  # the variants checked but not timed need no plan at the timed size
                        assert ctx.plan.attn_timed is not None
                        b, h, n = ctx.plan.attn_timed
                        q = torch.zeros(b, h, n, d, device=ctx.device, dtype=dt)
                        torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=causal)
                        if q.is_cuda:
                            torch.cuda.current_stream().synchronize()
                        del q
                finally:
                    with contextlib.suppress(threading.BrokenBarrierError):  # a thread that never got here
                        self.built.wait()
                self.go.wait(timeout=900)
                if i:
                    self.turns[i - 1].wait(timeout=600)
                assert self.check is not None, "Variants.run(check) sets the check before it says go"
                self.check(ctx, dt, d, causal)
        except BaseException as e:  # noqa: BLE001 - raised by run(), after every thread is done
            self.errors[i] = e
        finally:
            self.turns[i].set()

    def run(self, check: Callable[[Ctx, Any, int, bool], None]) -> None:
        self.check = check
        self.go.set()
        for t in self.threads:
            t.join()
        for e in self.errors:
            if e is not None:
                raise e


def first_calls(ctx: Ctx) -> None:
    """torch's side once on this device, each part in a thread of its own: torch.matmul's float64 reference at a check
    size and, when timed, per dtype at the timed size (a first call picks and loads its cuBLAS kernel; the loaded
    kernels serve every thread); the float64 attention (causal and not) at a check size; in a timed run, beside it,
    the attention variants' threads with their SDPA plans (VARIANTS). Failures are left for the checks (their
    tracebacks go to stderr)."""
    torch = ctx.torch

    def matmul(dt: Any) -> None:
        dims = ctx.plan.mm_sizes[0] if dt == torch.float64 else ctx.plan.mm_timed
        assert dims is not None
        m, n, kk = dims
        a = torch.empty(m, kk, device=ctx.device, dtype=dt)
        b = torch.empty(n, kk, device=ctx.device, dtype=dt).t() if dt == torch.float32 else \
            torch.empty(kk, n, device=ctx.device, dtype=dt)
        torch.matmul(a, b)

    def attention() -> None:
        b, h, n = ctx.plan.attn_sizes[0]
        q = torch.zeros(b, h, n, 64, device=ctx.device, dtype=torch.float16)
        for causal in (False, True):
            attention64(torch, q, q, q, causal)

    def plans() -> None:  # (beside the float64 reference, not after it: each is 0.3 s on an H100, mostly loading)
        VARIANTS[ctx.index] = Variants(ctx)

    def one(job: Callable[[], None]) -> None:
        try:
            with torch.cuda.device(ctx.index):
                job()
        except Exception:  # noqa: BLE001 - the check that makes the same call says what failed
            traceback.print_exc()

    timed_mm = ctx.plan.timed and ctx.plan.mm_timed is not None
    jobs: list[Callable[[], None]] = [attention, *([plans] if grouped(ctx) else [])] + [
        functools.partial(matmul, dt) for dt in [torch.float64] + (matmul_dtypes(torch) if timed_mm else [])]
    threads = [threading.Thread(target=one, args=(job,), name=f"first-call-{i}", daemon=True)
               for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class FirstCalls:
    """first_calls on every device at once, one thread each, started at construction (right after CUDA's start);
    wait(ctx) until that device's are done."""

    def __init__(self, ctxs: list[Ctx]) -> None:
        self.threads = {ctx.index: threading.Thread(target=first_calls, args=(ctx,), name=f"first-calls-{ctx.index}",
                                                    daemon=True) for ctx in ctxs}
        for t in self.threads.values():
            t.start()

    def wait(self, ctx: Ctx) -> None:
        t = self.threads.get(ctx.index)
        if t is not None:
            t.join()
        else:
            first_calls(ctx)

    def join(self) -> None:
        for t in self.threads.values():
            t.join()
