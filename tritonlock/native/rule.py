"""The native-code rule's core, shared by the decision (on a closure's binary facts, before a lock is written),
verify and doctor (on an environment's installed files): every extension module finds what it needs — the CUDA
libraries its ELF names (brought by the torch build, an NVIDIA wheel or its own wheel), the driver they need, the
torch build and release it links — and the symbols of torch's C++ API it calls, against those the torch build
exports —, and code or PTX for the GPUs. What is judged is what loads: the wheel's import names the user or a locked
package imports (a second top-level package nothing imports is an optional part: a warning), the extensions and op
libraries under them and the libraries they link. Small predicates over facts; each problem names the package, the
library, symbol or arch, and the file it was read from."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tritonlock._archs import gpu_runs
from tritonlock.models import NativeFacts, NativeMember
from tritonlock.native.libs import CUDA_LIB, CUDA_MAJOR_LIB, DRIVER_LIBS, ROCM_LIB, WHEEL_OF, nearest
from tritonlock.native.variants import (Pick, built_for_by_name, cuda_builds, missing_runtime_build, other_torches,
                                        public_minor, torch_variant)

__all__ = ["CUDA_LIB", "HOPELESS", "Item", "Problem", "Setting", "check", "gfx_runs", "gpu_code_modules", "hopeless",
           "is_provider", "loaded", "public_minor", "top_of", "with_reach"]

# Packages whose native code is the provider, not a consumer: torch's own builds (their facts are the matrix's:
# backend, archs), Triton (it compiles at run time) and NVIDIA's CUDA libraries (compat/cudalibs.toml).
_PROVIDERS = {"torch", "triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu", "triton-windows",
              "triton-xpu", "triton-rocm"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Problem:
    """One package's native code that cannot load (or run) on the target: what, and what would change it."""

    package: str
    version: str
    kind: str  # "driver", "torch-build", "cuda-library", "cuda-driver", "torch-release", "gpu-code"
    needs: str  # "libcudart.so.13", "torch's CUDA build", "torch 2.9", "sm_70"
    text: str  # in words, naming the package, its file and what it needs
    structural: bool = False  # no other release of the package can change it (a CPU target and CUDA code)
    # "torch-symbol": the mangled symbols the torch lacks (the first is `needs`, demangled); else ()
    symbols: tuple[str, ...] = ()
    built_for: str | None = None  # the torch release the wheel names as the one it was built for
    builds: tuple[str, ...] = ()  # "cuda-build": the CUDA releases the package has builds for ("12.4", "12.6")
    # only modules the package loads inside a `try` that catches their failure fail so (NativeFacts.guarded): the
    # import works without them — a problem where the user names the package, else a warning (see GUARDED_KINDS)
    guarded: bool = False

    @property
    def line(self) -> str:
        return f"{self.package} {self.version}: {self.text}"


def is_provider(name: str) -> bool:
    """torch's family, Triton and NVIDIA's CUDA libraries: their native code is what the others need."""
    n = norm(name)
    return n in _PROVIDERS or n.startswith(("nvidia-", "cuda-"))


@dataclass(frozen=True, kw_only=True, slots=True)
class Item:
    """One distribution's native code to judge: its name, version and binary facts."""

    name: str
    version: str
    facts: NativeFacts
    # the wheel's import names that are imported (reach: what the user, a locked package or its own name imports);
    # None: all of them (facts without import names, or a wheel none of whose names is the package's own)
    reach: frozenset[str] | None = None


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
    # what the torch build exports of its C++ API (tritonlock.native.torchsyms.Exports: `has`, `missing`, `what`,
    # `rate`); None: not known (then `exports_why` says why, where it was asked)
    exports: Any = None
    exports_why: str | None = None
    # (package, library): a library the package loads by name (dlopen) that its own documentation makes mandatory
    # (compat/packages.toml [[dlopen-needed]]): one nothing brings is a problem, not a warning
    dlopen_needed: frozenset[tuple[str, str]] = frozenset()
    # how a package picks, at run time, the one of its per-CUDA libraries it loads (compat/packages.toml
    # [[cuda-build-pick]]): one with none for the torch's CUDA is a problem (variants.missing_runtime_build)
    cuda_picks: tuple[Pick, ...] = ()

    @property
    def here(self) -> str:
        return "this machine" if self.installed else "this target"

    @property
    def bringer(self) -> str:
        return "nothing installed here (nor this machine's loader)" if self.installed else "no locked wheel"


def loaded(members: Iterable[NativeMember], torch: str | None = None, backend: str | None = None, *,
           roots: Callable[[NativeMember], bool] | None = None, also: frozenset[str] = frozenset()
           ) -> list[NativeMember]:
    """What importing the package loads: its extension modules, its torch op libraries (they link libtorch and the
    package loads them with torch.ops.load_library: xformers' and torchao's _C.so), and the wheel's libraries those
    need by soname. A library nothing names is loaded, if at all, by the package's own choice at run time (one of
    bitsandbytes' per-CUDA libraries): it is not judged — unless `also` names it (a library of its wheel the package
    loads by name and cannot do without: compat/packages.toml [[dlopen-needed]]). With `torch` (the release it runs
    with), of a module built once per torch release only the build for that torch is judged (see
    variants.other_torches); with `backend` (its build, "cu130"), of one built per CUDA release only the build for
    that CUDA (see variants.cuda_builds). `roots`: which of the extensions and op libraries count (those under the
    import names that are imported: reached)."""
    members = list(members)
    other = other_torches(members, torch) | (cuda_builds(members, backend) if backend else set())
    members = [m for m in members if m.path not in other]
    by_name = {m.path.rsplit("/", 1)[-1]: m for m in members}
    todo = [m for m in members if (m.extension or m.torch_abi or m.path.rsplit("/", 1)[-1] in also)
            and (roots is None or roots(m))]
    seen: dict[str, NativeMember] = {m.path: m for m in todo}
    while todo:
        for lib in todo.pop().needed:
            dep = by_name.get(lib)
            if dep is not None and dep.path not in seen:
                seen[dep.path] = dep
                todo.append(dep)
    return list(seen.values())


# --- what is reached: the import names imported ---------------------------------------------------------------------

# a distribution's name beside its import name: "nixl-cu12" installs nixl_cu12, "cupy-cuda12x" cupy,
# "flashinfer-python" flashinfer
_NAME_SUFFIX = re.compile(r"_(?:cu(?:da)?[0-9]{2,3}x?|cpu|rocm[0-9_]*|xpu|python|py|bin|binary)\Z")


def own_names(name: str) -> set[str]:
    """The import names a distribution's own name stands for: the name itself with "_" for "-", and without a
    per-CUDA or packaging suffix ("nixl-cu12" -> nixl_cu12, nixl)."""
    n = re.sub(r"[-_.]+", "_", name).lower()
    out = {n}
    while (m := _NAME_SUFFIX.search(n)) and m.start() > 0:
        n = n[:m.start()]
        out.add(n)
    return out


def top_of(path: str) -> str:
    """The import name a member sits under: its top-level folder, or a root module's name ("x.abi3.so" -> x)."""
    first, sep, _ = path.partition("/")
    return first if sep else first.split(".", 1)[0]


def with_reach(items: Iterable[Item], named: Iterable[str]) -> list[Item]:
    """The items with what is imported of each (`reach`): its own import names (those its distribution's name
    stands for), the names the user names (`named`: their packages, [environment].imports), the modules at its
    wheel's root (torch_memory_saver's hooks, cffi's _cffi_backend: its package's own backends, loaded by it), and
    what those import — of any item, as read from the packages' Python (NativeFacts.imports). What is left is a
    second top-level package nothing imports (nixl-cu12's nixl_ep_cu12): an optional part. An item whose wheel
    lists no import names, or none that is its own, is reached whole (None)."""
    items = list(items)
    want = {re.sub(r"[-_.]+", "_", n).lower() for n in named}
    reach: list[set[str] | None] = []
    for item in items:
        tops = set(item.facts.tops)
        own = {t for t in tops if t.lower() in own_names(item.name)}
        if not tops or not own:
            reach.append(None)
            continue
        under = {top_of(m.path) for m in item.facts.members if "/" in m.path}
        attached = {t for t in tops if t not in under}  # (a root module, or a folder of Python alone)
        reach.append(own | attached | {t for t in tops if t.lower() in want})
    while True:  # what the reached names import, across the wheels, until nothing more is reached
        imported = {b for item, r in zip(items, reach)
                    for a, b in item.facts.imports if r is None or a in r}
        grown = False
        for i, item in enumerate(items):
            r = reach[i]
            if r is not None and (more := (set(item.facts.tops) & imported) - r):
                r |= more
                grown = True
        if not grown:
            break
    return [dataclasses.replace(item, reach=frozenset(r) if r is not None else None) for item, r in zip(items, reach)]


def reached(item: Item) -> Callable[[NativeMember], bool] | None:
    """Whether a member is under an import name that is imported (a member under no import name: yes)."""
    if item.reach is None:
        return None
    tops, reach = set(item.facts.tops), item.reach
    return lambda m: (t := top_of(m.path)) not in tops or t in reach


# what a failed load is (the loader's error, caught by a `try` around the load): a library missing, torch's other
# build, a torch release or symbol the module was not built for. (A module that loads and then has no code for the
# GPU, or a CUDA the driver cannot run, fails when it is called, where no `try` of the import is around it.)
GUARDED_KINDS = ("driver", "torch-build", "cuda-library", "torch-release", "torch-symbol")


def check(items: Iterable[Item], provided: set[str], at: Setting) -> list[Problem]:
    """What in the items' native code cannot load or run in the setting (empty: all of it can): what is reached of
    each (Item.reach; optional_parts says what the rest would need). A problem only the modules the package loads
    inside a `try` (NativeFacts.guarded, and the libraries only they need) have, of a kind such a `try` catches, is
    marked `guarded`: the caller decides whether it counts."""
    out: list[Problem] = []
    for item in items:
        if is_provider(item.name) or not item.facts.native:
            continue
        roots = reached(item)
        also = needed_by_name(item, at)
        mods = loaded(item.facts.members, at.torch, at.backend, roots=roots, also=also)
        found = problems_of(item, mods, provided, at)
        if also and found:  # (what the libraries it loads by name alone bring: said so, inferred)
            plain = {(p.kind, p.needs) for p in problems_of(item, loaded(
                item.facts.members, at.torch, at.backend, roots=roots), provided, at)}
            found = [p if (p.kind, p.needs) in plain else dataclasses.replace(p, text=(
                f"{p.text} — {item.name} loads {', '.join(sorted(also))} by name at run time, and without it is not "
                f"what it is locked for (compat/packages.toml [[dlopen-needed]]; inferred: the row says why)"))
                for p in found]
        guarded = set(item.facts.guarded)
        if guarded and found:
            hard = {(p.kind, p.needs) for p in problems_of(item, loaded(
                item.facts.members, at.torch, at.backend, also=also,
                roots=lambda m: (roots is None or roots(m)) and m.path not in guarded), provided, at)}
            found = [dataclasses.replace(p, guarded=True) if p.kind in GUARDED_KINDS and (p.kind, p.needs) not in hard
                     else p for p in found]
        out += found
        if (miss := runtime_build(item, roots, at)) is not None:
            out.append(miss)
    return out


def needed_by_name(item: Item, at: Setting) -> frozenset[str]:
    """The libraries of the item's own wheel it loads by name at run time and cannot do without (compat/packages.toml
    [[dlopen-needed]]: onnxruntime-gpu's CUDA provider), judged as if its import loaded them — on a CUDA torch only
    (elsewhere the package's GPU half has nothing to run on, and its import is all that is asked)."""
    if not at.backend.startswith("cu") or not at.dlopen_needed:
        return frozenset()
    mine = {m.path.rsplit("/", 1)[-1] for m in item.facts.members}
    return frozenset(lib for n, lib in at.dlopen_needed if n == norm(item.name) and lib in mine)


def runtime_build(item: Item, roots: Callable[[NativeMember], bool] | None, at: Setting) -> Problem | None:
    """The per-CUDA library the package would load by name at run time for the torch's CUDA, where it has none
    (variants.missing_runtime_build): what it does then, from its row, or — a build per CUDA major — that none loads."""
    members = [m for m in item.facts.members if roots is None or roots(m)]
    named = {m.path for m in loaded(members)}
    miss = missing_runtime_build(members, named, norm(item.name), item.version, at.backend, at.cuda_picks)
    if miss is None:
        return None
    have = ", ".join(miss.have) if len(miss.have) <= 4 else f"{', '.join(miss.have[:2])}, … {miss.have[-1]}"
    if miss.pick is None:
        how = (f"a build named for one CUDA major links that major's libraries (inferred: {item.name} picks it by "
               "torch's CUDA at run time), so none of them loads")
    else:
        which = "the build for torch's exact CUDA release" if miss.pick.pick == "exact" else \
            "a build of torch's CUDA major"
        how = (f"{item.name} loads {which} at run time, else none: {miss.pick.without} (compat/packages.toml "
               f"[[cuda-build-pick]], from {miss.pick.source.split(' ')[0]})")
    return Problem(package=item.name, version=item.version, kind="cuda-build", needs=f"CUDA {miss.want}",
                   builds=miss.have,
                   text=(f"{miss.pattern} in {item.facts.filename}, one library per CUDA release, is built for CUDA "
                         f"{have}, none for CUDA {miss.want} (torch {at.torch} ({at.backend})): {how}"))


def problems_of(item: Item, mods: list[NativeMember], provided: set[str], at: Setting) -> list[Problem]:
    """What in these loaded members of one item cannot load or run."""
    ccs = [g for g in at.gpus if re.fullmatch(r"[0-9]+\.[0-9]+", g)]
    f = item.facts
    found: dict[str, Problem] = {}
    for m in mods:
        for prob in _member_problems(item, m, at, provided):
            found.setdefault(prob.kind + prob.needs, prob)
    # GPU code: the package as a whole must carry code (or PTX) for each GPU: its extension modules divide the
    # kernels among them by architecture, and one that lacks an arch is no failure while another has it
    optional = norm(item.name) in at.optional_gpu  # (its lack of code for a GPU is a warning instead)
    with_code = [] if optional else gpu_code_modules(mods)
    if with_code and ccs and at.backend.startswith("cu"):
        sm = tuple(sorted({a for m in with_code for a in m.sm}))
        ptx = tuple(sorted({a for m in with_code for a in m.ptx}))
        for cc in dict.fromkeys(ccs):
            if gpu_runs(cc, sm, ptx) is None:
                found.setdefault(f"gpu-code{cc}", Problem(
                    package=item.name, version=item.version, kind="gpu-code", needs=f"sm_{cc.replace('.', '')}",
                    text=(f"its GPU code is built for {archs_words(sm, ptx)}, which has no code for {at.here}'s "
                          f"GPU (compute capability {cc}): its first kernel launch would fail ('no kernel image "
                          f"is available'; read from {f.filename})")))
    # AMD code objects the same way, on a ROCm torch: each gfx GPU needs code for its target in some module
    gfxs = [g for g in at.gpus if g.startswith("gfx")]
    with_gfx = [] if optional else [m for m in mods if m.gpu.startswith("read") and m.gfx]
    if with_gfx and gfxs and at.backend.startswith("rocm"):
        have = tuple(sorted({a for m in with_gfx for a in m.gfx}))
        for gfx in dict.fromkeys(gfxs):
            if not gfx_runs(gfx, have):
                found.setdefault(f"gpu-code{gfx}", Problem(
                    package=item.name, version=item.version, kind="gpu-code", needs=gfx,
                    text=(f"its GPU code is built for {', '.join(have)}, which has no code for {at.here}'s GPU "
                          f"({gfx}): loading its kernels would fail ('hipErrorNoBinaryForGpu'; read from "
                          f"{f.filename})")))
    for p in dlopen_found(item, mods, provided, at):
        if (norm(item.name), p[1]) in at.dlopen_needed:
            found.setdefault("cuda-library" + p[1], Problem(
                package=item.name, version=item.version, kind="cuda-library", needs=p[1],
                text=f"{p[2]} — and {item.name}'s own documentation makes it mandatory (compat/packages.toml "
                     "[[dlopen-needed]])"))
    return list(found.values())


def dlopen_found(item: Item, mods: list[NativeMember], provided: set[str],
                  at: Setting) -> list[tuple[NativeMember, str, str]]:
    """(member, library, in words) for each library a loaded member names in its strings (inferred: it may
    dlopen it) that nothing here brings: a CUDA library on a CUDA torch, a ROCm one on a ROCm torch."""
    out: list[tuple[NativeMember, str, str]] = []
    seen: set[str] = set()
    for m in mods:
        for lib in m.dlopen:
            if lib in seen or lib in provided or lib in m.needed or DRIVER_LIBS.match(lib):
                continue
            ours = (CUDA_LIB.match(lib) and at.backend.startswith("cu")) or (
                ROCM_LIB.match(lib) and at.backend.startswith("rocm"))
            if not ours:
                continue
            seen.add(lib)
            near = nearest(lib, provided)
            out.append((m, lib, f"{m.path} in {item.facts.filename} names {lib} among its strings (inferred "
                                f"(dlopen): it may load it by name at run time), which {at.bringer} brings"
                                + (f" — the lock's nearest is {near}" if near else "")
                                + f": what of {item.name} loads it would fail ('{lib}: cannot open shared object "
                                  "file')"))
    return out


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _arch_specific(arch: str) -> bool:
    """sm_90a, sm_100a, compute_90a: code for one GPU alone, which no other GPU runs. (Family code, sm_100f, is not:
    it runs on each GPU of its family, 10.0 and 10.3, as sm_100 does; only its PTX stays in the family.)"""
    return bool(re.fullmatch(r"(?:sm|compute)_[0-9]+a", arch))


def gpu_code_modules(members: Iterable[NativeMember]) -> list[NativeMember]:
    """The modules whose GPU code counts for a GPU: read, with code or PTX — not a module whose code is all for one
    GPU alone (sm_90a, sm_100a: torchao's _C_cutlass_90a), which runs on no other GPU by construction, so a package
    that ships one loads or calls it only there."""
    return [m for m in members if m.gpu.startswith("read") and (m.sm or m.ptx)
            and not all(_arch_specific(a) for a in (*m.sm, *m.ptx))]


@functools.lru_cache(maxsize=1)
def generic_targets() -> dict[str, frozenset[str]]:
    """LLVM's generic processors and the processors each covers (compat/rocm.toml [[generic-target]])."""
    from tritonlock import _toml
    from tritonlock._data import compat_root

    root = compat_root()
    try:
        rows = _toml.loads((root / "rocm.toml").read_text(encoding="utf-8")).get("generic-target", []) if root else []
    except (OSError, _toml.TOMLDecodeError):
        return {}
    return {str(r["name"]): frozenset(str(x) for x in r.get("members", ())) for r in rows
            if isinstance(r, dict) and isinstance(r.get("name"), str)}


def gfx_runs(gfx: str, have: Iterable[str]) -> bool:
    """Whether AMD code objects for the target IDs `have` ("gfx90a:xnack-", "gfx11-generic") run on a `gfx` GPU: its
    own processor with any features, or a generic target whose family lists it — LLVM's AMDGPUUsage "generic
    processors" (compat/rocm.toml [[generic-target]]: gfx9-4-generic runs on gfx942 and gfx950, not on gfx90a; a
    generic target the table does not know counts for nothing)."""
    base = gfx.split(":", 1)[0]
    families = generic_targets()
    for target in have:
        t = target.split(":", 1)[0]
        if t == base or base in families.get(t, ()):
            return True
    return False


# Problems no other closure changes: the wheel's own GPU code against the target's GPUs, its CUDA against the driver
HOPELESS = ("gpu-code", "cuda-driver")


def hopeless(item: Item, at: Setting) -> list[Problem]:
    """What in one wheel's native code cannot run in the setting whatever else is locked beside it (any torch, any
    CUDA libraries): no code or PTX for a GPU across all its modules (the builds for every torch counted), or a
    module every torch loads built for a CUDA the driver does not run. A subset of what `check` finds."""
    members = loaded(item.facts.members, roots=reached(item))
    per_cuda = cuda_builds(members)
    kept = [m for m in members if torch_variant(m.path) is None and m.path not in per_cuda]
    wide = dataclasses.replace(item, facts=dataclasses.replace(item.facts, members=tuple(kept)))
    found = [p for p in check([wide], set(), at) if p.kind == "cuda-driver"]
    if at.gpus and at.backend.startswith(("cu", "rocm")):
        whole = dataclasses.replace(at, torch=None)
        found += [p for p in check([item], set(), whole) if p.kind == "gpu-code"]
    return found


def archs_words(sm: tuple[str, ...], ptx: tuple[str, ...]) -> str:
    if not sm:
        return f"PTX {', '.join(ptx)} alone (no machine code)" if ptx else "nothing"
    return ", ".join(sm) + (f" and PTX {', '.join(ptx)}" if ptx else " (no PTX)")


@functools.lru_cache(maxsize=4096)
def _cuda_lib(lib: str) -> tuple[bool, str | None]:
    """Whether a needed library is one of CUDA's, and the CUDA major its name says (once a process for each name:
    the search asks it of each member of each release, once per torch line)."""
    major = CUDA_MAJOR_LIB.match(lib)
    return bool(CUDA_LIB.match(lib)), major[2] if major else None


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
        cuda, major = _cuda_lib(lib)
        if cuda and lib not in provided:
            add("cuda-library", lib, f"{where} needs {lib}, which {at.bringer} brings ({_brings(lib, at)})")
        if major and at.driver is not None:
            floor = at.floors.get(int(major))
            if floor is not None and _key(at.driver) < _key(floor):
                add("cuda-driver", f"CUDA {major}",
                    f"{where} is built for CUDA {major} ({lib}), which needs driver >= {floor}; this driver is "
                    f"{at.driver}")
    built = f.built_for_torch
    if m.torch_abi == "cxx" and built and public_minor(at.torch) not in (None, built):
        add("torch-release", f"torch {built}",
            f"{where} links torch's C++ API and was built for torch {built} ({_built_from(f)}); torch here is "
            f"{at.torch}: the import would fail with an undefined symbol")
    if m.torch_abi == "cxx" and m.torch_symbols and at.exports is not None and not any(
            p.kind == "torch-build" for p in out):  # (torch's other build: that is the problem, not its symbols)
        missing = at.exports.missing(m.torch_symbols)
        if missing:
            from tritonlock.native.demangle import shown

            named = built or built_for_by_name(m.path)
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            out.append(Problem(
                package=item.name, version=item.version, kind="torch-symbol", needs=_demangled(missing[0]),
                symbols=tuple(missing), built_for=named,
                text=(f"{where} calls {shown(missing[0])}{more} of torch's C++ API, which {at.exports.what} does "
                      f"not export ({len(missing)} of the {len(m.torch_symbols)} torch symbols it needs): it was "
                      "built against another torch" + (f" (torch {named}, as {_built_from(f)})" if built else
                                                       f" (its file name says torch {named})" if named else
                                                       " (its wheel names none)")
                      + f": the import would fail ('undefined symbol: {missing[0]}')")))
    return out


def _demangled(name: str) -> str:
    from tritonlock.native.demangle import demangle

    return demangle(name)


@functools.lru_cache(maxsize=256)
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
    wheel = WHEEL_OF.get(m[1]) if m else None
    said = (f"torch {at.torch} ({at.backend}) brings CUDA {_backend_cuda(at.backend)}" if at.backend.startswith("cu")
            else f"torch {at.torch} is the {at.backend or 'unknown'} build, which brings no CUDA")
    if at.backend.startswith(("rocm", "xpu")):  # an AMD or Intel GPU: a CUDA runtime wheel would not run it
        return said + "; a CUDA library runs on NVIDIA GPUs only"
    if wheel and m:
        suffix = "" if int(m[2]) >= 13 else f"-cu{m[2]}"
        said += f"; {wheel}{suffix} would bring it" if CUDA_MAJOR_LIB.match(lib) else f"; {wheel} brings it"
    return said


def _backend_cuda(backend: str | None) -> str:
    m = re.fullmatch(r"cu([0-9]+)([0-9])", backend or "")
    return f"{m[1]}.{m[2]}" if m else "no CUDA"

