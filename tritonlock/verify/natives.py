"""verify's word on the packages' native code: the runner's import rows (each distribution with extension modules,
imported in a process of its own) explained with the lock's binary facts — the library that was not found and the
wheel that should have brought it, the torch a build was made for — and the GPU code of what is installed, read from
its files, against the GPUs the runner saw (an import cannot show that a kernel has no code for a GPU)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritonlock.models import LockedPackage, NativeFacts


@dataclass(frozen=True, kw_only=True, slots=True)
class ImportRow:
    dist: str
    version: str
    ok: bool
    named: bool = False
    native: bool = False
    module: str | None = None
    error: str = ""
    needs_driver: bool = False
    loaded: int = 0
    requires_torch: str | None = None
    modules: tuple[str, ...] = ()
    left: int = 0  # of `modules`, the builds for another torch or CUDA, not imported (the package never loads them)
    optional: tuple[tuple[str, str], ...] = ()  # (module, error): parts that cannot load, the package imports without
    # (module, error): of those, the ones in a second top-level package of the wheel that nothing named imports
    parts: tuple[tuple[str, str], ...] = ()
    also: tuple[str, ...] = ()  # the other modules that failed (the runner lists five at most)


def parse_rows(raw: Any) -> tuple[ImportRow, ...]:
    """The runner's `imports` (a list of objects); what is not one is left out (the runner's own checks say more)."""
    out = []
    for r in raw if isinstance(raw, list) else []:
        if not isinstance(r, dict) or not isinstance(r.get("dist"), str) or not isinstance(r.get("ok"), bool):
            continue
        out.append(ImportRow(
            dist=r["dist"], version=str(r.get("version", "?")), ok=r["ok"], named=bool(r.get("named")),
            native=bool(r.get("native")), module=r.get("module") if isinstance(r.get("module"), str) else None,
            error=str(r.get("error") or ""), needs_driver=bool(r.get("needs_driver")),
            loaded=int(r["loaded"]) if isinstance(r.get("loaded"), int) else 0,
            requires_torch=r.get("requires_torch") if isinstance(r.get("requires_torch"), str) else None,
            modules=tuple(m for m in r.get("modules", []) if isinstance(m, str)),
            left=int(r["left"]) if isinstance(r.get("left"), int) and r["left"] > 0 else 0,
            optional=_optional(r, part=False), parts=_optional(r, part=True),
            also=tuple(m for m in r.get("also", []) if isinstance(m, str)) if isinstance(r.get("also"), list) else ()))
    return tuple(out)


def _optional(r: dict[str, Any], *, part: bool) -> tuple[tuple[str, str], ...]:
    raw = r.get("optional")
    return tuple((str(o.get("module")), str(o.get("error"))) for o in raw if isinstance(o, dict)
                 and bool(o.get("part")) == part)[:5] if isinstance(raw, list) else ()


@dataclass(frozen=True, kw_only=True, slots=True)
class LockFacts:
    """What the lock knows of the native code: which locked package brings each library, and the facts by name."""

    brings: dict[str, str]  # soname -> "nvidia-cuda-runtime 13.0.96"
    facts: dict[str, tuple[str, NativeFacts]]  # package name -> (version, its wheel's facts)


def lock_facts(packages: Iterable[LockedPackage], native: Iterable[NativeFacts]) -> LockFacts:
    by_sha = {f.sha256: f for f in native}
    brings: dict[str, str] = {}
    facts: dict[str, tuple[str, NativeFacts]] = {}
    for p in packages:
        for w in p.wheels:
            f = by_sha.get(w.sha256)
            if f is None:
                continue
            for so in f.provides:
                brings.setdefault(so, f"{p.name} {p.version}")
            if f.members:
                facts.setdefault(p.name, (p.version, f))
    return LockFacts(brings=brings, facts=facts)


_MISSING = re.compile(r"(\S+?): cannot open shared object file")
_UNDEFINED = re.compile(r"undefined symbol: (\S+)")


def _torch_cuda(torch: str | None) -> str | None:
    m = re.search(r"\+cu([0-9]+)([0-9])\b", torch or "")
    return f"{m[1]}.{m[2]}" if m else None


def explain(row: ImportRow, *, torch: str | None, lock: LockFacts | None) -> tuple[str, str | None]:
    """(detail, fix) of one distribution's failed import, in words that name the package and the cause."""
    from tritonlock.native.elf import built_for_torch

    what = f"{row.dist} {row.version}" + (f": importing {row.module} failed" if row.module else "")
    missing = _MISSING.search(row.error)
    if missing:
        lib = missing[1]
        brought = lock.brings.get(lib) if lock else None
        if lib == "libcuda.so.1":
            return (f"{what}: it needs libcuda.so.1, the NVIDIA driver's library, and the loader finds none here "
                    f"({row.error})", "run it where the NVIDIA driver is installed and visible (a container needs "
                                     "the GPU passed to it: --gpus all, or the NVIDIA device plugin)")
        if lib.startswith(("libtorch_cuda", "libc10_cuda", "libtorch_hip", "libc10_hip")):
            build = "ROCm" if "hip" in lib else "CUDA"
            return (f"{what}: it needs {lib}, which only torch's {build} builds have, and this environment's torch "
                    f"{torch or '(none)'} is not one ({row.error})",
                    f"torch's {build} build ([environment].cuda in triton-env.toml) for {row.dist}, or a {row.dist} "
                    "build for this torch; `tritonlock resolve` refuses this pairing")
        if brought:
            return (f"{what}: it needs {lib}, which the lock's {brought} brings, and the loader finds none here "
                    f"({row.error})", "`tritonlock sync` makes the environment match the lock")
        major = re.search(r"\.so\.([0-9]+)$", lib)
        cuda = _torch_cuda(torch)
        said = f"{what}: it needs {lib}, which no installed package brings"
        if major and lib.startswith(("libcudart", "libcublas", "libnvrtc", "libnvJitLink")):
            said += f": {row.dist} {row.version} is a CUDA {major[1]} build" + (
                f" and this environment's torch {torch} brings CUDA {cuda}" if cuda else "")
        return (f"{said} ({row.error})", f"install {row.dist}'s build for this torch's CUDA, or a torch whose CUDA it "
                                         "was built for — `tritonlock resolve` picks a pair that loads (the lock's "
                                         "rule refuses this one)")
    meta = f"Requires-Dist: {row.requires_torch}" if row.requires_torch else None
    built = built_for_torch(f"{row.dist}-{row.version}-x.whl", meta)
    if built is None and lock and row.dist in lock.facts and lock.facts[row.dist][0] == row.version:
        built = lock.facts[row.dist][1].built_for_torch
    other_torch = bool(built and torch and not torch.startswith(built + "."))
    undefined = _UNDEFINED.search(row.error)
    if undefined:
        from tritonlock.native.demangle import shown

        sym = shown(undefined[1][:300])[:300]
        if other_torch and torch:
            return (f"{what}: a symbol it links is missing ({sym}): it was built for torch {built}, and this "
                    f"environment has torch {torch}", f"install the {row.dist} build for torch {torch.split('+')[0]} "
                                                       f"(or torch {built}); `tritonlock resolve` picks a pair that "
                                                       "loads")
        return (f"{what}: a symbol it links is missing ({sym}): it was built against another torch, or another "
                f"build of a library it links, than this environment has ({row.error[:200]})",
                f"reinstall {row.dist} for this environment's torch ({torch}); `tritonlock sync` restores the lock")
    if other_torch and row.requires_torch and torch:
        # its native code did not load, and its own import says so in its words ("operator torchvision::nms does not
        # exist"): the cause is in its METADATA
        requires = re.sub(r"\s*\((.*)\)", r"\1", row.requires_torch)  # "torch (==2.13.0)", as older METADATA has it
        return (f"{what}: {row.error[:300]} — {row.dist} {row.version} was built for torch {built} (it requires "
                f"{requires}), and this environment has torch {torch}",
                f"install the {row.dist} build for torch {torch.split('+')[0]} (or torch {built}); "
                "`tritonlock sync` restores the lock's")
    return (f"{what}: {row.error}", "see the error above; `tritonlock doctor` looks at the environment"
            if not row.named else "it is a package you named: its import must work (`tritonlock doctor` may say why)")


def installed_sonames(site: Iterable[str]) -> set[str]:
    """The file names of every shared object the installed distributions hold (what the loader can find by name)."""
    from tritonlock.native.elf import SO

    out: set[str] = set()
    for root in site:
        for record in Path(root).glob("*.dist-info/RECORD"):
            try:
                text = record.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            out.update(p.rsplit("/", 1)[-1] for line in text.splitlines() if SO.search(p := line.split(",", 1)[0]))
    return out


def _torch_backend(site: list[str]) -> str | None:
    """ "cu130" for the installed torch built for CUDA 13.0, "rocm" for a ROCm build, from its torch/version.py; None
    where none says."""
    from tritonlock.verify.runner.tlverify.imports import cuda_of_version_py, rocm_of_version_py

    for s in site:
        try:
            text = (Path(s) / "torch" / "version.py").read_text(encoding="utf-8")
        except (OSError, ValueError):
            continue
        cuda = cuda_of_version_py(text)
        return f"cu{cuda[0]}{cuda[1]}" if cuda else ("rocm" if rocm_of_version_py(text) else None)
    return None


def _missing_cuda_libs(site: list[str], dist: str, torch: str | None) -> list[tuple[str, str]]:
    """(member, library) for each CUDA library a distribution's installed extension modules name that no installed
    distribution brings: read from the files, for when the loader stopped earlier (no driver on this machine). Only
    what importing it loads counts: of a module built once per torch release, the build for the installed torch;
    of one built per CUDA release, the build for its CUDA."""
    from tritonlock.native.elf import read_installed
    from tritonlock.native.rule import CUDA_LIB, loaded

    found = _record([Path(s) for s in site], dist)
    if found is None:
        return []
    root, paths = found
    from tritonlock.native.elf import system_sonames

    have = installed_sonames(site) | system_sonames()
    public = torch.split("+", 1)[0] if torch else None
    return [(m.path, lib) for m in loaded(read_installed(root, paths, gpu=False), public, _torch_backend(site))
            for lib in m.needed
            if CUDA_LIB.match(lib) and lib not in have]


def import_checks(rows: Iterable[ImportRow], *, torch: str | None, lock: LockFacts | None,
                  site: Iterable[str] = ()) -> list[tuple[str, bool, str, str | None]]:
    """(name, ok, detail, fix) per distribution, failures first-class, the rest one line each."""
    out: list[tuple[str, bool, str, str | None]] = []
    site = list(site)
    for r in rows:
        name = f"import {r.dist}"
        missing = _missing_cuda_libs(site, r.dist, torch) if r.ok and r.needs_driver and site else []
        if missing:  # the loader stopped at the driver's library; what else it needs is missing whatever the machine
            member, lib = missing[0]
            row = ImportRow(dist=r.dist, version=r.version, ok=False, named=r.named, native=True, module=r.module,
                            error=f"{lib}: cannot open shared object file (read from {member}: no installed package "
                                  "brings it)", requires_torch=r.requires_torch, modules=r.modules)
            detail, fix = explain(row, torch=torch, lock=lock)
            out.append((name, False, detail + "; on this machine the import stopped earlier, at libcuda.so.1 (no "
                                              "NVIDIA driver here)", fix))
        elif r.ok and r.needs_driver:
            out.append((name, True, f"{r.dist} {r.version}: not imported here: its native code needs the NVIDIA "
                                    "driver (libcuda.so.1), which this machine has not — a GPU machine of the lock "
                                    "imports it", None))
        elif r.ok and r.error:
            out.append((name, True, f"{r.dist} {r.version} imports; {r.module} did not ({r.error[:160]}), which is "
                                    "not native code failing to load", None))
        elif r.ok and r.parts:
            module, why = r.parts[0]
            more = f" (and {len(r.parts) - 1} more)" if len(r.parts) > 1 else ""
            out.append((name, True, f"{r.dist} {r.version}: imported; {module}, a second top-level package of its "
                                    f"wheel, did not ({why[:200]}){more} — nothing you named imports it, so it is an "
                                    "optional part (name it in [environment].imports to have it checked)", None))
        elif r.ok and r.optional:
            module, why = r.optional[0]
            needs = _MISSING.search(why)
            more = f" (and {len(r.optional) - 1} more such module(s))" if len(r.optional) > 1 else ""
            out.append((name, True, f"{r.dist} {r.version}: imported; its module {module} cannot load: it needs "
                                    f"{needs[1] if needs else 'a library'}, which no installed package brings{more} — "
                                    f"inferred optional: {r.dist} imports without it", None))
        elif r.ok:
            n = max(len(r.modules) - r.left, 0)
            out.append((name, True, f"{r.dist} {r.version}: imported" + (
                f", with its {n} extension module{'s' * (n != 1)}" if n else "") + (
                f" ({r.left} more: its builds for another torch or CUDA than this one's, which it does not load)"
                if r.left else ""), None))
        elif (off := guarded_off(r, lock)) is not None:
            out.append((name, True, off, None))
        else:
            detail, fix = explain(r, torch=torch, lock=lock)
            out.append((name, False, detail, fix))
    return out


def _module_of(path: str) -> str:
    """The module a member's path names: "torchao/_C.abi3.so" -> torchao._C."""
    folder, _, base = path.rpartition("/")
    return ".".join([*(folder.split("/") if folder else []), base.split(".", 1)[0]])


def guarded_off(r: ImportRow, lock: LockFacts | None) -> str | None:
    """Where every module that failed is one the package loads only inside a `try` that catches its failure (the
    lock's facts: NativeFacts.guarded, read from its Python when it was locked), the row in words: the import works
    and what needs those modules is off — as the lock's warning said. None otherwise (a module imported plainly, a
    top-level import that failed, more failures than the runner lists, another release than the lock's)."""
    if lock is None or r.module is None or len(r.also) >= 5 or r.dist not in lock.facts:
        return None
    version, facts = lock.facts[r.dist]
    guarded = {_module_of(p) for p in facts.guarded}
    failed = (r.module, *r.also)
    if version != r.version or not guarded or any(m not in guarded for m in failed):
        return None
    more = f" (and {len(r.also)} more such module(s))" if r.also else ""
    return (f"{r.dist} {r.version}: imported; its module {r.module} cannot load ({r.error[:200]}){more} — "
            f"{r.dist} loads it inside a `try` that catches the failure (the lock's facts, inferred from its Python), "
            f"so what needs it is off: a {r.dist} built for this torch would have it")


def _ccs(gpus: Iterable[str]) -> list[tuple[str, str]]:
    """(label, compute capability) of the runner's GPU lines ("cuda:0 NVIDIA H200 (sm_90, 139.8 GiB)")."""
    out = []
    for g in gpus:
        m = re.search(r"\(sm_([0-9]+)([0-9])\b", g)
        if m:
            out.append((g.split(" (", 1)[0], f"{m[1]}.{m[2]}"))
    return out


def gpu_code_checks(site: Iterable[str], rows: Iterable[ImportRow],
                    gpus: Iterable[str]) -> list[tuple[str, bool, str, str | None]]:
    """The GPU code each imported distribution's installed files carry, against each GPU the runner saw: a GPU
    without code (or PTX) from any of its extension modules fails at the first kernel launch."""
    import re

    from tritonlock._archs import gpu_runs
    from tritonlock.native.elf import read_installed
    from tritonlock.compat.pkgbuilds import optional_gpu_code
    from tritonlock.native.rule import gpu_code_modules

    optional = optional_gpu_code()
    ccs = _ccs(gpus)
    if not ccs:
        return []
    roots = [Path(s) for s in site]
    out: list[tuple[str, bool, str, str | None]] = []
    for r in rows:
        if not r.ok or not r.modules or r.needs_driver:
            continue
        files = _record(roots, r.dist)
        if files is None:
            continue
        root, paths = files
        members = gpu_code_modules(read_installed(root, paths))  # (not a module for one GPU family alone: sm_90a)
        if not members:
            continue
        sm = tuple(sorted({a for m in members for a in m.sm}))
        ptx = tuple(sorted({a for m in members for a in m.ptx}))
        for label, cc in ccs:
            runs = gpu_runs(cc, sm, ptx)
            archs = ", ".join(sm) + (f" and PTX {', '.join(ptx)}" if ptx else " (no PTX)")
            if runs is None and re.sub(r"[-_.]+", "-", r.dist).lower() in optional:
                said = optional[re.sub(r"[-_.]+", "-", r.dist).lower()]
                out.append((f"GPU code {r.dist}", True, f"{r.dist} {r.version}'s extension modules carry code for "
                            f"{archs}, and none for {label} (compute capability {cc}): it calls those kernels only on "
                            f"the GPUs they are for (inferred: {said}), so what it runs here runs without them",
                            None))
            elif runs is None:
                out.append((f"GPU code {r.dist}", False, f"{r.dist} {r.version}'s extension modules carry code for "
                            f"{archs}, and none for {label} (compute capability {cc}): its kernels fail at their "
                            "first launch ('no kernel image is available for execution on the device')",
                            f"install a build of {r.dist} with code for sm_{cc.replace('.', '')} (a release or build "
                            "made for this GPU); `tritonlock resolve` refuses one without it for this target"))
            elif runs == "ptx":
                out.append((f"GPU code {r.dist}", True, f"{r.dist} {r.version} runs on {label} (compute capability "
                            f"{cc}) only through PTX ({', '.join(ptx)}): the driver compiles its kernels at their "
                            "first launch (slower start)", None))
    return out


def _record(roots: list[Path], dist: str) -> tuple[Path, list[str]] | None:
    """(site-packages root, the distribution's files) from its RECORD."""
    want = re.sub(r"[-_.]+", "_", dist).lower()
    for root in roots:
        try:
            infos = [p for p in root.glob("*.dist-info") if p.name.lower().split("-", 1)[0] == want]
        except OSError:
            continue
        for info in infos:
            try:
                text = (info / "RECORD").read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            return root, [line.split(",", 1)[0] for line in text.splitlines() if line]
    return None
