"""A lock's packages that compile (or download) their CUDA kernels when first called, in the decision's words: a
named one for which no GPU of the target has kernels is the target's conflict; otherwise a warning for each GPU it
cannot run on and for the prebuilt-kernel packages the lock does not bring (nvcc then compiles them, at first use)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name

from tritonlock.compat.firstuse import Found, found, release, source_of
from tritonlock.decide import _pkgwords as words
from tritonlock.decide._pkgcheck import Search
from tritonlock.decide._pkgfallback import fallback
from tritonlock.decide._pkgscene import locked
from tritonlock.decide.lockplan import lock_plan
from tritonlock.decide.requirements import with_spec
from tritonlock.errors import TritonlockError
from tritonlock.models import Conflict, LockedPackage, Selection

if TYPE_CHECKING:
    from packaging.requirements import Requirement

    from tritonlock.decide._pkgscene import Compile, Outcome, Run


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
                       f"{lacks} prebuilt: add {' and '.join(f.missing)} to [environment].packages where an index "
                       f"the intent names serves {'it' if len(f.missing) == 1 else 'them'} (at {f.package}'s release: "
                       f"the decision holds {'it' if len(f.missing) == 1 else 'them'} there; its project publishes "
                       f"builds per CUDA on an index of its own), or have nvcc where it runs — `tritonlock sync` warns "
                       f"on a machine without one ({_row(f)})")
    return out


def matched(run: Run, best: Outcome, packages: tuple[LockedPackage, ...],
            compile: Compile) -> tuple[tuple[LockedPackage, ...], str | None, dict[str, str]]:
    """Where the lock brings a package of a same-release row beside one of its prebuilt-kernel packages at another
    release (flashinfer-python 0.7.2.post1 beside a named flashinfer-cubin's newest, 0.6.13: flashinfer refuses to
    import), uv is asked once more with each such prebuilt package at the package's release, the named packages and
    torch where the decision put them: its lock. Where uv finds none, the conflict in words, naming both, with the
    changes: the package at the prebuilt one's release (checked: uv locks it, what requires it free), and, for a named
    prebuilt package, leaving it out. The third: why each prebuilt package held so is where it is (see `held`)."""
    sel, sc = best.candidate, run.sc
    named: set[str] = {canonicalize_name(r.name) for r in sc.reqs}
    # (not a named package with kernels for none of the target's GPUs: that conflict comes first — `judged`)
    fs = [f for f in found(packages, sel.target.gpus, sel.backend) if f.mismatched
          and not (f.package in named and f.every_gpu_below)]
    if not fs:
        return packages, None, {}

    def ask(held: dict[str, str]) -> tuple[LockedPackage, ...]:
        reqs = [with_spec(r, f"=={held[n]}") if (n := canonicalize_name(r.name)) in held and r.url is None
                else str(r) if r.url is not None or (q := locked(packages, r.name)) is None
                else with_spec(r, f"=={release(q.version) or q.version}") for r in sc.reqs]
        return compile(lock_plan(dataclasses.replace(sel, packages=tuple(reqs)), sc.matrix, f"=={sel.torch}"),
                       sc.default_index, no_build=best.no_build, package_indexes=best.package_indexes,
                       constraints=(*best.constraints, *(f"{n}=={v}" for n, v in held.items())))

    try:  # (the named packages and torch held where the decision put them)
        return ask({n: str(release(f.version)) for f in fs for n, _ in f.mismatched}), None, {
            n: f"{f.package} {f.version} refuses to import beside a {n} of another release ({_row(f)}): {n} is "
               f"locked at its release" for f in fs for n, _ in f.mismatched}
    except TritonlockError as err:
        uv = words.uv_reason(getattr(err, "uv", None) or str(err), limit=400)
    f = fs[0]
    name, version = f.mismatched[0]
    at = str(release(version))
    fixes = []
    # (the package at the prebuilt one's release, the packages that require it free to move, torch among the lines
    # of this index: uv's answer, each named package's release said, and where it went down from)
    pins = {f.package: at, name: at}
    reqs = [with_spec(r, f"=={pins[n]}") if (n := canonicalize_name(r.name)) in pins and r.url is None else str(r)
            for r in sc.reqs] + [f"{n}=={v}" for n, v in pins.items() if n not in named]
    try:
        torch, other = Search(sc, [c for c in run.lines if c.index == sel.index] or [sel], compile,
                              constraints=best.constraints, no_build=best.no_build).lock(reqs)
    except TritonlockError:
        pass
    else:
        def moved(r: Requirement) -> str:
            q, was = locked(other, r.name), locked(packages, r.name)
            down = f" (from {was.version})" if q and was and release(q.version) != release(was.version) else ""
            return f"{q.name} {q.version}{down}" if q else ""
        with_ = ", ".join(m for r in sc.reqs if (m := moved(r)))
        if not any(fallback(sc, other, r) is not None for r in sc.reqs):  # (no named package at a stand-in release)
            fixes.append(f'"{f.package}=={at}" in [environment].packages (checked: uv locks {with_} with it, torch '
                         f"{torch.torch})")
    if name in named:
        fixes.append(f"leave {name} out of [environment].packages ({f.package} then builds its kernels when first "
                     "called, with nvcc)")
    return packages, (
        f"target {sel.target.name!r}: {name} {version} cannot be locked beside {f.package} {f.version}: {f.package} "
        f"refuses to import beside a {name} of another release ({_row(f)}), and uv finds no {name} "
        f"{release(f.version)} with the other packages here: {uv}"
        + (f"\n  fix: {'; or '.join(fixes)}" if fixes else "")), {}


def held(sel: Selection, why: dict[str, str]) -> Selection:
    """The named prebuilt-kernel packages `matched` held at their package's release: why, in place of the words
    the search gave for a named package below its newest (it never asked uv for that reason)."""
    if not why:
        return sel
    direct, warned = list(sel.direct), list(sel.warnings)
    for i, d in enumerate(direct):
        if d.name in why and d.held_by is not None:
            head = f"{d.name} {d.version} is locked, not its newest release {d.newest}: "
            warned = [head + why[d.name] if w == head + d.held_by else w for w in warned]
            direct[i] = dataclasses.replace(d, held_by=why[d.name])
    return dataclasses.replace(sel, direct=tuple(direct), warnings=tuple(warned))


def conflicted(sel: Selection, message: str) -> Selection:
    return Selection(target=sel.target, ok=False, conflict=Conflict(target=sel.target.name, message=message))


def judged(sel: Selection, packages: tuple[LockedPackage, ...]) -> tuple[Selection, tuple[LockedPackage, ...]]:
    """The lock with its words on such packages, or the conflict where a named one runs on none of the GPUs."""
    fs = found(packages, sel.target.gpus, sel.backend)
    if not fs:
        return sel, packages
    named = {d.name for d in sel.direct}
    hopeless = next((f for f in fs if f.package in named and f.every_gpu_below), None)
    if hopeless is not None:
        return conflicted(sel, conflict(sel, hopeless)), ()
    return dataclasses.replace(sel, warnings=(*sel.warnings, *warnings(sel, fs))), packages
