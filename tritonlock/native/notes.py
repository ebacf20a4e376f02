"""The native-code rule's warnings: what it locks and says, not refuses — an optional part nothing imports that
cannot load here, a library a module may load by name that nothing brings (inferred (dlopen)), a GPU reached only
through PTX, a package that calls its kernels only where they run, a build of torch's C++ API nothing decides."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from tritonlock._archs import gpu_runs
from tritonlock.models import NativeMember
from tritonlock.native.libs import CUDA_MAJOR_LIB
from tritonlock.native.rule import (Item, Problem, Setting, archs_words, dlopen_found, gpu_code_modules, is_provider,
                                    loaded, needed_by_name, norm, problems_of, reached, top_of)
from tritonlock.native.variants import built_for_by_name, per_cuda_build, public_minor


def optional_parts(items: Iterable[Item], provided: set[str], at: Setting) -> list[str]:
    """Warnings for the import names of a wheel nothing imports (a second top-level package its users import by
    name: nixl-cu12's nixl_ep_cu12) whose native code cannot load or run here: what `import <that name>` would
    need. The package's own import does not load them, so they are no refusal."""
    out: list[str] = []
    for item in items:
        if item.reach is None or is_provider(item.name) or not item.facts.native:
            continue
        for top in sorted(set(item.facts.tops) - item.reach):
            def under(m: NativeMember, t: str = top) -> bool:
                return top_of(m.path) == t

            mods = loaded(item.facts.members, at.torch, at.backend, roots=under)
            probs = problems_of(item, mods, provided, at) if mods else []
            if not probs:
                continue
            own = sorted(item.reach & set(item.facts.tops))
            needs = ", ".join(dict.fromkeys(p.needs for p in probs))
            more = f" (and {len(probs) - 1} more)" if len(probs) > 1 else ""
            out.append(f"{item.name} {item.version}: `import {top}` would need {needs}: {probs[0].text}{more}; "
                       f"nothing locked or named imports {top} (the package's own import is "
                       f"{', '.join(own) or item.name}, which does not load it), so it is locked as an optional "
                       f"part — name it in [environment].imports to have it judged")
    return out

def dlopen_warnings(items: Iterable[Item], provided: set[str], at: Setting) -> list[str]:
    """Warnings for the libraries a reached module names in its strings that nothing here brings (inferred
    (dlopen)); the ones a package's documentation makes mandatory are check's problems instead."""
    out: list[str] = []
    for item in items:
        if is_provider(item.name) or not item.facts.native:
            continue
        mods = loaded(item.facts.members, at.torch, at.backend, roots=reached(item))
        out += [f"{item.name} {item.version}: {words}" for _, lib, words in dlopen_found(item, mods, provided, at)
                if (norm(item.name), lib) not in at.dlopen_needed]
    return out


def run_time_libraries(items: Iterable[Item], provided: set[str], at: Setting) -> list[str]:
    """Warnings for the libraries a package loads at run time by its own choice (onnxruntime-gpu's CUDA provider,
    loaded when a session asks for the GPU) built for a CUDA this target cannot give them. Such a library is in an
    import name that is imported, and is no extension module, no torch op library, no file another file of its wheel
    names, and not one of several per-CUDA builds (loaded() picks and judges those): `import` never loads it, so
    it is no refusal — but what loads it fails here. Said only where its CUDA is another major than the closure's
    torch brings (a versioned CUDA runtime, cuBLAS, NVRTC or nvJitLink), or one the driver does not run; a library
    of another kind that nothing brings is an optional backend's (TensorRT's, for onnxruntime's other provider)."""
    mine = re.fullmatch(r"cu([0-9]+)[0-9]", at.backend)
    out: list[str] = []
    if mine is None or at.driver is None:  # (a CPU, ROCm or XPU torch, or no NVIDIA driver: no CUDA runs there)
        return out
    items = list(items)
    # a package built per CUDA under two names, both locked (nixl's nixl-cu12 and nixl-cu13): the one named for this
    # torch's CUDA is the one that runs; the other's libraries are not said
    mine_named = {c[0] for i in items if (c := _cuda_named(i.name)) is not None and c[1] == mine[1]}
    for item in items:
        if is_provider(item.name) or not item.facts.native:
            continue
        other = _cuda_named(item.name)
        if other is not None and other[1] != mine[1] and other[0] in mine_named:
            continue
        members = item.facts.members
        roots = reached(item)
        tops = set(item.facts.tops)
        named = {lib for m in members for lib in m.needed} | needed_by_name(item, at)  # (those: check's problems)
        by_name = {m.path.rsplit("/", 1)[-1]: m for m in members}
        found: dict[str, tuple[NativeMember, Problem]] = {}
        for m in members:  # (what an import loads is an extension, a torch op library, or a library they name)
            if (m.extension or m.torch_abi or m.path.rsplit("/", 1)[-1] in named or per_cuda_build(m.path)
                    or top_of(m.path) not in tops or (roots is not None and not roots(m))):
                continue  # (and a library outside the import names — a wheel's vendored .libs — is a plugin's)
            mods, todo = {m.path: m}, [m]
            while todo:  # the library and the wheel's own libraries it needs
                for lib in todo.pop().needed:
                    dep = by_name.get(lib)
                    if dep is not None and dep.path not in mods:
                        mods[dep.path] = dep
                        todo.append(dep)
            for p in problems_of(item, list(mods.values()), provided, at):
                major = CUDA_MAJOR_LIB.match(p.needs) if p.kind == "cuda-library" else None
                if p.kind == "cuda-driver" or (major is not None and major[2] != mine[1]):
                    found.setdefault(p.kind + p.needs, (m, p))
        if found:
            said = sorted(found.values(), key=lambda mp: mp[1].kind != "cuda-driver")  # the driver's first
            libs = list(dict.fromkeys(m.path for m, _ in said))
            more = f" (and {len(said) - 1} more)" if len(said) > 1 else ""
            which = libs[0] + (f" and {len(libs) - 1} more of its libraries" if len(libs) > 1 else "")
            it = "them" if len(libs) > 1 else "it"
            out.append(f"{item.name} {item.version}: {said[0][1].text}{more} — {item.name} loads {which} itself at "
                       f"run time, by its own choice (no module of `import {top_of(libs[0])}` names {it}: inferred "
                       f"from its files), so the import works and what loads {it} fails here: to have {it}, lock a "
                       f"{item.name} release built for CUDA {mine[1]}, "
                       f"the CUDA torch {at.torch} ({at.backend}) brings")
    return out


def _cuda_named(name: str) -> tuple[str, str] | None:
    """(the name without it, the CUDA major) of a distribution named for one CUDA major ("nixl-cu12", "cupy-cuda12x")."""
    m = re.fullmatch(r"(.+?)[-_.]cu(?:da)?([0-9]{2})x?", norm(name))
    return (m[1], m[2]) if m else None


def ptx_only(items: Iterable[Item], at: Setting) -> list[str]:
    """Warnings for the packages whose GPU code has no machine code for a GPU of the target, only PTX: the driver
    compiles their kernels when they are first used (as for torch's own builds)."""
    ccs = [g for g in at.gpus if re.fullmatch(r"[0-9]+\.[0-9]+", g)]
    out: list[str] = []
    if not ccs or not at.backend.startswith("cu"):
        return out
    for item in items:
        if is_provider(item.name) or not item.facts.native:
            continue
        mods = gpu_code_modules(loaded(item.facts.members, at.torch, at.backend, roots=reached(item)))
        sm = tuple(sorted({a for m in mods for a in m.sm}))
        ptx = tuple(sorted({a for m in mods for a in m.ptx}))
        jit = [cc for cc in dict.fromkeys(ccs) if mods and gpu_runs(cc, sm, ptx) == "ptx"]
        if jit:
            out.append(f"{item.name} {item.version}: {at.here}'s GPU (compute capability {', '.join(jit)}) has no "
                       f"machine code in its GPU code ({archs_words(sm, ptx)}), only PTX: the driver compiles its kernels "
                       "from PTX at their first use (JIT: a slow first start; read from "
                       f"{item.facts.filename})")
    return out

def optional_gpu_code(items: Iterable[Item], at: Setting, why: dict[str, str]) -> list[str]:
    """Warnings for the packages of `at.optional_gpu` whose GPU code has none for a GPU of the target: they load,
    and call those kernels only on the GPUs they are for (`why`: what that rests on, per package, inferred)."""
    ccs = [g for g in at.gpus if re.fullmatch(r"[0-9]+\.[0-9]+", g)]
    out: list[str] = []
    if not ccs or not at.backend.startswith("cu"):
        return out
    for item in items:
        if norm(item.name) not in at.optional_gpu or is_provider(item.name):
            continue
        mods = [m for m in loaded(item.facts.members, at.torch, at.backend, roots=reached(item))
                if m.gpu.startswith("read") and (m.sm or m.ptx)]
        sm = tuple(sorted({a for m in mods for a in m.sm}))
        ptx = tuple(sorted({a for m in mods for a in m.ptx}))
        lacking = [cc for cc in dict.fromkeys(ccs) if mods and gpu_runs(cc, sm, ptx) is None]
        if lacking:
            said = why.get(norm(item.name)) or "the intent's [environment].optional-gpu-code says so"
            out.append(f"{item.name} {item.version}: its GPU code is built for {archs_words(sm, ptx)}, none of it for "
                       f"{at.here}'s GPU (compute capability {', '.join(lacking)}); it is locked all the same, as a "
                       f"package that calls those kernels only on the GPUs they are for (inferred: {said}) — what "
                       "it runs here runs without them, and a call into one of them here would fail ('no kernel "
                       "image is available')")
    return out

def unknown_torch(items: Iterable[Item], torch: str | None = None, backend: str | None = None, *,
                  exports: Any = None) -> list[str]:
    """The packages whose loaded native code links torch's C++ API while their wheel names no torch release it was
    built for (no exact torch pin, no per-torch label, no file name naming this torch), and whose symbols could not
    be checked against the torch's exports (`exports`: what it exports; None where not known): whether it loads with
    a torch is unknown from its files."""
    out = []
    for item in items:
        if is_provider(item.name) or item.facts.built_for_torch:
            continue
        mine = public_minor(torch)
        tied = [m.path for m in loaded(item.facts.members, torch, backend, roots=reached(item))
                if m.torch_abi == "cxx" and (mine is None or built_for_by_name(m.path) != mine)
                and not (exports is not None and m.torch_symbols)]
        if tied:
            out.append(f"{item.name} {item.version}: {tied[0]}" + (f" and {len(tied) - 1} more" if len(tied) > 1 else "")
                       + f" in {item.facts.filename} link torch's C++ API, and the wheel names no torch release they "
                         "were built for (its METADATA pins no torch, its version has no per-torch label)")
    return out


# What the warnings above say, each in words no other warning uses: how `why` and `check` find them in a lock
_MARKS = ("among its strings (inferred (dlopen)", "so it is locked as an optional part", "only PTX: the driver compiles",
          "is not known from its files", "it is locked all the same, as a package that calls those kernels only",
          "itself at run time, by its own choice")


def native_warnings(warnings: Iterable[str]) -> list[str]:
    """Of a locked decision's warnings, the native-code rule's."""
    return [w for w in warnings if any(m in w for m in _MARKS)]
