"""uv's answer for one group of torch lines, checked: uv locks the packages in the user's order (what the facts
passed over told it as constraints), then each named package below the newest release its facts allow there is
asked for at that release with the packages named before it kept at least where they are — and where only a package
named later stands in its way, that is said (the user's order: a later package never holds an earlier one back)."""

from __future__ import annotations

import dataclasses
import re

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tritonlock.decide import _pkgwords as words
from tritonlock.decide import cudalibs
from tritonlock.decide._pkgfacts import parse_version, public, releases
from tritonlock.decide._pkgload import torch_admits
from tritonlock.decide._pkgscene import ZERO, Check, Compile, Demoted, Outcome, Scene, locked, vkey
from tritonlock.decide.lockplan import lock_plan
from tritonlock.decide.requirements import torch_spec, with_spec
from tritonlock.errors import ClosureError, ResolveError, TritonlockError
from tritonlock.models import LockedPackage, Selection

# How many times a compile may land on a torch the matrix does not know (a release newer than the matrix, or a
# patch it lacks) before the decision gives up on that index: each one is excluded and uv asked again.
_UNKNOWN_TORCH_RETRIES = 3
# How many times one answer may be locked again after passing over what the target cannot have (a CUDA library its
# driver cannot load, a source build that needs nvcc where none exists): each pass passes over at least one more.
_MAX_PASSES = 6


# uv's words where building a release's sdist to read its requirements failed while it resolved
BUILD_FAILED = re.compile(r"Failed to (?:download and )?build `([A-Za-z0-9][A-Za-z0-9._-]*)==([^`\s]+)`")


class Impossible(ResolveError):
    """What the target cannot have is all uv could lock: a conflict of the platform or the driver."""


def _driver_below(driver: str, floor: str) -> bool:
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split(".") if x.isdigit())

    return key(driver) < key(floor)


class Search:
    """One group of torch lines (one index; lines whose facts say the same): uv locks the packages in the user's
    order, then each named package below its newest release here is checked."""

    def __init__(self, sc: Scene, group: list[Selection], compile: Compile, *, constraints: tuple[str, ...] = (),
                 no_build: tuple[str, ...] = (), passed: tuple[str, ...] = (), warm: bool = False,
                 timeout: float | None = None) -> None:
        self.sc, self.group, self._compile = sc, group, compile
        self.versions = [c.torch for c in group if c.torch]
        self.known = [r.version for r in sc.matrix.torch]
        self.constraints: list[str] = list(constraints)
        self.no_build: list[str] = list(no_build or sc.intent.no_build)
        self.passed: list[str] = list(passed)
        self.warm = warm  # uv's cache holds what the first compile read: later ones answer from it first
        self.timeout = timeout  # (uv given up after this long: the decision's background answer)
        self.unbuilt: list[str] = []  # packages whose sdist uv could not build here (their wheels taken since)

    def lock(self, reqs: list[str]) -> tuple[Selection, tuple[LockedPackage, ...]]:
        """uv's answer for these requirements with this group's torch releases; what the target cannot have (CUDA
        builds its driver cannot load, source builds that need nvcc where none exists) is passed over and the answer
        locked again. ClosureError (uv's words in `.uv`) when uv finds none."""
        extra_known = list(self.known)
        unknown = passes = 0
        while True:
            s = dataclasses.replace(self.group[0], packages=tuple(reqs))
            try:
                packages = self._compile(lock_plan(s, self.sc.matrix, torch_spec(self.versions, extra_known)),
                                         self.sc.default_index, offline=self.warm,
                                         constraints=tuple(self.constraints), no_build=tuple(self.no_build),
                                         build_facts=False,  # an answer the checks may replace: read once kept
                                         package_indexes=self.sc.package_indexes,
                                         **({"timeout": self.timeout} if self.timeout else {}))
            except ClosureError as err:
                built = BUILD_FAILED.search(err.uv or "")
                name = canonicalize_name(built[1]) if built else ""
                if built and name not in self.no_build and ":all:" not in self.no_build \
                        and len(self.unbuilt) < _MAX_PASSES:
                    # uv could not build a release's sdist here to read its requirements (vllm 0.1.1's setup.py wants
                    # CUDA_HOME): no lock can hold it, and uv's error is no answer — its wheels only, and ask again
                    self.no_build.append(name)
                    self.unbuilt.append(name)
                    self.passed.append(words.unbuildable(built[1], built[2], err.uv or ""))
                    continue
                if self.passed and passes:  # the answer without what the target cannot have: there is none
                    raise Impossible(words.impossible(self.sc, self.passed, err)) from None
                if self.unbuilt:  # (uv's words would blame [environment].no-build for what the decision passed over)
                    raise ClosureError(words.impossible(self.sc, self.passed, err), uv=err.uv) from None
                raise
            finally:
                self.warm = True
            torch = locked(packages, "torch")
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
        if not vkey(p).is_prerelease or not p.index:
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

        from tritonlock.lock.builds import facts_for, gpus_below, needs_of

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
            below = gpus_below(p.name, p.version, target.gpus) if p.build == "source" else None
            if below is not None and below[2] not in self.constraints:
                # its build compiles kernels for newer GPUs only (flash-attn 2 for sm_80 and up): a V100 cannot run it
                self.constraints.append(below[2])
                self.passed.append(words.gpu_build(p, below[0], below[1], below[2]))
                new = True
            if p.build == "source" and NVCC in p.build_needs and not cudalibs.nvcc_possible(target) \
                    and p.name not in self.no_build and ":all:" not in self.no_build:
                self.no_build.append(p.name)
                self.passed.append(words.nvcc_build(p, target, self.sc.python))
                new = True
        return new

    def _driver_floor(self, major: int) -> str | None:
        return self.sc.matrix.driver_floor(f"{major}.0", self.sc.target.os, self.sc.intent.cuda_policy)

    def attempt(self, reqs: list[str]) -> tuple[tuple[Selection, tuple[LockedPackage, ...]] | None, str]:
        """uv's answer for `reqs`, or None and uv's words."""
        try:
            return self.lock(reqs), ""
        except Impossible as err:
            return None, str(err)
        except TritonlockError as err:
            return None, err.uv if isinstance(err, ClosureError) and err.uv else str(err)

    def _torch_rules_out(self, r: Requirement, version: str) -> str | None:
        """The release's torch requirement where its METADATA, read already in this run (nothing is read for this),
        admits none of the group's torch releases (vllm 0.34.0's "torch==2.14.0" beside torch 2.13.0): the check's
        answer without asking uv. None where it admits one, or where its METADATA was not read."""
        if r.url is not None or not self.versions:
            return None
        index = self.sc.index_for(r.name)
        if not self.sc.facts.has_metadata(index, r.name, version):
            return None
        for t in self.sc.torch_reqs(index, r.name, version, tuple(sorted(r.extras))) or ():
            if not any(torch_admits(t.specifier, c) for c in self.group if c.torch):
                return str(t)
        return None

    def _newest_between(self, r: Requirement, below: str, above: str) -> str | None:
        """The newest release strictly between `below` and `above` that may lock beside the group: one whose METADATA
        was not read, or whose torch requirement admits one of the group's torch releases; None where none may;
        `above` itself where the package's page was not read in this run (what lies between is not known)."""
        index = self.sc.index_for(r.name)
        if not self.sc.facts.read(index, r.name):  # (its page unread in this run: what lies between is unknown)
            return above
        low, high = parse_version(below) or ZERO, parse_version(above) or ZERO
        between = [str(v) for v in releases(self.sc.facts, index, r) if low < v < high]
        out = {c.split("!=", 1)[1] for c in self.constraints if c.startswith(f"{canonicalize_name(r.name)}!=")}
        # (one the search passed over here is not asked again: uv's words would only echo the `!=` it was given)
        return next((v for v in reversed(between) if v not in out and self._torch_rules_out(r, v) is None), None)

    def run(self, reqs: list[Requirement], tops: dict[str, str]) -> Outcome:
        """uv's answer in the user's order, then the checks: a named package below `tops` (its newest release whose
        facts allow it here) is asked for at that release with the packages named before it kept at least where
        they are (then at anything newer than it has); an answer the check finds is taken, and the next package is
        checked against it. Where the package locks at that release with the ones before it, but not with the ones
        after it, the later package that stands in its way is named (a Demoted: the decision makes it a conflict)."""
        candidate, packages = self.lock([str(r) for r in reqs])
        checks: list[tuple[str, Check]] = []
        demoted: list[Demoted] = []
        for i, r in enumerate(reqs):
            name = canonicalize_name(r.name)
            p, top = locked(packages, name), tops.get(name)
            if p is None or top is None or vkey(p) >= (parse_version(top) or ZERO):
                continue
            held = tuple(with_spec(q, f">={public(qp.version)}") if (qp := locked(packages, q.name)) is not None
                         and q.url is None else str(q) for q in reqs[:i])
            later = reqs[i + 1:]
            pinned = self._torch_rules_out(r, top)
            if pinned is not None:
                # its METADATA (read already) admits none of the group's torch releases: that check's answer is
                # known without uv; the newest release below it that may fit is checked in its place
                checks.append((name, Check(asked=with_spec(r, f"=={top}"), held=held, uv="",
                                           meta=f"{name} {top}'s METADATA requires {pinned}")))
                top = self._newest_between(r, public(p.version), top) or ""
                if not top:
                    continue
            asked = with_spec(r, f"=={top}")
            found, uv = self.attempt([*held, asked, *map(str, later)])
            if found is not None:
                candidate, packages = found
                continue
            if pinned is None:
                checks.append((name, Check(asked=asked, held=held, uv=uv)))
            else:  # (the words quote the check uv made, after the METADATA's)
                checks[-1] = (name, dataclasses.replace(checks[-1][1], asked=asked, uv=uv))
            if later and self.attempt([*held, asked])[0] is not None:
                # it locks with the packages named before it: a package named after it is what stands in the way
                by, said = later[-1], uv
                for q in later:
                    alone, words_q = self.attempt([*held, asked, str(q)])
                    if alone is None:
                        by, said = q, words_q
                        break
                demoted.append(Demoted(name=name, top=top, by=canonicalize_name(by.name), uv=said))
            # not its newest: perhaps something between (uv decides the package first) — where a release between
            # may fit at all
            if self._newest_between(r, public(p.version), top) is None:
                continue
            between, _ = self.attempt([with_spec(r, f">{public(p.version)}"), *held, *map(str, later)])
            if between is not None and vkey(locked(between[1], name)) > vkey(p):
                candidate, packages = between
        return Outcome(candidate=candidate, packages=packages, checks=tuple(checks), passed_over=tuple(self.passed),
                       constraints=tuple(self.constraints), no_build=tuple(self.no_build),
                       package_indexes=self.sc.package_indexes, demoted=tuple(demoted))
