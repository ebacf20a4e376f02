"""A lock's packages that compile (or download) their CUDA kernels when first called, in the decision's words: a
named one for which no GPU of the target has kernels is the target's conflict; otherwise a warning for each GPU it
cannot run on and for the prebuilt-kernel packages the lock does not bring (nvcc then compiles them, at first use)."""

from __future__ import annotations

import dataclasses

from tritonlock.compat.firstuse import Found, found, source_of
from tritonlock.models import Conflict, LockedPackage, Selection


def _row(f: Found) -> str:
    return f"compat/packages.toml [[kernels-at-first-use]], from {source_of(f)}"


def _who(f: Found, named: set[str]) -> str:
    if f.package in named:
        return f"{f.package} {f.version}"
    by = ', '.join(f.brought_by) if f.brought_by else "the packages named"
    return f"{f.package} {f.version} (not named: required by {by})"


def _ccs(gpus: tuple[str, ...]) -> str:
    return ", ".join(f"{g} (sm_{g.replace('.', '')})" for g in dict.fromkeys(gpus))


def conflict(sel: Selection, f: Found) -> str:
    """A named package with kernels for none of the target's GPUs: what it has, what the target has, the change."""
    return (f"target {sel.target.name!r}: {f.package} {f.version} builds its CUDA kernels when first called, for "
            f"compute capability {f.min_gpu} (sm_{f.min_gpu.replace('.', '')}) and newer only, and this target's "
            f"GPU{'s are' if len(set(f.below)) > 1 else ' is'} {_ccs(f.below)}: no release of it runs its kernels "
            f"here ({_row(f)})\n"
            f"  fix: leave {f.package} out of this target's packages (a target of its own for the GPUs of compute "
            f"capability >= {f.min_gpu}), or run this target on such a GPU")


def warnings(sel: Selection, fs: list[Found]) -> list[str]:
    """Each GPU a locked package has no kernels for, and the prebuilt kernels the lock lacks."""
    named = {d.name for d in sel.direct}
    out = []
    for f in fs:
        who = _who(f, named)
        if f.below:
            out.append(f"{who} builds its CUDA kernels when first called, for compute capability {f.min_gpu} and "
                       f"newer only: on this target's GPU {_ccs(f.below)} its kernels cannot run — what calls them "
                       f"fails there unless it picks another backend itself ({_row(f)})")
        if f.missing and not f.every_gpu_below:
            lacks = (f"does not bring {f.missing[0]}, which carries them" if len(f.missing) == 1 else
                     f"brings none of {', '.join(f.missing)}, which carry them")
            out.append(f"{who} compiles its CUDA kernels when first called, with nvcc from a CUDA toolkit on the "
                       f"machine that runs it (CUDA_HOME, PATH or /usr/local/cuda), or downloads them; this lock "
                       f"{lacks} prebuilt: add {' and '.join(f.missing)} to [environment].packages (from the index "
                       f"its project names for this torch's CUDA, where the default one lacks it), or have nvcc where "
                       f"it runs — `tritonlock sync` warns on a machine without one ({_row(f)})")
    return out


def judged(sel: Selection, packages: tuple[LockedPackage, ...]) -> tuple[Selection, tuple[LockedPackage, ...]]:
    """The lock with its words on such packages, or the conflict where a named one runs on none of the GPUs."""
    fs = found(packages, sel.target.gpus, sel.backend)
    if not fs:
        return sel, packages
    named = {d.name for d in sel.direct}
    hopeless = next((f for f in fs if f.package in named and f.every_gpu_below), None)
    if hopeless is not None:
        return Selection(target=sel.target, ok=False, conflict=Conflict(
            target=sel.target.name, message=conflict(sel, hopeless))), ()
    return dataclasses.replace(sel, warnings=(*sel.warnings, *warnings(sel, fs))), packages
