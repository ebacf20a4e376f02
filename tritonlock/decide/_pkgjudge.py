"""The native-code rule as the packages search asks it: on one release beside a torch line (a lenient judge lets a
failure the package's own `try` catches pass for the packages the user does not name, and every judge notes where
it found one), what a line's torch wheel exports of torch's C++ API where compat/torch-symbols/ ships it, and what
a refusal of the rule on a closure passes over (the release, the ones after it that fail the same way, the lines)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from packaging.utils import canonicalize_name

from tritonlock.decide._pkgfacts import public
from tritonlock.decide._pkgload import LOOK

if TYPE_CHECKING:
    from tritonlock.compat.matrix import Matrix
    from tritonlock.decide._pkgload import Table
    from tritonlock.decide._pkgcheck import Search
    from tritonlock.decide._pkgscene import Fallback, Fix, Outcome, Run
    from tritonlock.decide._pkgfacts import Facts
    from tritonlock.models import Intent, Selection
    from tritonlock.native.rule import Item, Problem


class _Judge:
    """The rule on one release beside a line (judge.release_problems), noting in `noted` where it found a failure
    the package's own `try` catches (what a lenient second search may let pass). What the rule finds is kept in
    `found` (a dict the two searches of one decision share): the lenient judge's answer is the strict one's with the
    guarded failures of the packages not named left out (judge.counted), so the second search judges nothing twice
    (sgl-kernel's 64 releases beside a dozen lines, again: 0.4 s)."""

    def __init__(self, matrix: Matrix, intent: Intent, reach: tuple[str, ...], exports: Callable[[Selection], Any],
                 lenient: bool, noted: list[bool], found: dict[tuple[object, ...], list[Problem]]) -> None:
        from tritonlock.native import judge

        self.noted, self._found, self._lenient, self._reach = noted, found, lenient, reach
        self._counted = judge.counted
        self._of = functools.partial(judge.release_problems, matrix=matrix, policy=intent.cuda_policy,
                                     optional=intent.optional_gpu_code, imports=reach, exports=exports, lenient=False)

    def __call__(self, sel: Selection, item: Item, brought: set[str]) -> list[Problem]:
        key = (sel, item.name, item.version, item.facts, frozenset(brought))
        strict = self._found.get(key)
        if strict is None:
            strict = self._found[key] = self._of(sel, item, brought)
        found: list[Problem] = self._counted(list(strict), sel, self._reach, self._lenient)
        if any(p.guarded for p in found) and not self.noted:
            self.noted.append(True)
        return found


def judge_of(matrix: Matrix, intent: Intent, reach: tuple[str, ...], exports: Callable[[Selection], Any],
             lenient: bool = False, noted: list[bool] | None = None,
             found: dict[tuple[object, ...], list[Problem]] | None = None) -> Callable[..., list[Problem]]:
    """The rule on one release beside a line; `found`: what another judge of the same decision found (shared)."""
    return _Judge(matrix, intent, reach, exports, lenient, [] if noted is None else noted,
                  {} if found is None else found)


def line_exports(facts: Facts, python: str) -> Callable[[Selection], Any]:
    """What a CUDA line's torch wheel for the target exports of torch's C++ API, where compat/torch-symbols/ ships
    its set (by its sha256: exactly the wheel the line locks), so that a build its symbols rule out is passed over
    before uv is asked — a release at a time beside each line otherwise; None where not shipped."""
    from tritonlock.decide._pkgfacts import install_order
    from tritonlock.native import judge

    memo: dict[tuple[str | None, str | None, str | None], Any] = {}

    def exports(sel: Selection) -> Any:
        key = (sel.index, sel.torch, sel.backend)
        if key not in memo:
            memo[key] = None
            if sel.index and sel.torch and (sel.backend or "").startswith("cu"):
                files = facts.release_files(sel.index, "torch", sel.torch)
                mine = [f for f in files if f.filename.split("-")[1].partition("+")[2] == sel.backend] or [
                    f for f in files if "+" not in f.filename.split("-")[1]]
                by_name = {f.filename: f for f in mine}
                first = install_order(by_name, sel.target, python)[:1]
                f = by_name[first[0]] if first else None
                memo[key] = judge.shipped_exports(f.sha256, f.filename) if f is not None and f.sha256 else None
        return memo[key]
    return exports


def judged(run: Run, o: Outcome) -> list[Problem]:
    """What the rule finds in an answer's closure (what counts in the run's mode: see _Judge)."""
    from tritonlock.native import judge

    assert run.native is not None
    run.say(f"checking the native code of {len(o.packages)} packages")
    read = run.native.facts(run.native.wanted(o.candidate, o.packages))
    intent = run.sc.intent
    found = judge.problems(o.candidate, o.packages, read, run.sc.matrix, policy=intent.cuda_policy,
                           optional=intent.optional_gpu_code, imports=run.sc.reach, lenient=run.lenient)
    if any(p.guarded for p in found) and not run.noted:
        run.noted.append(True)
    return found


def native_cause(run: Run, search: Search, fb: Fallback, fix: Fix) -> Fix:
    """Where uv locks a fallback's package at a recent release with the other requirements, but no check found the
    other side (the search over every line found no answer with it recent): what the rule finds in that lock is why
    — torchao==0.9.* named beside sglang, whose 0.5.3-0.5.10 pin torchao 0.9.0 and torch 2.9.1, beside which
    torchao 0.9.0's extensions cannot load (named, its failure counts). `fix` as it is where uv finds no lock, or
    the rule nothing."""
    from tritonlock.decide._pkgscene import Outcome
    from tritonlock.decide.requirements import with_spec
    from tritonlock.errors import TritonlockError

    if run.native is None:
        return fix
    reqs = [with_spec(r, f">={fb.since}") if canonicalize_name(r.name) == fb.name else str(r) for r in run.sc.reqs]
    try:
        candidate, packages = search.lock(reqs)
    except TritonlockError:
        return fix
    found = judged(run, Outcome(candidate=candidate, packages=packages))
    if not found:
        return fix
    from tritonlock.decide._pkgwords import packages_key

    p, mine = found[0], next((public(q.version) for q in packages if q.name == fb.name), "?")
    return dataclasses.replace(
        fix, native=f"can be locked here beside recent releases of the other packages so that the native code loads: "
                    f"with torch {candidate.torch} ({candidate.backend}), uv locks {fb.name} {mine}, and {p.package} "
                    f"{public(p.version)}'s native code cannot load there: {p.text}",
        native_fix=f"change what holds {p.package} {public(p.version)} (a requirement in "
                   f"{packages_key(run.sc.intent.path)} that pins it or brings it), or lock them for machines where "
                   "it loads (a target of their own)")


def refuse(run: Run, o: Outcome, found: list[Problem]) -> bool:
    """Pass over, beside the line uv chose, each release the rule refused (and, read a batch at a time, the releases
    after it whose own facts fail there too, or — a CUDA library no wheel of the closure brings — that need the same
    library and bring nothing more of NVIDIA's: `same_library`); True when anything new was passed over."""
    from tritonlock.decide._pkgload import Table
    from tritonlock.decide._pkgscene import locked

    rank = run.rank(o.candidate)
    new = False
    for p in found:
        name = canonicalize_name(p.package)
        q = locked(o.packages, name)
        if q is not None and q.direct:
            continue  # a wheel named by its address: no other release of it to take (the conflict says so)
        t = run.tables.get(name) or run.deps.get(name)
        if t is None:
            t = run.deps[name] = Table(env=run.env, name=name, index=q.index if q else run.sc.default_index)
        v = public(p.version)
        if rank not in t.refused.get(v, {}):
            for r in alike(run, rank, p.kind):
                t.refused.setdefault(v, {}).setdefault(r, p.text)
                run.found.setdefault((name, v, r), p)
            run.say(f"{name} {v}'s native code cannot load beside torch {o.candidate.torch} "
                    f"({o.candidate.backend}): passed over")
            run.epoch += 1
            new = True
        if v in t.versions:  # its own facts (they hold on every line), and the releases after it that fail
            t.read([v])      # beside this line by their own facts: read now
            t.first(o.candidate, rank, start=t.versions.index(v) + 1)
            for w, same in same_library(t, v, p, rank) if p.kind == "cuda-library" else ():
                for r in alike(run, rank, p.kind):
                    t.refused.setdefault(w, {}).setdefault(r, same.text)
                    run.found.setdefault((name, w, r), same)
                run.epoch += 1
                new = True
    return new


def same_library(t: Table, v: str, p: Problem, rank: int) -> list[tuple[str, Problem]]:
    """The releases after `v` (the next batch, read now) that the rule would refuse beside the line as it refused
    `v`: a CUDA library no wheel of the closure brings (`p.needs`), needed by a module of theirs too, where their
    requirements on NVIDIA's wheels are v's (they bring no more): cupy-cuda12x 13.x's cudnn module needs libcudnn.so.8
    beside torch 2.8.0, which brings cuDNN 9 — one release per uv answer was eleven answers, 50 s a line."""
    import dataclasses

    f = t.native.get(v)
    mine = next((m for m in f.members if p.needs in m.needed), None) if f is not None else None
    theirs = _nvidia_requirements(t, v)
    if f is None or mine is None or theirs is None:
        return []
    i = t.versions.index(v)
    after = [w for w in t.versions[i + 1:] if rank not in t.refused.get(w, {})][:LOOK]
    t.read(after)
    out: list[tuple[str, Problem]] = []
    for w in after:
        g = t.native.get(w)
        m = next((m for m in g.members if p.needs in m.needed), None) if g is not None else None
        if g is None or m is None or _nvidia_requirements(t, w) != theirs:
            continue
        text = p.text.replace(f"{mine.path} in {f.filename}", f"{m.path} in {g.filename}")
        if text == p.text:  # (its words name another file: said as this one's)
            text = f"{m.path} in {g.filename} needs {p.needs}, as {t.name} {v}'s {mine.path} does: {p.text}"
        out.append((w, dataclasses.replace(p, version=w, text=text)))
    return out


def _nvidia_requirements(t: Table, version: str) -> set[str] | None:
    reqs = t.env.facts.requires(t.index, t.name, version, t.env.target, t.env.python, t.extras)
    return None if reqs is None else {str(r) for r in reqs if r.name.lower().startswith(("nvidia-", "cuda-"))}


def alike(run: Run, rank: int, kind: str) -> list[int]:
    """The lines a refusal of the rule on line `rank` holds for too (what the release's own facts say holds on every
    line already: its GPU code, the driver): a CUDA library, a torch build or a per-CUDA build the package picks, the
    lines whose torch build is that one's (the closure's CUDA libraries come with torch's build); a torch release's
    C++ API, the lines of that torch release; anything else, that line."""
    here = run.lines[rank]
    if kind in ("cuda-library", "torch-build", "cuda-build"):
        return [r for r, x in enumerate(run.lines) if x.backend == here.backend and x.index == here.index] or [rank]
    if kind == "torch-release":
        minor = ".".join((here.torch or "").split(".")[:2])
        return [r for r, x in enumerate(run.lines) if ".".join((x.torch or "").split(".")[:2]) == minor] or [rank]
    return [rank]
