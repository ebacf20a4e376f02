"""Conflicts are conflicts: a named package locked at a release that only stands in for it (one that needs a source
build where its newer releases have wheels, names no torch where they require one, or is years older than the newest
release that installs on the target by itself) is no answer — and the checks that find the least fix."""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tritonlock.decide import _pkgwords as words
from tritonlock.decide._pkgcheck import Search
from tritonlock.decide._pkgfacts import public, releases
from tritonlock.decide._pkgscene import Fallback, Fix, Outcome, Scene, locked, vkey
from tritonlock.decide.requirements import with_spec
from tritonlock.errors import ClosureError, TritonlockError
from tritonlock.models import LockedPackage, Selection

# A release this much older than the newest one that fits the target on its own is a fallback, not an answer.
_AGE = timedelta(days=730)


def _host_torches(sc: Scene) -> list[str]:
    """The torch releases the target runs, with the intent's torch = lifted (its own limits only)."""
    host = sc.host() if sc.host is not None else ()
    return [c.torch for c in (host or sc.candidates) if c.torch]


def _fits_alone(sc: Scene, index: str, name: str, version: str, extras: tuple[str, ...],
                torches: list[str]) -> bool:
    """A release that installs on the target on its own: a file for its platform and Python, and a torch
    requirement (if any) that some torch the target runs meets."""
    if not sc.facts.fits(index, name, version, sc.target, sc.python):
        return False
    if sc.facts.lacks_extras(index, name, version, sc.target, sc.python, extras):
        return False  # (not the package asked for: the extra is not in that release)
    treqs = sc.torch_reqs(index, name, version, extras)
    return treqs is None or all(any(t.specifier.contains(v, prereleases=True) for v in torches) for t in treqs)


def _reference(sc: Scene, index: str, name: str, newer: list[Version], extras: tuple[str, ...]) -> Version | None:
    """The newest of `newer` that installs on the target on its own — every one of them looked at, newest first (a
    package whose newest releases all need a torch the target cannot run is held by the target only where none of
    its older releases fits either), their METADATA read eight at a time side by side."""
    torches = _host_torches(sc)
    todo = list(reversed(newer))
    for start in range(0, len(todo), 8):
        chunk = todo[start:start + 8]
        with ThreadPoolExecutor(max_workers=min(8, len(chunk))) as pool:
            fits = list(pool.map(lambda v: _fits_alone(sc, index, name, str(v), extras, torches), chunk))
        hit = next((v for v, ok in zip(chunk, fits) if ok), None)
        if hit is not None:
            return hit
    return None


def read_torch_reqs(sc: Scene, index: str, name: str, versions: list[str], extras: tuple[str, ...] = ()) -> None:
    """The METADATA of each of `versions` not asked for yet, read side by side (16 at a time) before a loop asks for
    them one by one: each is a round trip to the index (sglang's 100 releases, 25 s in a row from empty caches)."""
    todo = [v for v in dict.fromkeys(versions) if not sc.facts.has_metadata(index, name, v)]
    if len(todo) > 1:
        with ThreadPoolExecutor(max_workers=min(16, len(todo))) as pool:
            list(pool.map(lambda v: sc.torch_reqs(index, name, v, extras), todo))


def inferred_torch(sc: Scene, index: str, name: str, version: str,
                   extras: tuple[str, ...] = ()) -> tuple[str, list[Requirement]] | None:
    """A release that names no torch between releases that name theirs (torchaudio 2.11.0, between 2.10.0 and
    2.11.1): the nearest newer release that names torch, and its torch requirements — what the release is taken to
    need (inferred: its METADATA does not say). None where it names torch, is not known, or is not between two."""
    if sc.torch_reqs(index, name, version, extras) != []:
        return None
    here = Version(version)
    every = releases(sc.facts, index, Requirement(name))
    older = [v for v in every if v < here][-16:]
    if not any(sc.torch_reqs(index, name, str(v), extras) for v in reversed(older)):
        return None
    for v in [v for v in every if v > here][:16]:
        treqs = sc.torch_reqs(index, name, str(v), extras)
        if treqs:
            return str(v), treqs
    return None


def fallback(sc: Scene, packages: tuple[LockedPackage, ...], r: Requirement) -> Fallback | None:
    """Whether the release `r` is locked at only stands in for it (see Fallback); None when it is an answer."""
    if r.url is not None:
        return None
    name = canonicalize_name(r.name)
    p = locked(packages, name)
    if p is None:
        return None
    newer = [v for v in releases(sc.facts, p.index, r) if v > vkey(p)]
    if not newer:
        return None
    extras = tuple(sorted(r.extras))
    ref = _reference(sc, p.index, name, newer, extras)
    if ref is None:
        return None  # nothing newer installs on this target on its own: the target holds it, not the others
    mine, theirs = str(vkey(p)), str(ref)
    why: list[str] = []
    wheel = sc.facts.has_wheel
    if p.build == "source" and wheel(p.index, name, theirs, sc.target, sc.python):
        why.append(f"it needs a source build at sync, where {name} {theirs} has a wheel for this target")
    lt = sc.torch_reqs(p.index, name, mine, extras)
    rt = sc.torch_reqs(p.index, name, theirs, extras)
    torch = locked(packages, "torch")
    guess = inferred_torch(sc, p.index, name, mine, extras) if lt == [] and rt else None
    torchless = lt == [] and bool(rt) and not (guess is not None and torch is not None and all(
        q.specifier.contains(public(torch.version), prereleases=True) for q in guess[1]))
    if torchless and rt:  # (not where it lies between releases that name theirs, beside a torch the next allows)
        why.append(f"its requirements name no torch, where {name} {theirs} requires {words.spec_text(rt[0])}")
    t_mine, t_ref = sc.facts.uploaded(p.index, name, mine), sc.facts.uploaded(p.index, name, theirs)
    if t_mine is not None and t_ref is not None and t_ref - t_mine > _AGE:
        why.append(f"it is years older ({t_mine:%Y-%m-%d}; {name} {theirs}: {t_ref:%Y-%m-%d})")
    if not why:
        return None

    def answer(v: Version) -> bool:  # a release without the defects `why` found
        s = str(v)
        if p.build == "source" and not wheel(p.index, name, s, sc.target, sc.python):
            return False
        t = sc.facts.uploaded(p.index, name, s)
        return not (t_ref is not None and t is not None and t_ref - t > _AGE)

    span = [v for v in newer if v <= ref and answer(v)] or [ref]
    if lt == [] and rt:  # the oldest of them that names torch
        span = _from_torch_on(sc, p.index, name, extras, span, lambda treqs: bool(treqs))
    return Fallback(req=r, name=name, locked=p, reference=theirs, since=str(span[0]), why=tuple(why),
                    torchless=torchless and len(why) == 1)


def recent_floor(sc: Scene, index: str, r: Requirement) -> str | None:
    """The oldest release of the named package `r` that can be an answer by fallback's tests: every release below it
    only stands in (it is over two years older than the newest release that installs on the target on its own, needs
    a source build where that one has a wheel, or names no torch where that one requires one — releases name torch
    from some release on, as fallback takes it; a release whose requirements could not be read is no proof and is
    kept). None where that newest release is not known (nothing below any release is then known to stand in)."""
    if r.url is not None:
        return None
    name, extras = canonicalize_name(r.name), tuple(sorted(r.extras))
    every = releases(sc.facts, index, r)
    ref = _reference(sc, index, name, every, extras) if every else None
    if ref is None:
        return None
    t_ref = sc.facts.uploaded(index, name, str(ref))
    span = [v for v in every if v <= ref and (t_ref is None or (t := sc.facts.uploaded(index, name, str(v))) is None
                                               or t_ref - t <= _AGE)]
    if sc.facts.has_wheel(index, name, str(ref), sc.target, sc.python):  # (an sdist-only release stands in)
        span = [v for v in span if sc.facts.has_wheel(index, name, str(v), sc.target, sc.python)]
    if sc.torch_reqs(index, name, str(ref), extras):  # the oldest that names torch, or whose requirements are unknown
        span = _from_torch_on(sc, index, name, extras, span, lambda treqs: treqs != [])
    return str(span[0]) if span else None


def _from_torch_on(sc: Scene, index: str, name: str, extras: tuple[str, ...], span: list[Version],
                   names: Callable[[list[Requirement] | None], bool]) -> list[Version]:
    """`span` (oldest first) from the oldest release whose torch requirements `names` torch on: releases name it from
    some release on, so a binary search."""
    lo, hi = 0, len(span) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if names(sc.torch_reqs(index, name, str(span[mid]), extras)):
            hi = mid
        else:
            lo = mid + 1
    return span[lo:]


def recent_floors(sc: Scene, indexes: dict[str, str], fb: Fallback) -> dict[str, str]:
    """What a fix for `fb` may hold, as the oldest release of each named package: fb's own at fb.since, each other
    one (of `indexes`, by name: the index it comes from) at its recent_floor, where one is known."""
    floors: dict[str, str] = {n: f for r in sc.reqs if (n := canonicalize_name(r.name)) != fb.name and n in indexes
                              and (f := recent_floor(sc, indexes[n], r)) is not None}
    return {**floors, fb.name: fb.since}


def _recent_others(sc: Scene, o: Outcome, fb: Fallback) -> dict[str, str] | None:
    """Each other named package's recent_floor (name → release), where every one of them is locked at or above its
    own in `o`; None where one is not, or its floor is not known (then uv is asked with the others free)."""
    floors: dict[str, str] = {}
    for r in sc.reqs:
        name = canonicalize_name(r.name)
        if name == fb.name:
            continue
        p = locked(o.packages, name)
        floor = recent_floor(sc, p.index, r) if p is not None else None
        if p is None or floor is None or vkey(p) < Version(floor):
            return None
        floors[name] = floor
    return floors


def named_in(uv: str, name: str) -> bool:
    """Whether uv's words name the package `name` (canonical): as a word of its own, not inside another name (vllm
    in vllm-flash-attn, torch in torchvision), however its separators are written (flash_attn, zope.interface)."""
    words = re.sub(r"(?<=[a-z0-9])[._](?=[a-z0-9])", "-", uv.lower())
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", words) is not None


def proof_roots(uv: str) -> str:
    """Of uv's words for a failure, the sentence that ends its proof ("And because you require A and B, we can conclude
    that your requirements are unsatisfiable"): the requirements it names are those the proof needs — a package
    named elsewhere may only be a dependency on the way (transformers, which sglang requires). All of uv's words where
    no such sentence is found."""
    text = uv.lower()
    end = text.find("your requirements are unsatisfiable")
    return text if end < 0 else text[max(text.rfind("because", 0, end), 0):end]


def least_fix(sc: Scene, search: Search, o: Outcome, fb: Fallback) -> Fix:
    """Checks for a fallback where the search over the lines found no fix, each answered by uv: the package at
    `since` or newer with the others in the user's order — a lock there that moves other packages to fallbacks of
    their own is a conflict between recent releases of both (checked with both held recent: where the intent pins no
    torch and each other named package's recent floor is known, that check comes first and alone); failing that, the
    intent's torch lifted (a torch pin is the fix); failing that, the target or the others are the other side (uv's
    words say which)."""
    def attempt(texts: list[str]) -> tuple[tuple[LockedPackage, ...] | None, str]:
        try:
            return search.lock(texts)[1], ""
        except TritonlockError as err:
            return None, err.uv if isinstance(err, ClosureError) and err.uv else str(err)

    def recent(bounds: dict[str, str]) -> list[str]:
        return [with_spec(r, f">={bounds[n]}") if (n := canonicalize_name(r.name)) in bounds else str(r)
                for r in sc.reqs]

    floors = _recent_others(sc, o, fb) if not sc.intent.torch else None
    if floors:  # all held recent first: the same checks' answer without uv's walk down the others' old releases
        checked, uv = attempt(recent({fb.name: fb.since, **floors}))
        if checked is None:
            # the other side: the packages uv's proof rests on (a package that takes no side is not among them), each
            # alone where they are several (held recent, the rest free: uv may walk down the free ones' releases)
            sides = [n for n in floors if named_in(proof_roots(uv), n)] or list(floors)
            for name in (sides if len(sides) > 1 else ()):
                alone, words_alone = attempt(recent({fb.name: fb.since, name: floors[name]}))
                if alone is None:
                    return Fix(uv=words_alone, others=(name,), mutual=((name, floors[name]),))
            return Fix(uv=uv, others=tuple(sides), mutual=tuple((n, floors[n]) for n in sides))
        # (a lock uv finds with all recent is no proof that it loads — lmcache 0.4.4 beside sglang 0.5.10's torch
        # 2.9.1 does not: the checks below weigh it as before)
    packages, uv = attempt(recent({fb.name: fb.since}))
    if packages is not None:
        moved = [r for r in sc.reqs if canonicalize_name(r.name) != fb.name
                 and vkey(locked(packages, r.name)) < vkey(locked(o.packages, r.name))]
        # (a lock that moves them down to answers of their own is the search's fix: packages._fix_by_search)
        theirs = [f for r in moved if (f := fallback(sc, packages, r)) is not None]
        if theirs:
            both = {fb.name: fb.since, **{f.name: f.since for f in theirs}}
            checked, uv = attempt(recent(both))
            if checked is None:
                return Fix(uv=uv, others=tuple(f.name for f in theirs),
                           mutual=tuple((f.name, f.since) for f in theirs))
            return Fix(uv="", change=", ".join(f'"{n}>={v}"' for n, v in both.items()), others=tuple(both)[1:],
                       gives=", ".join(f"{p.name} {public(p.version)}" for n in both
                                       if (p := locked(checked, n)) is not None))
    others = tuple(n for r in sc.reqs if (n := canonicalize_name(r.name)) != fb.name and n in uv)
    if sc.intent.torch and sc.host is not None:
        lifted = [c for c in sc.host() if c.torch not in {x.torch for x in sc.candidates}]
        by_index: dict[str, list[Selection]] = {}
        for c in lifted:
            by_index.setdefault(c.index or "", []).append(c)
        for group in list(by_index.values())[:2]:
            probe = Search(sc, group, search._compile, constraints=o.constraints, no_build=o.no_build, warm=True)
            try:
                candidate, found = probe.lock(recent({fb.name: fb.since}))
            except TritonlockError:
                continue
            mine = locked(found, fb.name)
            minor = ".".join((candidate.torch or "").split(".")[:2])
            return Fix(uv=uv, change=f'torch = "=={minor}.*"', others=others,
                       gives=f"{fb.name} {public(mine.version) if mine else '?'} with torch {candidate.torch}")
    return Fix(uv=uv, others=others)
