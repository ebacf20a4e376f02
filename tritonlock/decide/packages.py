"""The user's packages in the decision: uv's answer with the packages in the order the user wrote them, then checked —
each named package below its newest release is asked for again, a better lock is taken, a held-back line quotes the
check that failed — and an ancient release that pins nothing is a conflict, never the answer."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import TYPE_CHECKING

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from tritonlock.decide import _pkgwords as words
from tritonlock.decide import cudalibs
from tritonlock.decide._pkgfacts import Facts, newest, parse_version, public, releases
from tritonlock.decide.lockplan import lock_plan
from tritonlock.decide.requirements import torch_spec, user_requirements, with_spec
from tritonlock.errors import ClosureError, ResolveError, TritonlockError
from tritonlock.models import Conflict, DirectPackage, Intent, LockedPackage, Selection, TargetSpec

if TYPE_CHECKING:
    from tritonlock.compat.matrix import Matrix

# compile(plan, default_index, *, offline, constraints, no_build) -> the closure of a LockPlan (decide.lockplan); the
# lock stage's compile_target, handed in by tritonlock.project (the decision does not call into the lock stage itself)
Compile = Callable[..., tuple[LockedPackage, ...]]

# How many times a compile may land on a torch the matrix does not know (a release newer than the matrix, or a
# patch it lacks) before the decision gives up on that index: each one is excluded and uv asked again.
_UNKNOWN_TORCH_RETRIES = 3
# How many times one answer may be locked again after passing over what the target cannot have (a CUDA library its
# driver cannot load, a source build that needs nvcc where none exists).
_MAX_PASSES = 6
# A release this much older than the newest one that fits the target on its own is a fallback, not an answer.
_AGE = timedelta(days=730)
_ZERO = Version("0")


def _locked(packages: tuple[LockedPackage, ...], name: str) -> LockedPackage | None:
    want = canonicalize_name(name)
    return next((p for p in packages if p.name == want), None)


def _v(p: LockedPackage | None) -> Version:
    return (parse_version(public(p.version)) or _ZERO) if p is not None else _ZERO


# --- one target, as every step of its decision sees it --------------------------------------------------------------

@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Scene:
    """What every step of one target's decision reads: the target's newest fitting selection (`sel`), the fitting
    releases, the intent, the matrix, the index facts and the packages the user named (in the user's order)."""

    sel: Selection
    candidates: tuple[Selection, ...]
    intent: Intent
    matrix: Matrix
    facts: Facts
    reqs: list[Requirement]
    python: str
    default_python: str
    default_index: str
    # the releases the target could run with the intent's torch = lifted (for "a torch pin would fix it")
    host: Callable[[], tuple[Selection, ...]] | None = None
    # what an earlier round of the decision passed over (the native-code rule): uv constraints, and why in words
    constraints: tuple[str, ...] = ()
    passed: tuple[str, ...] = ()
    warm: bool = False  # uv's cache already holds this target's pages (a later round)
    package_indexes: tuple[tuple[str, str, str], ...] = ()  # (name, index, format): a package's own build
    # hears of every closure a compile gives (the orchestrator starts reading its wheels' binary facts early)
    seen: Callable[[Selection, tuple[LockedPackage, ...]], None] | None = None

    @property
    def target(self) -> TargetSpec:
        return self.sel.target

    def index_for(self, name: str) -> str:
        """The index a package comes from: its own build's index where the decision took one, the torch index for
        the torch family, else the default index."""
        own = {n: u for n, u, _ in self.package_indexes}.get(canonicalize_name(name))
        if own:
            return own
        bound = self.sel.index and self.matrix.bound_to_torch_index(canonicalize_name(name), self.sel.backend)
        return self.sel.index if bound and self.sel.index else self.default_index

    def requires(self, index: str, name: str, version: str, extras: tuple[str, ...] = ()) -> list[Requirement] | None:
        return self.facts.requires(index, name, version, self.target, self.python, extras)

    def torch_reqs(self, index: str, name: str, version: str, extras: tuple[str, ...] = ()) -> list[Requirement] | None:
        reqs = self.requires(index, name, version, extras)
        return None if reqs is None else [r for r in reqs if canonicalize_name(r.name) == "torch"]

    def newest(self, req: Requirement) -> str | None:
        return newest(self.facts, self.index_for(req.name), req) if req.url is None else None

    def others(self, packages: tuple[LockedPackage, ...],
               name: str) -> Iterator[tuple[str, LockedPackage, list[Requirement]]]:
        """The other packages the user named, as locked, with what they require on the target."""
        for other in self.reqs:
            oname = canonicalize_name(other.name)
            olocked = _locked(packages, oname)
            if oname != name and olocked is not None:
                yield oname, olocked, self.requires(olocked.index, oname, olocked.version) or []


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Check:
    """A check that failed: what was asked of uv, and uv's own words."""

    asked: str  # "sglang==0.5.23"
    held: tuple[str, ...]  # the packages named before it, kept at least where they were ("vllm>=0.33.0")
    uv: str


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    candidate: Selection
    packages: tuple[LockedPackage, ...]
    checks: tuple[tuple[str, Check], ...] = ()  # per named package below its newest: the check that failed
    passed_over: tuple[str, ...] = ()  # what the target cannot have, in words (CUDA builds, impossible builds)
    constraints: tuple[str, ...] = ()
    no_build: tuple[str, ...] = ()

    def check(self, name: str) -> Check | None:
        return next((c for n, c in self.checks if n == name), None)


class Impossible(ResolveError):
    """What the target cannot have is all uv could lock: a conflict of the platform or the driver."""


class Search:
    """One torch index's fitting releases: uv locks the packages in the user's order, then each named package below
    its newest is checked (asked for at its newest, the packages named before it kept at least where they are)."""

    def __init__(self, sc: Scene, group: list[Selection], compile: Compile) -> None:
        self.sc, self.group, self._compile = sc, group, compile
        self.versions = [c.torch for c in group if c.torch]
        self.known = [r.version for r in sc.matrix.torch]
        self.constraints: list[str] = list(sc.constraints)
        self.no_build: list[str] = list(sc.intent.no_build)
        self.passed: list[str] = list(sc.passed)
        self.warm = sc.warm  # uv's cache holds what the first compile read: later ones answer from it first

    def lock(self, reqs: list[str]) -> tuple[Selection, tuple[LockedPackage, ...]]:
        """uv's answer for these requirements with this index's fitting torch releases; what the target cannot have
        (CUDA builds its driver cannot load, source builds that need nvcc where none exists) is passed over and the
        answer locked again. ClosureError (uv's words in `.uv`) when uv finds none."""
        extra_known = list(self.known)
        unknown = passes = 0
        while True:
            s = dataclasses.replace(self.group[0], packages=tuple(reqs))
            try:
                packages = self._compile(lock_plan(s, self.sc.matrix, torch_spec(self.versions, extra_known)),
                                         self.sc.default_index, offline=self.warm,
                                         constraints=tuple(self.constraints), no_build=tuple(self.no_build),
                                         build_facts=False,  # an answer the checks may replace: read once kept
                                         package_indexes=self.sc.package_indexes)
            except ClosureError as err:
                if self.passed and passes:  # the answer without what the target cannot have: there is none
                    raise Impossible(words.impossible(self.sc, self.passed, err)) from None
                raise
            finally:
                self.warm = True
            torch = _locked(packages, "torch")
            if torch is None:
                raise ClosureError(f"uv locked no torch for target {self.sc.target.name!r}")
            match = next((c for c in self.group if c.torch == public(torch.version)), None)
            if match is None:
                # a torch the matrix does not know (newer than it, or a patch it lacks): never locked; ask again
                unknown += 1
                if unknown >= _UNKNOWN_TORCH_RETRIES:
                    raise ClosureError(f"uv chose torch {public(torch.version)}, which matrix "
                                       f"{self.sc.matrix.version} does not know")
                extra_known.append(public(torch.version))
                continue
            if self.sc.seen is not None:
                self.sc.seen(match, packages)
            if not self._pass_over(packages):
                return match, packages
            passes += 1
            if passes > _MAX_PASSES:
                raise ClosureError(f"target {self.sc.target.name!r}: passing over what the target cannot have did "
                                   f"not settle after {_MAX_PASSES} passes ({'; '.join(self.passed)})")

    def _unasked_prerelease(self, p: LockedPackage) -> bool:
        """A pre-release of a package the user named without asking for one, or of one the decision constrained, on
        an index that has final releases of it."""
        if not _v(p).is_prerelease or not p.index:
            return False
        name = canonicalize_name(p.name)
        asked = [r for r in self.sc.reqs if canonicalize_name(r.name) == name]
        if any(r.specifier.prereleases for r in asked):
            return False
        if not asked and not any(canonicalize_name(c.split("!=", 1)[0]) == name for c in self.constraints if "!=" in c):
            return False
        return self.sc.facts.prereleases(p.index, p.name) is not None

    def _pass_over(self, packages: tuple[LockedPackage, ...]) -> bool:
        """Constraints for what in `packages` the target cannot have; True when there was any."""
        from tritonlock.lock.builds import NVCC  # the lock's own word for the CUDA compiler (a constant, no code)

        from tritonlock.lock.builds import facts_for, needs_of

        target, new = self.sc.target, False
        for p in packages:
            if self._unasked_prerelease(p):
                # the releases passed over (or a "newer than" check) left uv only pre-releases, which it then takes
                # ("if necessary"): a lock the user did not ask for — the pre-releases are passed over too
                for v in self.sc.facts.prereleases(p.index, p.name) or ():
                    c = f"{p.name}!={v}"
                    if c not in self.constraints:
                        self.constraints.append(c)
                        new = True
            if p.build == "source" and not p.build_needs and p.sdist is not None and not cudalibs.nvcc_possible(target):
                p = dataclasses.replace(p, build_needs=needs_of(facts_for(p.name, p.sdist.url, p.sdist.name)))
            major = cudalibs.cuda_major(p.name, p.version)
            floor = self._driver_floor(major) if major is not None else None
            if floor is not None and target.driver is not None and _driver_below(target.driver, floor):
                c = cudalibs.constraint(p.name, major)  # type: ignore[arg-type]
                if c not in self.constraints:
                    self.constraints.append(c)
                    self.passed.append(words.cuda_build(p, major, floor, target))  # type: ignore[arg-type]
                    new = True
            if p.build == "source" and NVCC in p.build_needs and not cudalibs.nvcc_possible(target) \
                    and p.name not in self.no_build and ":all:" not in self.no_build:
                self.no_build.append(p.name)
                self.passed.append(words.nvcc_build(p, target, self.sc.python))
                new = True
        return new

    def _driver_floor(self, major: int) -> str | None:
        return self.sc.matrix.driver_floor(f"{major}.0", self.sc.target.os, self.sc.intent.cuda_policy)

    def run(self) -> Outcome:
        """uv's answer in the user's order, then the checks: a named package below its newest is asked for at its
        newest (then at anything newer than it has) with the packages named before it kept at least where they
        are; an answer the check finds is taken, and the next package is checked against it."""
        reqs = self.sc.reqs
        candidate, packages = self.lock([str(r) for r in reqs])
        checks: list[tuple[str, Check]] = []
        for i, r in enumerate(reqs):
            name = canonicalize_name(r.name)
            p, top = _locked(packages, name), self.sc.newest(r)
            if p is None or top is None or _v(p) >= (parse_version(top) or _ZERO):
                continue
            held = tuple(with_spec(q, f">={public(qp.version)}") if (qp := _locked(packages, q.name)) is not None
                         and q.url is None else str(q) for q in reqs[:i])
            later = [str(q) for q in reqs[i + 1:]]
            asked = with_spec(r, f"=={top}")
            try:
                candidate, packages = self.lock([*held, asked, *later])
                continue
            except Impossible as err:
                checks.append((name, Check(asked=asked, held=held, uv=str(err))))
            except ClosureError as err:
                checks.append((name, Check(asked=asked, held=held, uv=err.uv or str(err))))
            try:  # not its newest: perhaps something between (uv decides the package first)
                c2, p2 = self.lock([with_spec(r, f">{public(p.version)}"), *held, *later])
            except TritonlockError:
                continue
            if _v(_locked(p2, name)) > _v(p):
                candidate, packages = c2, p2
        return Outcome(candidate=candidate, packages=packages, checks=tuple(checks), passed_over=tuple(self.passed),
                       constraints=tuple(self.constraints), no_build=tuple(self.no_build))


def _driver_below(driver: str, floor: str) -> bool:
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split(".") if x.isdigit())

    return key(driver) < key(floor)


# --- the decision --------------------------------------------------------------------------------------------------

def decide(sel: Selection, candidates: tuple[Selection, ...], intent: Intent, matrix: Matrix, default_index: str,
           *, compile: Compile, facts: Facts | None = None, default_python: str = "",
           host: Callable[[], tuple[Selection, ...]] | None = None, constraints: tuple[str, ...] = (),
           passed: tuple[str, ...] = (), warm: bool = False,
           package_indexes: tuple[tuple[str, str, str], ...] = (),
           seen: Callable[[Selection, tuple[LockedPackage, ...]], None] | None = None
           ) -> tuple[Selection, tuple[LockedPackage, ...]]:
    """Lock one target whose intent names packages: among the fitting torch releases (`candidates`, newest first,
    `sel` the newest), the answer that gives the packages, in the user's order, their newest releases the target
    allows, then the newest torch — uv's answer in that order, checked (`Search`). The torch releases are grouped by
    the index they come from; the best outcome wins. A named package that only an ancient release could satisfy
    (one that needs a source build the newer ones do not, names no torch where they do, or is years older than the
    newest that fits the target) is a conflict: the returned selection is not ok, its conflict names both sides
    and the least fix, and no packages are locked for it."""
    facts = facts or Facts()
    reqs = user_requirements(intent)
    python = sel.python or default_python
    candidates = candidates or (sel,)
    groups: dict[str, list[Selection]] = {}
    for c in candidates:
        groups.setdefault(c.index or "", []).append(c)
    sc = Scene(sel=sel, candidates=candidates, intent=intent, matrix=matrix, facts=facts, reqs=reqs, python=python,
               default_python=default_python, default_index=default_index, host=host, constraints=constraints,
               passed=passed, warm=warm, package_indexes=package_indexes, seen=seen)
    # the packages' own index pages (for their newest releases) load while uv works
    pool = ThreadPoolExecutor(max_workers=1)
    pool.submit(facts.prefetch, [(sc.index_for(r.name), r.name) for r in reqs if r.url is None])
    pool.shutdown(wait=False)
    outcomes: list[tuple[Outcome, Search]] = []
    failures: list[tuple[str, TritonlockError]] = []
    for index, group in groups.items():
        search = Search(sc, group, compile)
        try:
            outcome = search.run()
        except (ClosureError, Impossible) as err:
            failures.append((index, err))
            continue
        outcomes.append((outcome, search))
        if not outcome.checks:
            break  # every package at its newest with this index's newest allowed torch: nothing can beat it
    if not outcomes:
        why = words.no_torch_fits(sc, failures)
        if isinstance(why, ClosureError):
            raise why  # uv's own error stands (an index that does not answer, a package no index has)
        return _conflicted(sel, str(why)), ()
    best, search = max(outcomes, key=lambda o: _score(o[0], reqs))
    for r in reqs:
        fallback = _fallback(sc, best.packages, r)
        if fallback is not None:
            return _conflicted(sel, words.fallback_conflict(sc, fallback, _least_fix(sc, search, best, fallback),
                                                           best.passed_over)), ()
    best = _torch_checked(sc, best, search)
    packages = best.packages
    if not _triton_as_decided(best.candidate, packages):
        # the range compile could not pin what the resolver decided for this torch (triton-windows is a series
        # torch does not pin): lock the chosen torch exactly, as without packages
        packages = compile(lock_plan(best.candidate, matrix), default_index, no_build=best.no_build,
                           constraints=best.constraints, offline=True, package_indexes=package_indexes)
    elif any(p.build == "source" for p in packages):
        # the answer kept builds from source: lock it once more with what those builds need read from their sdists
        # (and their build requirements locked), each named package and torch held where the decision put them
        pins = [with_spec(r, f"=={public(q.version)}") if (q := _locked(packages, r.name)) is not None
                and r.url is None else str(r) for r in reqs]
        packages = compile(lock_plan(dataclasses.replace(best.candidate, packages=tuple(pins)), matrix,
                                     f"=={best.candidate.torch}"), default_index, no_build=best.no_build,
                           constraints=best.constraints, offline=True, package_indexes=package_indexes)
    return _explained(sc, best), packages


def _conflicted(sel: Selection, message: str) -> Selection:
    """The target's decision as a conflict: nothing of the torch the host alone would allow is claimed."""
    return Selection(target=sel.target, ok=False, conflict=Conflict(target=sel.target.name, message=message))


def _score(o: Outcome, reqs: list[Requirement]) -> tuple[Version, ...]:
    return (*(_v(_locked(o.packages, r.name)) for r in reqs), parse_version(o.candidate.torch) or _ZERO)


def _triton_as_decided(sel: Selection, packages: tuple[LockedPackage, ...]) -> bool:
    if not sel.triton_package or not sel.triton:
        return True
    p = _locked(packages, sel.triton_package)
    if p is None:
        return False
    spec = sel.triton if sel.triton[:1] in "<>=!~" else f"=={sel.triton}"
    try:
        return SpecifierSet(spec).contains(public(p.version), prereleases=True)
    except InvalidSpecifier:
        return False


# --- torch: the newest the packages allow, checked ----------------------------------------------------------------

def _torch_checked(sc: Scene, o: Outcome, search: Search) -> Outcome:
    """Where the chosen torch is below the newest that fits the target, ask uv for that torch with the named packages
    where they are: a lock it finds is taken (the same packages, a newer torch); otherwise its words say what
    holds torch (kept as the torch check)."""
    top = sc.sel
    if o.candidate.torch == top.torch or not top.torch or words.own_torch_limits(sc, o.packages):
        return o  # (a named package's own release excludes that torch: no answer with them where they are has it)
    pinned = [with_spec(r, f"=={public(p.version)}") if (p := _locked(o.packages, r.name)) is not None and r.url is None
              else str(r) for r in sc.reqs]
    probe = Search(sc, [top], search._compile)
    probe.constraints, probe.no_build, probe.warm = list(o.constraints), list(o.no_build), True
    try:
        candidate, packages = probe.lock(pinned)
    except TritonlockError as err:
        uv = err.uv if isinstance(err, ClosureError) and err.uv else str(err)
        return dataclasses.replace(o, checks=o.checks + (("torch", Check(asked=f"torch=={top.torch}",
                                                                         held=tuple(pinned), uv=uv)),))
    if candidate.torch == top.torch:
        return dataclasses.replace(o, candidate=candidate, packages=packages)
    return o


# --- a package below its newest: explained from its check ---------------------------------------------------------

def _explained(sc: Scene, o: Outcome) -> Selection:
    sel, chosen, packages = sc.sel, o.candidate, o.packages
    direct: list[DirectPackage] = []
    warnings: list[str] = []
    at_newest: list[str] = []
    for r in sc.reqs:
        name = canonicalize_name(r.name)
        p = _locked(packages, name)
        top = sc.newest(r)
        version = public(p.version) if p else None
        held = None
        if p is not None and top is not None and _v(p) < (parse_version(top) or _ZERO):
            held = words.held_back(sc, name, p, top, o.check(name), o.passed_over, packages)
            warnings.append(f"{name} {version} is locked, not its newest release {top}: {held}")
        elif version is not None:
            at_newest.append(f"{name} {version}")
        direct.append(DirectPackage(name=name, requirement=str(r), version=version, newest=top, held_by=held))
    reasons = list(sel.reasons)
    base = sel
    if chosen.torch != sel.torch:
        held_by, lacking = words.torch_held_by(sc, chosen, packages, o.check("torch"))
        first = (f"torch {chosen.torch}: the newest torch {'the index serves' if lacking else 'the packages allow'} "
                 f"({held_by}); torch {sel.torch} would fit this target")
        passed = [r for r in sel.reasons if r.startswith("passed over ")]
        rest = [r for r in chosen.reasons[1:] if not r.startswith("passed over ")]
        reasons = [first, *passed, *rest]
        base = chosen
    if o.passed_over:
        reasons.insert(1 if reasons else 0, "passed over what this target cannot have: " + "; ".join(o.passed_over))
    warnings = list(base.warnings) + warnings
    if at_newest:  # after the torch lines (what the packages decided), before the build's own facts
        at = next((i for i, r in enumerate(reasons) if i and not r.startswith("passed over ")), len(reasons))
        reasons.insert(at, "packages at their newest release: " + ", ".join(at_newest))
    return dataclasses.replace(base, reasons=tuple(reasons), warnings=tuple(warnings), direct=tuple(direct),
                               packages=sel.packages)


# --- conflicts are conflicts: an ancient release is not an answer -------------------------------------------------

@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Fallback:
    """A named package locked at a release that only stands in for it (`locked`), and the releases that would be an
    answer: `reference` (the newest that fits the target on its own) and `since` (the oldest without the defect)."""

    req: Requirement
    name: str
    locked: LockedPackage
    reference: str
    since: str
    why: tuple[str, ...]  # words: "needs a source build (0.33.0 has a wheel for this target)", …


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
    treqs = sc.torch_reqs(index, name, version, extras)
    return treqs is None or all(any(t.specifier.contains(v, prereleases=True) for v in torches) for t in treqs)


def _fallback(sc: Scene, packages: tuple[LockedPackage, ...], r: Requirement) -> Fallback | None:
    """Whether the release `r` is locked at only stands in for it (see Fallback); None when it is an answer."""
    if r.url is not None:
        return None
    name = canonicalize_name(r.name)
    p = _locked(packages, name)
    if p is None:
        return None
    newer = [v for v in releases(sc.facts, p.index, r) if v > _v(p)]
    if not newer:
        return None
    extras = tuple(sorted(r.extras))
    torches = _host_torches(sc)
    ref = next((v for v in reversed(newer[-4:]) if _fits_alone(sc, p.index, name, str(v), extras, torches)), None)
    if ref is None:
        return None  # nothing newer installs on this target on its own: the target holds it, not the others
    mine, theirs = str(_v(p)), str(ref)
    why: list[str] = []
    wheel = sc.facts.has_wheel
    if p.build == "source" and wheel(p.index, name, theirs, sc.target, sc.python):
        why.append(f"it needs a source build at sync, where {name} {theirs} has a wheel for this target")
    lt = sc.torch_reqs(p.index, name, mine, extras)
    rt = sc.torch_reqs(p.index, name, theirs, extras)
    if lt == [] and rt:
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
    if lt == [] and rt:  # the oldest of them that names torch (releases name it from some release on)
        lo, hi = 0, len(span) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if sc.torch_reqs(p.index, name, str(span[mid]), extras):
                hi = mid
            else:
                lo = mid + 1
        span = span[lo:]
    return Fallback(req=r, name=name, locked=p, reference=theirs, since=str(span[0]), why=tuple(why))


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Fix:
    """What the checks found for a fallback: uv's words for the package at a recent release with the others, and
    the least change that gives a lock (checked), if any."""

    uv: str
    change: str | None = None  # "torch = \"==2.14.*\"", "\"vllm<=0.18.1\""
    gives: str | None = None  # what that lock holds: "vllm 0.33.0 with torch 2.14.0"
    others: tuple[str, ...] = ()  # the other named packages on the other side
    mutual: tuple[tuple[str, str], ...] = ()  # others that are recent only from a release on: (name, since)


def _least_fix(sc: Scene, search: Search, o: Outcome, fb: Fallback) -> Fix:
    """Checks for a fallback, each answered by uv: the package at `since` or newer with the others in the user's
    order — a lock there that moves other packages down to releases that are answers themselves makes pinning them
    the fix, one that moves them to fallbacks of their own is a conflict between recent releases of both (checked
    with both held recent); failing that, the intent's torch lifted (a torch pin is the fix); failing that, the
    target or the others are the other side (uv's words say which)."""
    def attempt(texts: list[str]) -> tuple[tuple[LockedPackage, ...] | None, str]:
        try:
            return search.lock(texts)[1], ""
        except TritonlockError as err:
            return None, err.uv if isinstance(err, ClosureError) and err.uv else str(err)

    def recent(bounds: dict[str, str]) -> list[str]:
        return [with_spec(r, f">={bounds[n]}") if (n := canonicalize_name(r.name)) in bounds else str(r)
                for r in sc.reqs]

    packages, uv = attempt(recent({fb.name: fb.since}))
    if packages is not None:
        moved = [r for r in sc.reqs if canonicalize_name(r.name) != fb.name
                 and _v(_locked(packages, r.name)) < _v(_locked(o.packages, r.name))]
        mine = _locked(packages, fb.name)
        theirs = [f for r in moved if (f := _fallback(sc, packages, r)) is not None]
        if moved and mine is not None and not theirs:
            pins = [(canonicalize_name(r.name), q) for r in moved if (q := _locked(packages, r.name)) is not None]
            return Fix(uv="", change=", ".join(f'"{n}<={public(q.version)}"' for n, q in pins),
                       gives=", ".join([f"{fb.name} {public(mine.version)}"] + [f"{n} {public(q.version)}"
                                                                                 for n, q in pins]),
                       others=tuple(n for n, _ in pins))
        if theirs:
            both = {fb.name: fb.since, **{f.name: f.since for f in theirs}}
            checked, uv = attempt(recent(both))
            if checked is None:
                return Fix(uv=uv, others=tuple(f.name for f in theirs),
                           mutual=tuple((f.name, f.since) for f in theirs))
            return Fix(uv="", change=", ".join(f'"{n}>={v}"' for n, v in both.items()), others=tuple(both)[1:],
                       gives=", ".join(f"{p.name} {public(p.version)}" for n in both
                                       if (p := _locked(checked, n)) is not None))
    others = tuple(n for r in sc.reqs if (n := canonicalize_name(r.name)) != fb.name and n in uv)
    if sc.intent.torch and sc.host is not None:
        lifted = [c for c in sc.host() if c.torch not in {x.torch for x in sc.candidates}]
        by_index: dict[str, list[Selection]] = {}
        for c in lifted:
            by_index.setdefault(c.index or "", []).append(c)
        for group in list(by_index.values())[:2]:
            probe = Search(sc, group, search._compile)
            probe.constraints, probe.no_build, probe.warm = list(o.constraints), list(o.no_build), True
            try:
                candidate, found = probe.lock(recent({fb.name: fb.since}))
            except TritonlockError:
                continue
            mine = _locked(found, fb.name)
            minor = ".".join((candidate.torch or "").split(".")[:2])
            return Fix(uv=uv, change=f'torch = "=={minor}.*"', others=others,
                       gives=f"{fb.name} {public(mine.version) if mine else '?'} with torch {candidate.torch}")
    return Fix(uv=uv, others=others)
