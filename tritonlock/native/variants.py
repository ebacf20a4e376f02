"""A package's builds of one module per torch release or per CUDA release, told by their names (nixl's
_torch211.so, bitsandbytes' libbitsandbytes_cuda128.so, torch_memory_saver's _cu12): which of them a torch loads, and
— for the libraries a package picks at run time by torch's CUDA release (compat/packages.toml [[cuda-build-pick]]) —
whether it has one for the torch's CUDA at all."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from tritonlock.models import NativeMember


def public_minor(version: str | None) -> str | None:
    m = re.match(r"([0-9]+)\.([0-9]+)", version or "")
    return f"{m[1]}.{m[2]}" if m else None


# one module built per torch release, the release in its name: nixl_ep_cpp_torch211.so, _torch212.so, …;
# libtorch_c_dlpack_addon_torch24-cpu.so … torch29-cpu.so
_TORCH_VARIANT = re.compile(r"torch([23])([0-9]{1,2})(?![0-9])")


def torch_variant(path: str) -> tuple[str, str] | None:
    """(the module's name without the torch release, that release "2.11") for a per-torch build's file."""
    folder, _, base = path.rpartition("/")
    base = base.split(".", 1)[0]
    m = _TORCH_VARIANT.search(base)
    return (f"{folder}/{base[:m.start()]}*{base[m.end():]}", f"{m[1]}.{m[2]}") if m else None


def other_torches(members: list[NativeMember], torch: str | None) -> set[str]:
    """The paths of per-torch builds made for another torch than `torch`: a wheel that carries one module built for
    each of several torch releases (two or more, told by their names) loads the one for the torch it runs with, if
    any — the others are never loaded (and when none matches, the package goes without that part, its own choice)."""
    want = public_minor(torch)
    if want is None:
        return set()
    groups: dict[str, list[tuple[str, str]]] = {}
    for m in members:
        v = torch_variant(m.path)
        if v is not None:
            groups.setdefault(v[0], []).append((m.path, v[1]))
    return {path for builds in groups.values() if len({r for _, r in builds}) > 1 for path, r in builds if r != want}


def built_for_by_name(path: str) -> str | None:
    """The torch release ("2.11") a per-torch build's file name says it is made for; None when it says none."""
    v = torch_variant(path)
    return v[1] if v else None


# one library built per CUDA release, the CUDA in its name or its folder's name: torch_memory_saver's
# hook_mode_torch_cu12 / _cu13 (it loads the one for torch.version.cuda's major), nccl_extensions' lib/cu12/ and
# lib/cu13/, bitsandbytes' libbitsandbytes_cuda128 (major and minor)
_CUDA_TAG = r"cu(?:da)?(1[0-9])([0-9])?x?"
_CUDA_IN_NAME = re.compile(rf"(?:(?<=[_-])|^){_CUDA_TAG}(?=[_-]|\Z)")
_CUDA_FOLDER = re.compile(_CUDA_TAG)


@functools.lru_cache(maxsize=8192)  # (the search asks it of each member of each release, once per torch line)
def cuda_variant(path: str) -> tuple[str, str, tuple[int, int | None]] | None:
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


def backend_cuda_release(backend: str | None) -> tuple[int, int] | None:
    m = re.fullmatch(r"cu(1[0-9])([0-9])", backend or "")
    return (int(m[1]), int(m[2])) if m else None


def cuda_builds(members: list[NativeMember], backend: str | None = None) -> set[str]:
    """The paths of per-CUDA builds a torch of `backend` does not load: a wheel that carries one build of a library
    for each of several CUDA releases (told by their names) loads the one for its torch's CUDA — the exact release
    where the builds name a minor (cuda128), else the major (cu12) — and neither the others nor a build of the same
    name that names no CUDA (torch_memory_saver keeps that one for ROCm). Where no build is for that CUDA, none is
    left out (the package has no build for it: each is judged). A ROCm torch loads the build naming no CUDA where
    there is one, and none of the per-CUDA builds (torch_memory_saver's utils.py: "ROCm builds ship an unsuffixed
    binary"); a CPU or XPU torch, which has no CUDA to pick by, leaves none out. With no `backend`, every such build
    and the one naming no CUDA beside them: what not every torch loads."""
    want = backend_cuda_release(backend) if backend is not None else None
    rocm = (backend or "").startswith("rocm")
    if backend is not None and want is None and not rocm:
        return set()
    names = {m.path for m in members}
    groups: dict[str, list[tuple[str, str, tuple[int, int | None]]]] = {}
    for m in members:
        v = cuda_variant(m.path)
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


def per_cuda_build(path: str) -> bool:
    """Whether a member's name or folders name a CUDA release (one of a package's builds per CUDA: see loaded)."""
    return cuda_variant(path) is not None


# --- the per-CUDA libraries a package picks at run time ---------------------------------------------------------------

@dataclass(frozen=True, kw_only=True, slots=True)
class Pick:
    """How a package picks, at run time, the one of its per-CUDA libraries it loads by name (none of its modules
    names them: bitsandbytes' libbitsandbytes_cuda{torch's CUDA}.so): compat/packages.toml [[cuda-build-pick]]."""

    name: str  # normalized
    versions: str  # a PEP 440 specifier of the releases the row is about ("": every release)
    pick: str  # "exact": the build for torch's exact CUDA release, or none; "major": any build of torch's CUDA major
    without: str  # what the package does without one, in words ("falls back to its CPU library: …")
    source: str

    def holds(self, name: str, version: str) -> bool:
        if name != self.name:
            return False
        try:
            return not self.versions or SpecifierSet(self.versions).contains(version, prereleases=True)
        except InvalidSpecifier:
            return False


@dataclass(frozen=True, kw_only=True, slots=True)
class Missing:
    """A package's per-CUDA libraries of which none is the one it would pick for the torch's CUDA."""

    pattern: str  # "bitsandbytes/libbitsandbytes_cuda*.so"
    have: tuple[str, ...]  # the CUDA releases it has builds for, in order ("11.7", …, "12.5"; "12" for a major)
    want: str  # the torch's CUDA release, "12.8"
    pick: Pick | None  # the row it picks by; None: a build named for a CUDA major, taken for that major alone


def _cuda_words(c: tuple[int, int | None]) -> str:
    return f"{c[0]}.{c[1]}" if c[1] is not None else str(c[0])


def missing_runtime_build(members: Iterable[NativeMember], named: set[str], name: str, version: str,
                          backend: str | None, picks: Iterable[Pick]) -> Missing | None:
    """Where a wheel carries one library per CUDA release that nothing of it names (`named`: the paths its modules
    and their DT_NEEDED reach, every build counted; none of them is an extension or an op library) — the package
    loads one by name at run time, chosen by torch's CUDA release —, the first such set with none for the torch of
    `backend` by the package's rule: a [[cuda-build-pick]] row for its release, or, for builds that name a CUDA major
    only (cu12, cu13), that major (a build for one CUDA major links that major's runtime). Builds that name a minor
    with no row say nothing of how the package picks: not judged (None)."""
    want = backend_cuda_release(backend)
    if want is None:
        return None
    groups: dict[str, list[tuple[int, int | None]]] = {}
    skip: set[str] = set()
    for m in members:
        v = cuda_variant(m.path)
        if v is None:
            continue
        if m.path in named or m.extension or m.torch_abi:
            skip.add(v[0])
        groups.setdefault(v[0], []).append(v[2])
    row = next((p for p in picks if p.holds(name, version)), None)
    for key in sorted(groups):
        builds = sorted(set(groups[key]), key=lambda c: (c[0], -1 if c[1] is None else c[1]))
        if key in skip or len(builds) < 2:
            continue
        minors = all(c[1] is not None for c in builds)
        if row is None and minors:
            continue
        exact = row is not None and row.pick == "exact"
        fits = [c for c in builds if c in (want, (want[0], None))] if exact else [c for c in builds if c[0] == want[0]]
        if not fits:
            return Missing(pattern=key, have=tuple(_cuda_words(c) for c in builds), want=f"{want[0]}.{want[1]}",
                           pick=row)
    return None
