"""`resolve --upgrade-package NAME`: lock again with every other pin of the existing lock kept — uv's way (`uv lock
--upgrade-package`): the lock's versions are uv's preferences, NAME is free; the packages you named and the torch
decision are held where the lock had them (unless NAME is one of them, or in torch's family), so only NAME and what it
forces move. What moved, and why, is said afterwards (tritonlock.lock.moved)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from tritonlock.errors import ClosureError, TritonlockError, UsageError
from tritonlock.models import Intent, Lock, LockedPackage, LockedTarget, Selection

if TYPE_CHECKING:
    from tritonlock.compat.matrix import Matrix

KEPT = "kept as the lock had it"


def old_lock(lock_path: Path) -> Lock:
    """The lock whose pins are kept: it must be there and readable (its pins are what --upgrade-package keeps)."""
    from tritonlock.lock.lockfile import read_lock

    if not lock_path.is_file():
        raise UsageError(f"--upgrade-package keeps the other pins of {lock_path}, and there is none — run `tritonlock "
                         "resolve` first")
    try:
        return read_lock(lock_path)
    except TritonlockError as err:
        raise UsageError(f"--upgrade-package keeps the other pins of {lock_path}, which cannot be read: "
                         f"{str(err).splitlines()[0]} — run `tritonlock resolve --upgrade` to lock it afresh") from None


def names(asked: tuple[str, ...], lock: Lock, intent: Intent, lock_path: Path) -> tuple[str, ...]:
    """The packages to upgrade, canonical: each must be one the lock pins or the intent names (bad input, exit 2)."""
    from tritonlock._term import printable

    out: list[str] = []
    known = {p.name for t in lock.targets for p in t.packages} | {"torch"}
    for r in intent.packages:
        try:
            known.add(canonicalize_name(Requirement(r).name))
        except InvalidRequirement:
            continue
    bad = []
    for a in asked:
        n = canonicalize_name(a.strip())
        if not n or n not in known:
            bad.append(printable(a, 100))
        elif n not in out:
            out.append(n)
    if bad:
        raise UsageError(f"--upgrade-package {', '.join(bad)}: {lock_path} pins no such package and "
                         f"{Path(intent.path).name} names none — name a package `tritonlock show` lists")
    return tuple(out)


def _pin(req: str, version: str) -> str:
    """A requirement held at one version, its extras and markers as they were ("vllm[audio]==0.19.0; …")."""
    try:
        r = Requirement(req)
    except InvalidRequirement:
        return req
    if r.url:
        return req  # a direct reference is one file already
    try:
        r.specifier = SpecifierSet(f"=={version}")
    except InvalidSpecifier:
        return req
    return str(r)


def _contains(spec: str, version: str) -> bool:
    if not spec or spec.strip() in ("*", ""):
        return True
    try:
        return SpecifierSet(spec).contains(version, prereleases=True)
    except InvalidSpecifier:
        return False


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class _Hold:
    torch: str | None
    backend: str | None
    pins: tuple[tuple[str, str], ...]  # (the intent's requirement, the same held at the locked version)


def _hold(s: Selection, old: LockedTarget | None, asked: tuple[str, ...], intent: Intent, family: set[str]) -> _Hold:
    if old is None or not old.selection.ok or old.selection.target != s.target:
        return _Hold(torch=None, backend=None, pins=())  # a new or changed machine: decided afresh
    locked = {p.name: p.version for p in old.packages}
    pins = []
    for r in intent.packages:
        try:
            name = canonicalize_name(Requirement(r).name)
        except InvalidRequirement:
            continue
        if name not in asked and name in locked:
            pins.append((r, _pin(r, locked[name])))
    sel = old.selection
    hold = not (set(asked) & family) and sel.torch and _contains(intent.torch, sel.torch)
    return _Hold(torch=sel.torch if hold else None, backend=sel.backend if hold else None, pins=tuple(pins))


def preferences(lock: Lock, asked: tuple[str, ...], family: set[str]) -> dict[str, dict[str, str]]:
    """Per target, the versions uv is to prefer: every locked package but those asked for and torch's family (the
    decision's own)."""
    return {t.name: {p.name: p.version for p in t.packages if p.name not in asked and p.name not in family}
            for t in lock.targets if t.selection.ok}


def _levels(h: _Hold) -> list[_Hold]:
    """What is held, from most to least: torch and the named packages; the named packages; nothing (a plain decision,
    the lock's versions still uv's preferences). The next is tried where one leaves no lock, or leaves a package
    asked for below its newest release (it forces what is held to move)."""
    out = [h]
    if h.torch:
        out.append(dataclasses.replace(h, torch=None, backend=None))
    if h.pins:
        out.append(_Hold(torch=None, backend=None, pins=()))
    return out


def _newer(a: list[tuple[Selection, tuple[LockedPackage, ...]]], b: list[tuple[Selection, tuple[LockedPackage, ...]]],
           asked: tuple[str, ...]) -> bool:
    """Whether `b` gives some package asked for a newer release than `a` (and none an older one)."""
    from packaging.version import InvalidVersion, Version

    def v(s: str | None) -> Version:
        try:
            return Version(s or "0")
        except InvalidVersion:
            return Version("0")

    better = False
    for (sa, pa), (sb, pb) in zip(a, b):
        va, vb = {p.name: p.version for p in pa}, {p.name: p.version for p in pb}
        for n in asked:
            if n in va and n in vb:
                if v(vb[n]) < v(va[n]):
                    return False
                better = better or v(vb[n]) > v(va[n])
    return better


def _below_newest(results: list[tuple[Selection, tuple[LockedPackage, ...]]], asked: tuple[str, ...]) -> bool:
    from packaging.version import InvalidVersion, Version

    for sel, _ in results:
        for d in sel.direct:
            if d.name in asked and d.version and d.newest:
                try:
                    if Version(d.version) < Version(d.newest):
                        return True
                except InvalidVersion:
                    continue
    return False


def lock_keeping(old: Lock, asked: tuple[str, ...], intent: Intent, matrix: Matrix, fitting: tuple[Selection, ...],
                 *, complete: Callable[[tuple[Selection, ...], Intent], tuple[Selection, ...]],
                 lock_targets: Callable[..., list[tuple[Selection, tuple[LockedPackage, ...]]]],
                 python: str, lock_path: Path, default_index: str,
                 **kw: Any) -> list[tuple[Selection, tuple[LockedPackage, ...]]]:
    """Lock the fitting selections keeping the old lock's pins: targets are grouped by what is held for them (torch
    and its build, the named packages' versions) and each group is decided with those held — as `tritonlock check`
    decides a lock's torch again — then each decision is said in the words of the intent as the user wrote it.
    Where holding leaves no lock, or keeps a package asked for below its newest release, less is held (_levels):
    what the asked-for package forces moves, and only that."""
    from tritonlock.decide.resolve import resolve
    from tritonlock.lock.closure import preferring

    family = set(matrix.torch_family) | {s.triton_package for s in fitting if s.triton_package}
    by_name = {t.name: t for t in old.targets}
    holds = [_hold(s, by_name.get(s.target.name), asked, intent, family) for s in fitting]
    groups: dict[_Hold, list[int]] = {}
    for i, h in enumerate(holds):
        groups.setdefault(h, []).append(i)
    done: dict[int, tuple[Selection, tuple[LockedPackage, ...]]] = {}

    def attempt(h: _Hold, members: list[int]) -> list[tuple[Selection, tuple[LockedPackage, ...]]] | None:
        targets = tuple(fitting[i].target for i in members)
        if not h.torch and not h.pins:
            return lock_targets(intent, matrix, tuple(fitting[i] for i in members), default_index, **kw)
        pinned = dict(h.pins)
        held = dataclasses.replace(intent, packages=tuple(pinned.get(r, r) for r in intent.packages))
        if h.torch:
            held = dataclasses.replace(held, torch=f"=={h.torch}")
            if intent.cuda == "auto" and h.backend and (h.backend == "cpu" or h.backend.startswith("cu")):
                held = dataclasses.replace(held, cuda=h.backend)  # the build the lock had, not the newest
        sels = complete(resolve(held, matrix, targets, python), held)
        if not all(s.ok for s in sels):
            return None
        results = lock_targets(held, matrix, sels, default_index, **kw)
        if not all(s.ok for s, _ in results):
            return None
        return [(_in_user_words(sel, by_name.get(fitting[i].target.name), h, asked, lock_path, intent), pkgs)
                for i, (sel, pkgs) in zip(members, results)]

    with preferring(preferences(old, asked, family)):
        for h, members in groups.items():
            levels = _levels(h)
            best = None
            for n, level in enumerate(levels):
                try:
                    got = attempt(level, members)
                except ClosureError:
                    if n == len(levels) - 1:
                        raise  # (holding nothing, uv's own words stand, as for `resolve`)
                    continue  # uv finds nothing with this much held: hold less
                if got is None:
                    continue
                if best is None:
                    best = got
                elif _newer(best, got, asked):
                    best = got
                if not _below_newest(best, asked) or n == len(levels) - 1:
                    break
            assert best is not None  # (the last level holds nothing: the plain decision answers, conflicts and all)
            for i, pair in zip(members, best):
                done[i] = pair
    return [done[i] for i in range(len(fitting))]


def _in_user_words(sel: Selection, old: LockedTarget | None, h: _Hold, asked: tuple[str, ...], lock_path: Path,
                   intent: Intent) -> Selection:
    """A held decision said as the intent says it: the requirements as written, torch's line naming the lock that
    held it, the kept packages named as kept."""
    if not sel.ok:
        return sel
    back = {p: r for r, p in h.pins}
    packages = tuple(back.get(p, p) for p in sel.packages)
    why = f"--upgrade-package {', '.join(asked)} moves only {'it' if len(asked) == 1 else 'them'} and what " \
          f"{'it forces' if len(asked) == 1 else 'they force'}"
    reasons: list[str] = []
    kept_names = {canonicalize_name(Requirement(r).name) for r, _ in h.pins}
    for line in sel.reasons:
        if h.torch and line.startswith(f"torch {h.torch}: the newest release matching torch = '=={h.torch}'"):
            line = f"torch {h.torch}: {KEPT} ({lock_path.name}; {why})"
        elif (h.backend and intent.cuda == "auto" and line == f"{h.backend}: cuda = {h.backend!r} asked for"
              and old is not None):
            line = next((r for r in old.selection.reasons if r.startswith(f"{h.backend}:")),
                        f"{h.backend}: {KEPT}")
        elif line.startswith("packages at their newest release: "):
            items = line.removeprefix("packages at their newest release: ").split(", ")
            kept = [x for x in items if canonicalize_name(x.split(" ")[0]) in kept_names]
            moved = [x for x in items if x not in kept]
            if moved:
                reasons.append("packages at their newest release: " + ", ".join(moved))
            if kept:
                line = f"packages {KEPT} ({why}): " + ", ".join(kept)
            else:
                continue
        reasons.append(line)
    old_direct = {d.name: d for d in (old.selection.direct if old is not None else ())}
    direct = []
    for d in sel.direct:
        requirement = back.get(d.requirement, d.requirement)
        if d.name in kept_names and d.name in old_direct and old_direct[d.name].version == d.version:
            o = old_direct[d.name]
            direct.append(dataclasses.replace(o, requirement=requirement))
        else:
            direct.append(dataclasses.replace(d, requirement=requirement))
    return dataclasses.replace(sel, packages=packages, reasons=tuple(reasons), direct=tuple(direct))
