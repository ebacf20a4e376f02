"""The native-code rule on a target's closure (tritonlock.nativerule's predicates over the binary facts the lock
stage read, tritonlock.lock.native): a closure whose extension modules cannot load on the target is no lock; and
when no choice fixes it, the conflict in words, with the least change."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonlock.models import LockedPackage, Selection, TargetSpec
from tritonlock.nativerule import Item, Problem, Setting, check, is_provider

if TYPE_CHECKING:
    from tritonlock.compat.matrix import Matrix
    from tritonlock.models import NativeFacts

__all__ = ["Problem", "is_provider", "problems", "conflict", "target_wheel", "unknowns", "wheels_to_read"]


def target_wheel(p: LockedPackage, target: TargetSpec, python: str) -> list[str]:
    """The sha256s of the package's wheels that install on the target (a lock may list several platforms'), the one
    an installer takes first (tag priority); every wheel where none fits."""
    from tritonlock.decide._pkgfacts import install_order

    by_name = {w.name: w.sha256 for w in p.wheels}
    return [by_name[n] for n in install_order(by_name, target, python)] or [w.sha256 for w in p.wheels]


# (url, size, sha256, file name, only what it brings): a wheel whose binary facts the lock stage reads
Wanted = tuple[str, "int | None", str, str, bool]


def wheels_to_read(sel: Selection, packages: tuple[LockedPackage, ...], python: str) -> list[Wanted]:
    """The wheels whose binary facts the rule needs: the platform wheel the target installs of each package (the
    first in tag priority), whole for the packages whose native code is checked, only what it brings for the
    providers (torch, Triton, NVIDIA's libraries). The largest first: they take longest to read."""
    from tritonlock.lock.native import may_hold_native_code

    out = []
    for p in packages:
        first = target_wheel(p, sel.target, python)[:1]
        out += [(w.url, w.size, w.sha256, w.name, is_provider(p.name)) for w in p.wheels
                if w.sha256 in first and may_hold_native_code(w.name)]
    return sorted(out, key=lambda w: (w[4], -(w[1] or 0)))


def problems(sel: Selection, packages: tuple[LockedPackage, ...], facts: dict[str, NativeFacts], matrix: Matrix,
             *, policy: str = "compatible") -> list[Problem]:
    """What in the closure's native code cannot load or run on `sel`'s target (empty: the closure is a lock)."""
    target = sel.target
    python = sel.python or "3.12"
    provided: set[str] = set()
    items = []
    for p in packages:
        # the wheel that installs (the others on the lock are not on the target: what they bring is not there)
        shas = [sha for sha in target_wheel(p, target, python) if sha in facts][:1]
        for sha in shas:
            provided.update(facts[sha].provides)
            items.append(Item(name=p.name, version=p.version, facts=facts[sha]))
    floors = {m: f for m in (11, 12, 13, 14) if (f := matrix.driver_floor(f"{m}.0", target.os, policy))}
    at = Setting(torch=sel.torch, backend=sel.backend or "", driver=target.driver, gpus=target.gpus, floors=floors)
    return check(items, provided, at)


def unknowns(sel: Selection, packages: tuple[LockedPackage, ...], facts: dict[str, NativeFacts]) -> list[str]:
    """Warnings for native code the rule cannot judge: a build of torch's C++ API whose wheel names no torch."""
    from tritonlock.nativerule import unknown_torch

    items = [Item(name=p.name, version=p.version, facts=facts[shas[0]]) for p in packages
             if (shas := [s for s in target_wheel(p, sel.target, sel.python or "3.12") if s in facts])]
    return [f"{u}: whether it loads with torch {sel.torch} is not known from its files (inferred from nothing) — "
            "`tritonlock verify` imports it on the machine and says" for u in unknown_torch(items, sel.torch)]


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
