"""The native-code rule on a target's closure (tritonlock.native.rule's predicates over the binary facts the lock
stage read, tritonlock.native.read): a closure whose extension modules cannot load on the target is no lock; and
when no choice fixes it, the conflict in words, with the least change."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonlock.models import LockedPackage, Selection, TargetSpec
from tritonlock.native.rule import Item, Problem, Setting, check, is_provider

if TYPE_CHECKING:
    from tritonlock.compat.matrix import Matrix
    from tritonlock.models import NativeFacts

__all__ = ["Problem", "checked", "is_provider", "problems", "conflict", "release_problems", "target_wheel", "unknowns",
           "wheels_to_read"]


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
    from tritonlock.native.read import may_hold_native_code

    out = []
    for p in packages:
        first = target_wheel(p, sel.target, python)[:1]
        out += [(w.url, w.size, w.sha256, w.name, is_provider(p.name)) for w in p.wheels
                if w.sha256 in first and may_hold_native_code(w.name)]
    return sorted(out, key=lambda w: (w[4], -(w[1] or 0)))


def problems(sel: Selection, packages: tuple[LockedPackage, ...], facts: dict[str, NativeFacts], matrix: Matrix,
             *, policy: str = "compatible", optional: tuple[str, ...] = ()) -> list[Problem]:
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
    return check(items, provided, _setting(sel, matrix, policy, optional))


def release_problems(sel: Selection, item: Item, brought: set[str], *, matrix: Matrix, policy: str = "compatible",
                     optional: tuple[str, ...] = ()) -> list[Problem]:
    """What in one release's own native code cannot load beside `sel`'s torch build on its target whatever else is
    locked beside it (`brought`: the libraries taken as there): what the packages decision reads before uv is asked,
    to pass a release over for the torch lines it cannot load beside."""
    return check([item], brought, _setting(sel, matrix, policy, optional))


def _setting(sel: Selection, matrix: Matrix, policy: str, optional: tuple[str, ...] = ()) -> Setting:
    """`optional`: the intent's [environment].optional-gpu-code, beside compat/packages.toml's."""
    from tritonlock.compat.pkgbuilds import optional_gpu_code

    target = sel.target
    floors = {m: f for m in (11, 12, 13, 14) if (f := matrix.driver_floor(f"{m}.0", target.os, policy))}
    return Setting(torch=sel.torch, backend=sel.backend or "", driver=target.driver, gpus=target.gpus, floors=floors,
                   optional_gpu=frozenset(optional_gpu_code()) | frozenset(optional))


def checked(packages: tuple[LockedPackage, ...], facts: dict[str, NativeFacts]) -> str | None:
    """What the rule checked, in one reason line (None when nothing in the closure carries native code)."""
    with_code = [p for p in packages if any(w.sha256 in facts and facts[w.sha256].native for w in p.wheels)]
    if not with_code:
        return None
    n = sum(max(len(facts[w.sha256].members) for w in p.wheels if w.sha256 in facts) for p in with_code)
    names = ", ".join(p.name for p in with_code[:6]) + (f" and {len(with_code) - 6} more" if len(with_code) > 6 else "")
    return (f"native code checked: {n} shared object{'' if n == 1 else 's'} of {len(with_code)} "
            f"package{'' if len(with_code) == 1 else 's'} ({names}) find the libraries, torch build and GPU code "
            "they need on this target (read from the wheels)")


def unknowns(sel: Selection, packages: tuple[LockedPackage, ...], facts: dict[str, NativeFacts], matrix: Matrix,
             *, policy: str = "compatible", optional: tuple[str, ...] = ()) -> list[str]:
    """Warnings for native code the rule does not refuse and cannot vouch for: a build of torch's C++ API whose wheel
    names no torch; a package that calls its kernels only on the GPUs they are for, with none for this target's."""
    from tritonlock.compat.pkgbuilds import optional_gpu_code as rows
    from tritonlock.native.rule import optional_gpu_code, unknown_torch

    items = [Item(name=p.name, version=p.version, facts=facts[shas[0]]) for p in packages
             if (shas := [s for s in target_wheel(p, sel.target, sel.python or "3.12") if s in facts])]
    return [f"{u}: whether it loads with torch {sel.torch} is not known from its files (inferred from nothing) — "
            "`tritonlock verify` imports it on the machine and says"
            for u in unknown_torch(items, sel.torch, sel.backend)] + optional_gpu_code(
        items, _setting(sel, matrix, policy, optional), rows())


def conflict(sel: Selection, found: list[Problem], rejected: list[str], *, left: str | None = None) -> str:
    """No choice fixes the closure's native code: the package, what it needs, and the least change. `rejected`: the
    releases tried and passed over; `left`: why the decision with those releases passed over locks nothing. A
    package the user named leads where its problem is of the same kind as a dependency's."""
    import re

    from tritonlock.native.rule import HOPELESS

    named = {d.name for d in sel.direct}
    # what no other closure changes first, then the packages the user named (a dependency's problem is theirs too)
    found = sorted(found, key=lambda p: (p.kind not in HOPELESS,
                                         re.sub(r"[-_.]+", "-", p.package).lower() not in named))
    first = found[0]
    lines = [f"target {sel.target.name!r}: {first.package}'s native code cannot load on this target: {first.line}"]
    lines += [f"  also: {p.line}" for p in found[1:3]]
    if rejected:
        lines.append("  tried and rejected: " + _releases(rejected))
    if left:
        lines.append("  with those passed over: " + (left.split(": ", 1)[-1] if left.startswith("target ") else left))
    lines.append("  fix: " + _least_change(sel, first))
    return "\n".join(lines)


def _releases(rejected: list[str]) -> str:
    """'torchao 0.18.0, 0.17.0, … 0.5.0 (14 releases); xformers 0.0.35': the releases per package, in order."""
    by: dict[str, list[str]] = {}
    for r in rejected:
        name, _, version = r.partition(" ")
        by.setdefault(name, []).append(version)
    out = []
    for name, vs in by.items():
        out.append(f"{name} {', '.join(vs)}" if len(vs) <= 4 else
                   f"{name} {', '.join(vs[:2])}, … {vs[-1]} ({len(vs)} releases)")
    return "; ".join(out)


def _least_change(sel: Selection, p: Problem) -> str:
    import re

    named = [d.name for d in sel.direct]
    mine = re.sub(r"[-_.]+", "-", p.package).lower() in named or not named
    # a dependency's problem: the packages named that bring it are what to lock elsewhere
    who, it = (p.package, "it") if mine else (
        f"{p.package}, which {named[0] if len(named) == 1 else 'one of ' + ', '.join(named)} requires,",
        named[0] if len(named) == 1 else "them")
    other = {"torch's ROCm build": "an AMD GPU and torch's ROCm build", "torch's XPU build":
             "an Intel GPU and torch's XPU build"}.get(p.needs) if p.kind == "torch-build" else None
    if other:
        return (f"{who} needs {other}: lock {it} for those machines only (a target or environment of their own), "
                "not for this one")
    if (p.kind in ("driver", "torch-build") and sel.target.driver is None) or (
            p.kind in ("cuda-library", "cuda-driver") and (sel.backend or "").startswith(("rocm", "xpu"))):
        return (f"{who} needs an NVIDIA GPU: lock {it} for the GPU machines only (a target or environment of "
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
    return (f"a build of {p.package} with code for {p.needs} (none of the releases tried has it), or a target "
            f"without {p.package} for these GPUs")
