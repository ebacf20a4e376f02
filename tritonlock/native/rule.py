"""The native-code rule's core, shared by the decision (on a closure's binary facts, before a lock is written),
verify and doctor (on an environment's installed files): every extension module finds what it needs — the CUDA
libraries its ELF names (brought by the torch build, an NVIDIA wheel or its own wheel), the driver they need, the
torch build and release it links, and code or PTX for the GPUs. Small predicates over facts; each problem names
the package, the library or arch, and the file it was read from."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass

from tritonlock._archs import gpu_runs
from tritonlock.models import NativeFacts, NativeMember

# Packages whose native code is the provider, not a consumer: torch's own builds (their facts are the matrix's:
# backend, archs), Triton (it compiles at run time) and NVIDIA's CUDA libraries (compat/cudalibs.toml).
_PROVIDERS = {"torch", "triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu", "triton-windows",
              "triton-xpu", "triton-rocm"}
# sonames whose number is the CUDA major (cuFFT, cuSOLVER, cuRAND, cuSPARSE, cuDNN and NCCL number their own)
_CUDA_MAJOR_LIB = re.compile(r"^lib(cudart|cublas|cublasLt|nvrtc|nvJitLink)\.so\.([0-9]+)\Z")
# CUDA user libraries: a lock must bring each one a locked extension names (a machine's own toolkit is no lock)
CUDA_LIB = re.compile(r"^lib(cudart|cublas|cublasLt|cufft|curand|cusolver|cusparse|nvrtc|nvJitLink|cudnn[A-Za-z_]*|"
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
    """torch's family, Triton and NVIDIA's CUDA libraries: their native code is what the others need."""
    n = _norm(name)
    return n in _PROVIDERS or n.startswith(("nvidia-", "cuda-", "cupy-cuda"))


@dataclass(frozen=True, kw_only=True, slots=True)
class Item:
    """One distribution's native code to judge: its name, version and binary facts."""

    name: str
    version: str
    facts: NativeFacts


@dataclass(frozen=True, kw_only=True, slots=True)
class Setting:
    """What the native code meets: the torch release and build (backend), the NVIDIA driver, the GPUs, and the
    least driver each CUDA major needs (compat/cuda.toml [[minor_compat]] under the intent's policy)."""

    torch: str | None
    backend: str
    driver: str | None
    gpus: tuple[str, ...]
    floors: dict[int, str]
    # what is judged: a lock's target ("this target", "no locked wheel") or an installed environment
    installed: bool = False
    # packages whose kernels are for some GPUs only, called only there (compat/packages.toml [[optional-gpu-code]],
    # [environment].optional-gpu-code): a GPU without their code is a warning (optional_gpu_code), not a problem
    optional_gpu: frozenset[str] = frozenset()

    @property
    def here(self) -> str:
        return "this machine" if self.installed else "this target"

    @property
    def bringer(self) -> str:
        return "nothing installed here (nor this machine's loader)" if self.installed else "no locked wheel"


# one module built per torch release, the release in its name: nixl_ep_cpp_torch211.so, _torch212.so, …;
# libtorch_c_dlpack_addon_torch24-cpu.so … torch29-cpu.so
_TORCH_VARIANT = re.compile(r"torch([23])([0-9]{1,2})(?![0-9])")


def _variant(path: str) -> tuple[str, str] | None:
    """(the module's name without the torch release, that release "2.11") for a per-torch build's file."""
    folder, _, base = path.rpartition("/")
    base = base.split(".", 1)[0]
    m = _TORCH_VARIANT.search(base)
    return (f"{folder}/{base[:m.start()]}*{base[m.end():]}", f"{m[1]}.{m[2]}") if m else None


def _other_torches(members: list[NativeMember], torch: str | None) -> set[str]:
    """The paths of per-torch builds made for another torch than `torch`: a wheel that carries one module built for
    each of several torch releases (two or more, told by their names) loads the one for the torch it runs with, if
    any — the others are never loaded (and when none matches, the package goes without that part, its own choice)."""
    want = public_minor(torch)
    if want is None:
        return set()
    groups: dict[str, list[tuple[str, str]]] = {}
    for m in members:
        v = _variant(m.path)
        if v is not None:
            groups.setdefault(v[0], []).append((m.path, v[1]))
    return {path for builds in groups.values() if len({r for _, r in builds}) > 1 for path, r in builds if r != want}


def _built_for_by_name(path: str) -> str | None:
    """The torch release ("2.11") a per-torch build's file name says it is made for; None when it says none."""
    v = _variant(path)
    return v[1] if v else None


# one library built per CUDA release, the CUDA in its name or its folder's name: torch_memory_saver's
# hook_mode_torch_cu12 / _cu13 (it loads the one for torch.version.cuda's major), nccl_extensions' lib/cu12/ and
# lib/cu13/, bitsandbytes' libbitsandbytes_cuda128 (major and minor)
_CUDA_TAG = r"cu(?:da)?(1[0-9])([0-9])?x?"
_CUDA_IN_NAME = re.compile(rf"(?:(?<=[_-])|^){_CUDA_TAG}(?=[_-]|\Z)")
_CUDA_FOLDER = re.compile(_CUDA_TAG)


def _cuda_variant(path: str) -> tuple[str, str, tuple[int, int | None]] | None:
    """(the file with its CUDA left out, the same file as a build naming no CUDA would be named, (major, minor)) of
    a per-CUDA build's path; None for a file whose name and folders name no CUDA release."""
    folder, _, name = path.rpartition("/")
    base, dot, rest = name.partition(".")
    m = _CUDA_IN_NAME.search(base)
    if m:
        head, tail = base[:m.start()], base[m.end():]
        plain = head.rstrip("_-") + tail if head else tail.lstrip("_-")
        pre = f"{folder}/" if folder else ""
        return (f"{pre}{head}*{tail}{dot}{rest}", f"{pre}{plain}{dot}{rest}",
                (int(m[1]), int(m[2]) if m[2] else None))
    parts = folder.split("/") if folder else []
    for i, part in enumerate(parts):
        f = _CUDA_FOLDER.fullmatch(part)
        if f:
            key = "/".join([*parts[:i], "*", *parts[i + 1:], name])
            return key, "/".join([*parts[:i], *parts[i + 1:], name]), (int(f[1]), int(f[2]) if f[2] else None)
    return None


def _backend_cuda_release(backend: str | None) -> tuple[int, int] | None:
    m = re.fullmatch(r"cu(1[0-9])([0-9])", backend or "")
    return (int(m[1]), int(m[2])) if m else None


def _cuda_builds(members: list[NativeMember], backend: str | None = None) -> set[str]:
    """The paths of per-CUDA builds a torch of `backend` does not load: a wheel that carries one build of a library
    for each of several CUDA releases (told by their names) loads the one for its torch's CUDA — the exact release
    where the builds name a minor (cuda128), else the major (cu12) — and neither the others nor a build of the same
    name that names no CUDA (torch_memory_saver keeps that one for ROCm). Where no build is for that CUDA, none is
    left out (the package has no build for it: each is judged). A ROCm torch loads the build naming no CUDA where
    there is one, and none of the per-CUDA builds (torch_memory_saver's utils.py: "ROCm builds ship an unsuffixed
    binary"); a CPU or XPU torch, which has no CUDA to pick by, leaves none out. With no `backend`, every such build
    and the one naming no CUDA beside them: what not every torch loads."""
    want = _backend_cuda_release(backend) if backend is not None else None
    rocm = (backend or "").startswith("rocm")
    if backend is not None and want is None and not rocm:
        return set()
    names = {m.path for m in members}
    groups: dict[str, list[tuple[str, str, tuple[int, int | None]]]] = {}
    for m in members:
        v = _cuda_variant(m.path)
        if v is not None:
            groups.setdefault(v[0], []).append((m.path, v[1], v[2]))
    out: set[str] = set()
    for builds in groups.values():
        if len({c for _, _, c in builds}) < 2:
            continue
        plain = {p for _, p, _ in builds if p in names}
        if rocm:
            out |= {p for p, _, _ in builds} if plain else set()
            continue
        if want is None:
            out |= {p for p, _, _ in builds} | plain
            continue
        mine = [p for p, _, c in builds if c == want] or [p for p, _, c in builds if c == (want[0], None)]
        if mine:
            out |= {p for p, _, _ in builds if p not in mine} | plain
    return out


def loaded(members: Iterable[NativeMember], torch: str | None = None,
           backend: str | None = None) -> list[NativeMember]:
    """What importing the package loads: its extension modules, its torch op libraries (they link libtorch and the
    package loads them with torch.ops.load_library: xformers' and torchao's _C.so), and the wheel's libraries those
    need by soname. A library nothing names is loaded, if at all, by the package's own choice at run time (one of
    bitsandbytes' per-CUDA libraries): it is not judged. With `torch` (the release it runs with), of a module built
    once per torch release only the build for that torch is judged (see _other_torches); with `backend` (its build,
    "cu130"), of one built per CUDA release only the build for that CUDA (see _cuda_builds)."""
    members = list(members)
    other = _other_torches(members, torch) | (_cuda_builds(members, backend) if backend else set())
    members = [m for m in members if m.path not in other]
    by_name = {m.path.rsplit("/", 1)[-1]: m for m in members}
    todo = [m for m in members if m.extension or m.torch_abi]
    seen: dict[str, NativeMember] = {m.path: m for m in todo}
    while todo:
        for lib in todo.pop().needed:
            dep = by_name.get(lib)
            if dep is not None and dep.path not in seen:
                seen[dep.path] = dep
                todo.append(dep)
    return list(seen.values())


def check(items: Iterable[Item], provided: set[str], at: Setting) -> list[Problem]:
    """What in the items' native code cannot load or run in the setting (empty: all of it can)."""
    ccs = [g for g in at.gpus if re.fullmatch(r"[0-9]+\.[0-9]+", g)]
    out: list[Problem] = []
    for item in items:
        if is_provider(item.name) or not item.facts.native:
            continue
        f = item.facts
        found: dict[str, Problem] = {}
        for m in loaded(f.members, at.torch, at.backend):
            for prob in _member_problems(item, m, at, provided):
                found.setdefault(prob.kind + prob.needs, prob)
        # GPU code: the package as a whole must carry code (or PTX) for each GPU: its extension modules divide the
        # kernels among them by architecture, and one that lacks an arch is no failure while another has it
        optional = _norm(item.name) in at.optional_gpu  # (its lack of code for a GPU is a warning instead)
        with_code = [] if optional else gpu_code_modules(loaded(f.members, at.torch, at.backend))
        if with_code and ccs and at.backend.startswith("cu"):
            sm = tuple(sorted({a for m in with_code for a in m.sm}))
            ptx = tuple(sorted({a for m in with_code for a in m.ptx}))
            for cc in dict.fromkeys(ccs):
                if gpu_runs(cc, sm, ptx) is None:
                    found.setdefault(f"gpu-code{cc}", Problem(
                        package=item.name, version=item.version, kind="gpu-code", needs=f"sm_{cc.replace('.', '')}",
                        text=(f"its GPU code is built for {_archs(sm, ptx)}, which has no code for {at.here}'s "
                              f"GPU (compute capability {cc}): its first kernel launch would fail ('no kernel image "
                              f"is available'; read from {f.filename})")))
        # AMD code objects the same way, on a ROCm torch: each gfx GPU needs code for its target in some module
        gfxs = [g for g in at.gpus if g.startswith("gfx")]
        with_gfx = [] if optional else [m for m in loaded(f.members, at.torch, at.backend)
                                        if m.gpu.startswith("read") and m.gfx]
        if with_gfx and gfxs and at.backend.startswith("rocm"):
            have = tuple(sorted({a for m in with_gfx for a in m.gfx}))
            for gfx in dict.fromkeys(gfxs):
                if not gfx_runs(gfx, have):
                    found.setdefault(f"gpu-code{gfx}", Problem(
                        package=item.name, version=item.version, kind="gpu-code", needs=gfx,
                        text=(f"its GPU code is built for {', '.join(have)}, which has no code for {at.here}'s GPU "
                              f"({gfx}): loading its kernels would fail ('hipErrorNoBinaryForGpu'; read from "
                              f"{f.filename})")))
        out += found.values()
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _arch_specific(arch: str) -> bool:
    """sm_90a, sm_100a, sm_100f, compute_90a: code for one GPU (family) alone, which no other GPU runs."""
    return bool(re.fullmatch(r"(?:sm|compute)_[0-9]+[af]", arch))


def gpu_code_modules(members: Iterable[NativeMember]) -> list[NativeMember]:
    """The modules whose GPU code counts for a GPU: read, with code or PTX — not a module whose code is all for one
    GPU (family) alone (sm_90a, sm_100a: torchao's _C_cutlass_90a), which runs on no other GPU by construction, so a
    package that ships one loads or calls it only there."""
    return [m for m in members if m.gpu.startswith("read") and (m.sm or m.ptx)
            and not all(_arch_specific(a) for a in (*m.sm, *m.ptx))]


def optional_gpu_code(items: Iterable[Item], at: Setting, why: dict[str, str]) -> list[str]:
    """Warnings for the packages of `at.optional_gpu` whose GPU code has none for a GPU of the target: they load,
    and call those kernels only on the GPUs they are for (`why`: what that rests on, per package, inferred)."""
    ccs = [g for g in at.gpus if re.fullmatch(r"[0-9]+\.[0-9]+", g)]
    out: list[str] = []
    if not ccs or not at.backend.startswith("cu"):
        return out
    for item in items:
        if _norm(item.name) not in at.optional_gpu or is_provider(item.name):
            continue
        mods = [m for m in loaded(item.facts.members, at.torch, at.backend) if m.gpu.startswith("read")
                and (m.sm or m.ptx)]
        sm = tuple(sorted({a for m in mods for a in m.sm}))
        ptx = tuple(sorted({a for m in mods for a in m.ptx}))
        lacking = [cc for cc in dict.fromkeys(ccs) if mods and gpu_runs(cc, sm, ptx) is None]
        if lacking:
            said = why.get(_norm(item.name)) or "the intent's [environment].optional-gpu-code says so"
            out.append(f"{item.name} {item.version}: its GPU code is built for {_archs(sm, ptx)}, none of it for "
                       f"{at.here}'s GPU (compute capability {', '.join(lacking)}); it is locked all the same, as a "
                       f"package that calls those kernels only on the GPUs they are for (inferred: {said}) — what "
                       "it runs here runs without them, and a call into one of them here would fail ('no kernel "
                       "image is available')")
    return out


def _gfx_family(gfx: str) -> tuple[str, str] | None:
    """'gfx942' -> ('9', '4'), 'gfx1100' -> ('11', '0'): the processor's major and minor version."""
    m = re.fullmatch(r"gfx([0-9a-f]+)", gfx)
    if not m:
        return None
    v = m[1]
    return (v[0], v[1]) if len(v) == 3 else (v[:2], v[2]) if len(v) == 4 else None


def gfx_runs(gfx: str, have: Iterable[str]) -> bool:
    """Whether AMD code objects for the target IDs `have` ("gfx90a:xnack-", "gfx11-generic") run on a `gfx` GPU: its
    own processor with any features, or a generic target of its family — LLVM's AMDGPUUsage "generic processors",
    named for the family they cover (gfx9-generic, gfx9-4-generic, gfx10-1-generic, gfx10-3-generic, gfx11-generic,
    gfx12-generic), taken by name: a member the generic target leaves out still counts (verify imports it)."""
    base = gfx.split(":", 1)[0]
    me = _gfx_family(base)
    for target in have:
        t = target.split(":", 1)[0]
        if t == base:
            return True
        m = re.fullmatch(r"gfx([0-9]+)(?:-([0-9]+))?-generic", t)
        if m and me is not None and me[0] == m[1] and (m[2] is None or me[1] == m[2]):
            return True
    return False


# Problems no other closure changes: the wheel's own GPU code against the target's GPUs, its CUDA against the driver
HOPELESS = ("gpu-code", "cuda-driver")


def hopeless(item: Item, at: Setting) -> list[Problem]:
    """What in one wheel's native code cannot run in the setting whatever else is locked beside it (any torch, any
    CUDA libraries): no code or PTX for a GPU across all its modules (the builds for every torch counted), or a
    module every torch loads built for a CUDA the driver does not run. A subset of what `check` finds."""
    members = loaded(item.facts.members)
    per_cuda = _cuda_builds(members)
    kept = [m for m in members if _variant(m.path) is None and m.path not in per_cuda]
    wide = dataclasses.replace(item, facts=dataclasses.replace(item.facts, members=tuple(kept)))
    found = [p for p in check([wide], set(), at) if p.kind == "cuda-driver"]
    if at.gpus and at.backend.startswith(("cu", "rocm")):
        whole = dataclasses.replace(at, torch=None)
        found += [p for p in check([item], set(), whole) if p.kind == "gpu-code"]
    return found


def _archs(sm: tuple[str, ...], ptx: tuple[str, ...]) -> str:
    return ", ".join(sm) + (f" and PTX {', '.join(ptx)}" if ptx else " (no PTX)")


def _member_problems(item: Item, m: NativeMember, at: Setting, provided: set[str]) -> list[Problem]:
    f, backend = item.facts, at.backend
    where = f"{m.path} in {f.filename}"
    out: list[Problem] = []

    def add(kind: str, needs: str, text: str, structural: bool = False) -> None:
        out.append(Problem(package=item.name, version=item.version, kind=kind, needs=needs, text=text,
                           structural=structural))

    for lib in m.needed:
        if lib == "libcuda.so.1":
            if at.driver is None:
                add("driver", lib, f"{where} needs libcuda.so.1, the NVIDIA driver's library, and {at.here} has no "
                                   "NVIDIA driver: the import fails ('libcuda.so.1: cannot open shared object file')",
                    structural=True)
            continue
        if lib in ("libtorch_cuda.so", "libc10_cuda.so") and not backend.startswith("cu"):
            add("torch-build", "torch's CUDA build",
                f"{where} needs {lib}, which only torch's CUDA builds have; torch {at.torch} here is the "
                f"{backend or 'unknown'} build", structural=not at.driver)
            continue
        if lib in ("libtorch_xpu.so", "libc10_xpu.so") and not backend.startswith("xpu"):
            add("torch-build", "torch's XPU build",
                f"{where} needs {lib}, which only torch's XPU builds (Intel GPUs) have; torch {at.torch} here is the "
                f"{backend or 'unknown'} build", structural=True)
            continue
        if lib in ("libtorch_hip.so", "libc10_hip.so") and not backend.startswith("rocm"):
            add("torch-build", "torch's ROCm build",
                f"{where} needs {lib}, which only torch's ROCm builds have; torch {at.torch} here is the "
                f"{backend or 'unknown'} build", structural=True)
            continue
        if CUDA_LIB.match(lib) and lib not in provided:
            add("cuda-library", lib, f"{where} needs {lib}, which {at.bringer} brings ({_brings(lib, at)})")
        major = _CUDA_MAJOR_LIB.match(lib)
        if major and at.driver is not None:
            floor = at.floors.get(int(major[2]))
            if floor is not None and _key(at.driver) < _key(floor):
                add("cuda-driver", f"CUDA {major[2]}",
                    f"{where} is built for CUDA {major[2]} ({lib}), which needs driver >= {floor}; this driver is "
                    f"{at.driver}")
    built = f.built_for_torch
    if m.torch_abi == "cxx" and built and public_minor(at.torch) not in (None, built):
        add("torch-release", f"torch {built}",
            f"{where} links torch's C++ API and was built for torch {built} ({_built_from(f)}); torch here is "
            f"{at.torch}: the import would fail with an undefined symbol")
    return out


def public_minor(version: str | None) -> str | None:
    m = re.match(r"([0-9]+)\.([0-9]+)", version or "")
    return f"{m[1]}.{m[2]}" if m else None


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".") if x.isdigit())


def _built_from(f: NativeFacts) -> str:
    """Where the torch a build was made for was read: its version's label, or its METADATA's exact torch pin."""
    local = f.filename.split(" ")[1] if " " in f.filename else (f.filename.split("-")[1] if "-" in f.filename else "")
    label = local.split("+", 1)[1] if "+" in local else ""
    return f"its version's label +{label} says so" if label and re.search(r"pt[0-9]|torch", label) else \
        "its METADATA pins that torch"


def _brings(lib: str, at: Setting) -> str:
    m = re.match(r"^lib([A-Za-z]+?)(?:Lt)?\.so\.([0-9]+)", lib)
    wheel = _WHEEL_OF.get(m[1]) if m else None
    said = (f"torch {at.torch} ({at.backend}) brings CUDA {_backend_cuda(at.backend)}" if at.backend.startswith("cu")
            else f"torch {at.torch} is the {at.backend or 'unknown'} build, which brings no CUDA")
    if at.backend.startswith(("rocm", "xpu")):  # an AMD or Intel GPU: a CUDA runtime wheel would not run it
        return said + "; a CUDA library runs on NVIDIA GPUs only"
    if wheel and m:
        suffix = "" if int(m[2]) >= 13 else f"-cu{m[2]}"
        said += f"; {wheel}{suffix} would bring it" if _CUDA_MAJOR_LIB.match(lib) else f"; {wheel} brings it"
    return said


def _backend_cuda(backend: str | None) -> str:
    m = re.fullmatch(r"cu([0-9]+)([0-9])", backend or "")
    return f"{m[1]}.{m[2]}" if m else "no CUDA"


def unknown_torch(items: Iterable[Item], torch: str | None = None, backend: str | None = None) -> list[str]:
    """The packages whose loaded native code links torch's C++ API while their wheel names no torch release it was
    built for (no exact torch pin, no per-torch label, no file name naming this torch): whether it loads with a torch
    is unknown from its files."""
    out = []
    for item in items:
        if is_provider(item.name) or item.facts.built_for_torch:
            continue
        mine = public_minor(torch)
        tied = [m.path for m in loaded(item.facts.members, torch, backend) if m.torch_abi == "cxx"
                and (mine is None or _built_for_by_name(m.path) != mine)]
        if tied:
            out.append(f"{item.name} {item.version}: {tied[0]}" + (f" and {len(tied) - 1} more" if len(tied) > 1 else "")
                       + f" in {item.facts.filename} link torch's C++ API, and the wheel names no torch release they "
                         "were built for (its METADATA pins no torch, its version has no per-torch label)")
    return out
