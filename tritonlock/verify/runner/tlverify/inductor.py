# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""torch.compile: Inductor compiles a small model-like function (matmul + bias + GELU + row sum), which runs and is
compared with eager torch and a float64 reference; the row names the kernels Inductor generated and compiled.

On a GPU Inductor writes Triton kernels and Triton compiles them. On the CPU Inductor's CPU backend writes C++ and a
C++ compiler builds it: Triton, and Triton's interpreter, take no part, and the row says so. The harness runs this
in a process of its own, started first, so Inductor's imports and compiles overlap the Triton kernels' checks."""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

import importlib
import math
import re
import time
from typing import Any, Callable

from .report import Report, tail

KERNEL = "torch_compile"
SHAPE = (256, 512, 384)  # x is M x K, w is K x N: one cuBLAS/extern matmul, one fused bias+GELU+sum kernel
GELU_SLOPE = 1.13  # the largest |GELU'(z)| = Phi(z) + z phi(z), at z ~ 2.4 (1.1289)


def bound(torch: Any, x: Any, w: Any, b: Any, ref: Any) -> Any:
    """gelu(x @ w + b).sum(-1) in fp32, per output row, from the float64 inputs' magnitudes: h = x @ w + b is an fp32
    dot of K + 1 terms (bounds.dot_fp32, any order or blocking: cuBLAS, MKL, Inductor's own); GELU moves an error by
    at most GELU_SLOPE and its evaluation (erf in libdevice, Sleef or libm) adds 2^-20 of its value and 2^-24 of its
    argument; the row sum of N values adds bounds.dot_fp32 over sum |gelu(h)|."""
    from . import bounds

    x64, w64, b64 = x.double(), w.double(), b.double()
    h = x64 @ w64 + b64
    e_h = bounds.dot_fp32(x.shape[1] + 1, x64.abs() @ w64.abs() + b64.abs()) + bounds.U32 * h.abs()
    g = torch.nn.functional.gelu(h)
    e_g = GELU_SLOPE * e_h + 2.0 ** -20 * g.abs() + bounds.U32 * h.abs() + bounds.TINY
    n = w.shape[1]
    return e_g.sum(-1) + bounds.dot_fp32(n, g.abs().sum(-1)) + bounds.ref_error(n, g.abs().sum(-1))

_DEF = re.compile(r"^(\w+) = async_compile\.(triton|cpp_pybinding|cpp|cuda|halide|mps)\(", re.M)
_EXTERN = re.compile(r"extern_kernels\.(\w+)\(")


NO_COMPILER = ("no C++ compiler found ({error}): Inductor's CPU backend writes C++ and builds it with one, so torch.compile "
               "could not be checked here — install one (Debian/Ubuntu: `apt-get install g++`; Fedora/RHEL: `dnf "
               "install gcc-c++`; Alpine: `apk add g++`; macOS: `xcode-select --install`) or point CXX at one, then "
               "run `tritonlock verify` again; the Triton kernels ran without it (Triton's interpreter)")
# On a GPU the same missing tool is a failure: Inductor's GPU code and Triton's own launcher are built with the
# machine's compiler, so without one a model's first torch.compile fails there too
NO_COMPILER_GPU = ("torch.compile (Inductor) failed: no C++ compiler found ({error}): on a GPU, Inductor and Triton "
                   "build part of what they run with the machine's C/C++ compiler — install one (Debian/Ubuntu: "
                   "`apt-get install g++`; Fedora/RHEL: `dnf install gcc-c++`; Alpine: `apk add g++`) or point CXX "
                   "and CC at one, then run `tritonlock verify` again")


def missing_compiler(e: BaseException) -> str | None:
    """torch's own words when torch.compile failed because Inductor found no working C++ compiler (its
    InvalidCxxCompiler, maybe wrapped by dynamo), else None."""
    seen: set[int] = set()
    chain: list[BaseException] = []
    err: BaseException | None = e
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        chain.append(err)
        err = err.__cause__ or err.__context__
    own = [x for x in chain if type(x).__name__ == "InvalidCxxCompiler"]
    if own:
        return tail(str(own[-1]).strip() or "InvalidCxxCompiler")
    for x in chain:  # wrapped so that only its words are left: the line that says it
        line = next((ln for ln in str(x).splitlines() if "No working C++ compiler found" in ln), None)
        if line is not None:
            return tail(line.strip())
    return None


def model(torch: Any, x: Any, w: Any, b: Any) -> Any:
    return torch.nn.functional.gelu(x @ w + b).sum(dim=-1)


def generated_kernels(modules: list[Any]) -> tuple[list[str], list[str]]:
    """(kernels, extern calls) in Inductor's output code modules: 'name (triton, compiled)' / 'name (cpp)'."""
    found: list[str] = []
    extern: list[str] = []
    for mod in modules:
        path = getattr(mod, "__file__", None)
        if not path:
            continue
        try:
            with open(path, encoding="utf-8") as f:
                src = f.read()
        except OSError:
            continue
        for name, kind in _DEF.findall(src):
            kind = "cpp" if kind.startswith("cpp") else kind
            obj = getattr(mod, name, None)
            compiled = bool(getattr(obj, "launchers", None) or getattr(obj, "compile_results", None))
            found.append(f"{name} ({kind}{', compiled' if kind == 'triton' and compiled else ''})")
        extern += [e for e in _EXTERN.findall(src) if e not in extern]
    return found, extern


def run(r: Report, torch: Any, device: str, label: str, gate: Callable[[], None] | None = None) -> None:
    """`gate`: called after the imports, before the first GPU work (the harness holds it until its timings are
    done)."""
    gpu = device != "cpu"
    t0 = time.perf_counter()
    try:
        importlib.import_module("torch._dynamo")  # the import alone is a large part of a first torch.compile
        from torch._inductor.codecache import PyCodeCache

        if gate is not None:
            gate()

        mods = PyCodeCache.modules
        before = list(mods.values() if isinstance(mods, dict) else mods)
        m, kk, n = SHAPE
        x = torch.randn(m, kk, device=device)
        w = torch.randn(kk, n, device=device) / math.sqrt(kk)
        b = torch.randn(n, device=device)
        compiled = torch.compile(lambda x, w, b: model(torch, x, w, b), backend="inductor", fullgraph=True,
                                 dynamic=False)
        t1 = time.perf_counter()
        out = compiled(x, w, b)
        if gpu:
            torch.cuda.synchronize()
        compile_s = time.perf_counter() - t1
        eager = model(torch, x, w, b)
        ref = model(torch, x.double(), w.double(), b.double())
        mods = PyCodeCache.modules
        after = [mod for mod in (mods.values() if isinstance(mods, dict) else mods) if mod not in before]
    except Exception as e:  # a torch.compile failure is the finding: say it, with the error
        missing = missing_compiler(e)
        if missing is not None and gpu:  # the machine lacks a tool its GPU code needs: failed, with the fix
            r.kernel(KERNEL, label, "fp32", False, None, NO_COMPILER_GPU.format(error=missing),
                     mode="inductor-triton", compile_seconds=time.perf_counter() - t0)
            return
        if missing is not None:  # on the CPU: nothing is wrong with the environment, the machine lacks a tool
            r.kernel(KERNEL, label, "fp32", True, None, f"skipped: {NO_COMPILER.format(error=missing)}",
                     mode="skipped")
            r.notes.append("torch.compile was not checked: no C++ compiler on this machine (its row says how to get "
                           "one)")
            return
        r.kernel(KERNEL, label, "fp32", False, None,
                 f"torch.compile (Inductor) failed: {type(e).__name__}: {tail(str(e))}",
                 mode="inductor-triton" if gpu else "inductor-cpp", compile_seconds=time.perf_counter() - t0)
        return
    err = (out.double() - ref).abs()
    limit = bound(torch, x, w, b, ref)
    ok = bool(torch.isfinite(out).all()) and bool((err <= limit).all())
    max_err = float(err.max()) if bool(torch.isfinite(err).all()) else None
    vs_eager = float((out - eager).abs().max())
    kernels, extern = generated_kernels(after)
    triton_kernels = [k for k in kernels if "(triton" in k]
    if gpu:
        mode = "inductor-triton"
        what = (f"Inductor generated {len(kernels)} kernel(s): {', '.join(kernels) or 'none'}"
                + (f"; extern calls: {', '.join(extern)}" if extern else ""))
        if not triton_kernels and ok:
            ok = False
            what += "; no Triton kernel was generated, so Triton was not exercised"
    else:
        mode = "inductor-cpp"
        what = (f"Inductor's CPU backend generated {len(kernels)} kernel(s): {', '.join(kernels) or 'none'}"
                + (f"; extern calls: {', '.join(extern)}" if extern else "")
                + "; on the CPU Inductor writes C++, not Triton, so Triton's interpreter was not used")
    words = [f"{m}x{kk} @ {kk}x{n} + bias, GELU, row sum", what,
             f"compiled and ran in {compile_s:.2f} s (Inductor's and Triton's caches are kept between runs)",
             f"max |compiled - eager| {vs_eager:.3g}",
             f"vs float64: max |error| {max_err if max_err is None else f'{max_err:.3g}'}"
             + (f" ({float((err / limit).max()):.0%} of its bound from the arithmetic)" if max_err is not None else "")]
    r.kernel(KERNEL, label, "fp32", ok, max_err, ("" if ok else "WRONG RESULTS: ") + "; ".join(words),
             mode=mode, compile_seconds=time.perf_counter() - t0, generated=kernels)
