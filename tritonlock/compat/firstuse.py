"""The packages of a lock that compile (or download) their CUDA kernels when first called (compat/packages.toml
[[kernels-at-first-use]]): which of a target's GPUs they have no kernels for, and which of their prebuilt-kernel
packages the lock does not bring — read by the decision (its words on a lock) and by sync (nvcc on the machine)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from tritonlock._archs import cc_tuple
from tritonlock.compat.pkgbuilds import FirstUse, kernels_at_first_use
from tritonlock.models import LockedPackage


@dataclass(frozen=True, kw_only=True, slots=True)
class Found:
    """One locked package that builds its kernels at first use, as the lock and the target have it."""

    row: FirstUse
    package: str
    version: str
    missing: tuple[str, ...]  # the row's prebuilt packages the lock does not bring
    below: tuple[str, ...]  # the target's GPUs (as written, "7.0") below the row's min-gpu
    every_gpu_below: bool  # the target names GPUs, and each is below
    brought_by: tuple[str, ...]  # the locked packages that require it (from the lock's dependency edges)
    # the prebuilt packages the lock brings at another release than the package's (row.same_release): (name, version)
    mismatched: tuple[tuple[str, str], ...] = ()

    @property
    def min_gpu(self) -> str:
        return f"{self.row.min_gpu[0]}.{self.row.min_gpu[1]}"


def _cc(gpu: str) -> tuple[int, int] | None:
    """"8.6" -> (8, 6); None for what is not a compute capability (an AMD or Intel GPU's name)."""
    # (ASCII digits only: str.isdigit takes "７" too)
    return cc_tuple(gpu) if re.fullmatch(r"[0-9]+(\.[0-9]+)?", gpu) else None


def release(version: str) -> Version | None:
    """A version's public release ("0.6.15.post1+cu130" -> 0.6.15.post1); None where it is no PEP 440 version."""
    try:
        return Version(Version(version).public)
    except InvalidVersion:
        return None


def builds_kernels_itself(p: LockedPackage) -> bool:
    """Whether the locked files carry no GPU code of their own: every wheel a py3-none-any one (an sdist alone
    counts too: built as it is published). A wheel tagged for a platform carries compiled code: not this case."""
    wheels = [w.name for w in p.wheels]
    if not wheels:
        return p.sdist is not None
    return all(n.endswith("-none-any.whl") for n in wheels)


def found(packages: tuple[LockedPackage, ...] | list[LockedPackage], gpus: tuple[str, ...] | list[str],
          backend: str | None) -> list[Found]:
    """The locked packages with a [[kernels-at-first-use]] row, on a CUDA build of torch (`backend` "cu…": no CUDA
    kernel is built or run on any other), whose locked files carry no GPU code of their own."""
    if not (backend or "").startswith("cu"):
        return []
    rows = kernels_at_first_use()
    names = {p.name: p.version for p in packages}
    ccs = [(g, _cc(g)) for g in gpus]
    out = []
    for p in packages:
        row = rows.get(p.name)
        if row is None or not builds_kernels_itself(p):
            continue
        below = tuple(g for g, cc in ccs if cc is not None and cc < row.min_gpu)
        out.append(Found(row=row, package=p.name, version=p.version,
                         missing=tuple(n for n in row.prebuilt if n not in names), below=below,
                         every_gpu_below=bool(ccs) and len(below) == len(ccs),
                         brought_by=tuple(sorted(q.name for q in packages if p.name in (q.dependencies or ()))),
                         mismatched=tuple((n, names[n]) for n in row.prebuilt if row.same_release and n in names
                                          and release(names[n]) != release(p.version))))
    return out


def source_of(f: Found) -> str:
    """The row's first source, for a message: its address alone."""
    return f.row.source.split(" ", 1)[0]
