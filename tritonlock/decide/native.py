"""The native-code rule on a target's closure: every locked extension module finds what it needs — the CUDA
libraries its ELF names (brought by the locked torch build, a locked nvidia-* wheel or its own wheel), the driver
they need, the torch build and release it links, and code or PTX for the target's GPUs. Small predicates over the
binary facts the lock stage read (tritonlock.lock.native), like the host rules; each problem names the package,
the library or arch, and what would fix it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name

from tritonlock.models import LockedPackage, Selection, TargetSpec

if TYPE_CHECKING:
    from tritonlock.decide.matrix import Matrix
    from tritonlock.lock.native import Member, NativeFacts

# Packages whose native code is the provider, not a consumer: torch's own builds (their facts are the matrix's:
# backend, archs), Triton (it compiles at run time) and NVIDIA's CUDA libraries (compat/cudalibs.toml).
_PROVIDERS = {"torch", "triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu", "triton-windows",
              "triton-xpu", "triton-rocm"}
# sonames whose number is the CUDA major (cuFFT, cuSOLVER, cuRAND, cuSPARSE, cuDNN and NCCL number their own)
_CUDA_MAJOR_LIB = re.compile(r"^lib(cudart|cublas|cublasLt|nvrtc|nvJitLink)\.so\.([0-9]+)\Z")
# CUDA user libraries: a lock must bring each one a locked extension names (a machine's own toolkit is no lock)
_CUDA_LIB = re.compile(r"^lib(cudart|cublas|cublasLt|cufft|curand|cusolver|cusparse|nvrtc|nvJitLink|cudnn[A-Za-z_]*|"
                       r"nccl|nvshmem[A-Za-z_]*|cupti|nvToolsExt|cufile)\.so(\.[0-9]+)*\Z")
# which NVIDIA wheel brings a CUDA library, by CUDA major (CUDA 13's dropped the -cuNN suffix: compat/cudalibs.toml)
_WHEEL_OF = {"cudart": "nvidia-cuda-runtime", "cublas": "nvidia-cublas", "cublasLt": "nvidia-cublas",
             "nvrtc": "nvidia-cuda-nvrtc", "nvJitLink": "nvidia-nvjitlink", "cufft": "nvidia-cufft",
             "curand": "nvidia-curand", "cusolver": "nvidia-cusolver", "cusparse": "nvidia-cusparse",
             "cudnn": "nvidia-cudnn", "nccl": "nvidia-nccl", "cupti": "nvidia-cuda-cupti"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Problem:
    """One package's native code that cannot load (or run) on the target: what, and what would change it."""

    package: str
    version: str
    kind: str  # "driver", "torch-build", "cuda-library", "cuda-driver", "torch-release", "gpu-code"
    needs: str  # "libcudart.so.13", "torch's CUDA build", "torch 2.9", "sm_70"
    text: str  # in words, naming the package, its file and what it needs
    structural: bool = False  # no other release of the package can change it (a CPU target and CUDA code)

    @property
    def line(self) -> str:
        return f"{self.package} {self.version}: {self.text}"


def is_provider(name: str) -> bool:
    from tritonlock.decide.cudalibs import cuda_major

    n = canonicalize_name(name)
    return n in _PROVIDERS or n.startswith(("nvidia-", "cuda-")) or cuda_major(n, "13.0") is not None


def target_wheel(p: LockedPackage, target: TargetSpec, python: str) -> list[str]:
    """The sha256s of the package's wheels that install on the target (a lock may list several platforms')."""
    from tritonlock.decide._pkgfacts import file_fits

    return [w.sha256 for w in p.wheels if file_fits(w.name, target, python)] or [w.sha256 for w in p.wheels]


def _public_minor(version: str | None) -> str | None:
    m = re.match(r"([0-9]+)\.([0-9]+)", version or "")
    return f"{m[1]}.{m[2]}" if m else None


def _nvidia_ccs(target: TargetSpec) -> list[str]:
    return [g for g in target.gpus if re.fullmatch(r"[0-9]+\.[0-9]+", g)]


def problems(sel: Selection, packages: tuple[LockedPackage, ...], facts: dict[str, NativeFacts], matrix: Matrix,
             *, policy: str = "compatible") -> list[Problem]:
    """What in the closure's native code cannot load or run on `sel`'s target (empty: the closure is a lock)."""
    from tritonlock.decide.matrix import gpu_runs

    target = sel.target
    python = sel.python or "3.12"
    backend = sel.backend or ""
    provided: set[str] = set()
    for p in packages:
        for sha in target_wheel(p, target, python):
            if sha in facts:
                provided.update(facts[sha].provides)
    ccs = _nvidia_ccs(target)
    out: list[Problem] = []
    for p in packages:
        if is_provider(p.name):
            continue
        shas = [s for s in target_wheel(p, target, python) if s in facts and facts[s].native]
        if not shas:
            continue
        f = facts[shas[0]]
        members = f.members
        found: dict[str, Problem] = {}
        for m in members:
            for prob in _member_problems(p, f, m, sel, provided, matrix, policy):
                found.setdefault(prob.kind + prob.needs, prob)
        # GPU code: the package as a whole must carry code (or PTX) for each GPU: its extension modules divide the
        # kernels among them by architecture, and one that lacks an arch is no failure while another has it
        with_code = [m for m in members if m.gpu.startswith("read") and (m.sm or m.ptx)]
        if with_code and ccs and backend.startswith("cu"):
            sm = tuple(sorted({a for m in with_code for a in m.sm}))
            ptx = tuple(sorted({a for m in with_code for a in m.ptx}))
            for cc in dict.fromkeys(ccs):
                if gpu_runs(cc, sm, ptx) is None:
                    found.setdefault(f"gpu-code{cc}", Problem(
                        package=p.name, version=p.version, kind="gpu-code", needs=f"sm_{cc.replace('.', '')}",
                        text=(f"its GPU code is built for {_archs(sm, ptx)}, which has no code for this target's "
                              f"GPU (compute capability {cc}): its first kernel launch would fail ('no kernel image "
                              f"is available'; read from {f.filename})")))
        out += found.values()
    return out


def _archs(sm: tuple[str, ...], ptx: tuple[str, ...]) -> str:
    return ", ".join(sm) + (f" and PTX {', '.join(ptx)}" if ptx else " (no PTX)")


def _member_problems(p: LockedPackage, f: NativeFacts, m: Member, sel: Selection, provided: set[str],
                     matrix: Matrix, policy: str) -> list[Problem]:
    target, backend = sel.target, sel.backend or ""
    where = f"{m.path} in {f.filename}"
    out: list[Problem] = []

    def add(kind: str, needs: str, text: str, structural: bool = False) -> None:
        out.append(Problem(package=p.name, version=p.version, kind=kind, needs=needs, text=text,
                           structural=structural))

    for lib in m.needed:
        if lib == "libcuda.so.1":
            if target.driver is None:
                add("driver", lib, f"{where} needs libcuda.so.1, the NVIDIA driver's library, and this target has no "
                                   "NVIDIA driver: the import fails ('libcuda.so.1: cannot open shared object file')",
                    structural=True)
            continue
        if lib in ("libtorch_cuda.so", "libc10_cuda.so") and not backend.startswith("cu"):
            add("torch-build", "torch's CUDA build",
                f"{where} needs {lib}, which only torch's CUDA builds have; this lock's torch {sel.torch} is the "
                f"{backend or 'unknown'} build", structural=not target.driver)
            continue
        if lib in ("libtorch_hip.so", "libc10_hip.so") and not backend.startswith("rocm"):
            add("torch-build", "torch's ROCm build",
                f"{where} needs {lib}, which only torch's ROCm builds have; this lock's torch {sel.torch} is the "
                f"{backend or 'unknown'} build", structural=True)
            continue
        if _CUDA_LIB.match(lib) and lib not in provided:
            add("cuda-library", lib, f"{where} needs {lib}, which no locked wheel brings ({_brings(lib, sel)})")
        major = _CUDA_MAJOR_LIB.match(lib)
        if major and target.driver is not None:
            floor = matrix.driver_floor(f"{major[2]}.0", target.os, policy)
            if floor is not None and _key(target.driver) < _key(floor):
                add("cuda-driver", f"CUDA {major[2]}",
                    f"{where} is built for CUDA {major[2]} ({lib}), which needs driver >= {floor}; this driver is "
                    f"{target.driver}")
    built = f.built_for_torch
    if m.torch_abi == "cxx" and built and _public_minor(sel.torch) not in (None, built):
        add("torch-release", f"torch {built}",
            f"{where} links torch's C++ API and was built for torch {built} ({_built_from(f)}); this lock has torch "
            f"{sel.torch}: the import would fail with an undefined symbol")
    return out


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".") if x.isdigit())


def _built_from(f: NativeFacts) -> str:
    return f"{f.filename}'s METADATA pins it, or its version's label says so"


def _brings(lib: str, sel: Selection) -> str:
    m = re.match(r"^lib([A-Za-z]+?)(?:Lt)?\.so\.([0-9]+)", lib)
    wheel = _WHEEL_OF.get(m[1]) if m else None
    said = f"torch {sel.torch} ({sel.backend}) brings CUDA {_backend_cuda(sel.backend)}"
    if wheel and m:
        suffix = "" if int(m[2]) >= 13 else f"-cu{m[2]}"
        said += f"; {wheel}{suffix} would bring it" if _CUDA_MAJOR_LIB.match(lib) else f"; {wheel} brings it"
    return said


def _backend_cuda(backend: str | None) -> str:
    m = re.fullmatch(r"cu([0-9]+)([0-9])", backend or "")
    return f"{m[1]}.{m[2]}" if m else "no CUDA"


def conflict(sel: Selection, found: list[Problem], rejected: list[str]) -> str:
    """No choice fixes the closure's native code: the package, what it needs, and the least change."""
    first = found[0]
    lines = [f"target {sel.target.name!r}: {first.package}'s native code cannot load on this target: {first.line}"]
    lines += [f"  also: {p.line}" for p in found[1:3]]
    if rejected:
        lines.append("  tried and rejected: " + "; ".join(rejected[:4]))
    lines.append("  fix: " + _least_change(sel, first))
    return "\n".join(lines)


def _least_change(sel: Selection, p: Problem) -> str:
    if p.kind in ("driver", "torch-build") and sel.target.driver is None:
        return (f"{p.package} needs an NVIDIA GPU: lock it for the GPU machines only (a target or environment of "
                "their own), not for this one")
    if p.kind == "torch-build":
        return f"torch's CUDA build ([environment].cuda, not \"{sel.backend}\") for {p.package}"
    if p.kind == "cuda-library":
        return (f"a torch build that brings {p.needs} (its CUDA major), or a build of {p.package} made for this "
                f"torch's CUDA ([[package-builds]] in triton-env.toml names where its per-CUDA builds are)")
    if p.kind == "cuda-driver":
        return f"a driver that runs {p.needs} (`tritonlock why` shows what it unlocks), or a {p.package} built for " \
               "an older CUDA"
    if p.kind == "torch-release":
        return f"torch = \"=={p.needs.split()[-1]}.*\" (the torch it was built for), or a {p.package} built for " \
               f"torch {sel.torch}"
    return f"a release of {p.package} built for this GPU, or a target without it"
