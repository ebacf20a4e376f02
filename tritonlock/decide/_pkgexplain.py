"""The search's answer as the lock records it: torch checked at the newest line the packages' facts allow, each named
package below its newest release explained by the check that failed or the fact that keeps it off, what was passed
over and why (in one reason, not a page), and what the native-code rule checked; and the conflict where no release of
a named package can be locked by its facts (`hopeless`)."""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from tritonlock.decide import _pkgwords as words
from tritonlock.decide._pkgcheck import Search
from tritonlock.decide._pkgfacts import parse_version, public
from tritonlock.decide import _pkgload, firstuse
from tritonlock.decide._pkgload import Table, line_cuda, torch_admits
from tritonlock.decide._pkgpassed import (NAMED, TORCHLESS, beside_its_torch, native_holds, refused_problem,
                                          releases, why_short)
from tritonlock.decide._pkgscene import ZERO, Check, Compile, Outcome, Run, Scene, locked, vkey
from tritonlock.decide.lockplan import lock_plan
from tritonlock.decide.requirements import with_spec
from tritonlock.errors import ClosureError, TritonlockError
from tritonlock.models import DirectPackage, LockedPackage, Selection

if TYPE_CHECKING:
    from collections.abc import Callable

    from packaging.requirements import Requirement

    from tritonlock.native.rule import Problem


def torch_checked(run: Run, o: Outcome, search: Search) -> Outcome:
    """Where the chosen torch is below the newest that fits the target, and the named packages' locked releases can
    load beside that newest one by their facts, ask uv for that torch with the named packages where they are: a lock
    it finds (whose closure the rule passes) is taken; otherwise its words say what holds torch (the torch check)."""
    sc, top = run.sc, run.sc.sel
    if o.candidate.torch == top.torch or not top.torch or words.own_torch_limits(sc, o.packages):
        return o  # (a named package's own release excludes that torch: no answer with them where they are has it)
    rank = run.rank(top)
    if rank < 0:
        return o  # (its index does not serve that torch: the words say so)
    for name, t in run.tables.items():
        p = locked(o.packages, name)
        if p is not None and t.state == "ok" and not t.loads(public(p.version), top, rank):
            return o  # its native code cannot load there: the native words say why torch is held
    pinned = [with_spec(r, f"=={public(p.version)}") if (p := locked(o.packages, r.name)) is not None and r.url is None
              else str(r) for r in sc.reqs]
    probe = Search(dataclasses.replace(sc, package_indexes=o.package_indexes), [top], search._compile,
                   constraints=o.constraints, no_build=o.no_build, warm=True)
    try:
        candidate, packages = probe.lock(pinned)
    except TritonlockError as err:
        uv = err.uv if isinstance(err, ClosureError) and err.uv else str(err)
        return dataclasses.replace(o, checks=o.checks + (("torch", Check(asked=f"torch=={top.torch}",
                                                                         held=tuple(pinned), uv=uv)),))
    if candidate.torch != top.torch:
        return o
    moved = dataclasses.replace(o, candidate=candidate, packages=packages)
    if run.native is not None:
        from tritonlock.native import judge

        read = run.native.facts(run.native.wanted(candidate, packages))
        if judge.problems(candidate, packages, read, sc.matrix, policy=sc.intent.cuda_policy,
                          optional=sc.intent.optional_gpu_code, imports=sc.reach, lenient=run.lenient):
            return o
    return moved


def finish(run: Run, best: Outcome, compile: Compile) -> tuple[Selection, tuple[LockedPackage, ...]]:
    """The answer as locked: the closure once more where builds from source need their facts read (or torch's
    Triton could not be pinned by the range), then the explained selection with what the rule checked."""
    sc = run.sc
    packages = best.packages
    own = best.package_indexes
    if not _triton_as_decided(best.candidate, packages):
        # the range compile could not pin what the resolver decided for this torch (triton-windows is a series
        # torch does not pin): lock the chosen torch exactly, as without packages
        packages = compile(lock_plan(best.candidate, sc.matrix), sc.default_index, no_build=best.no_build,
                           constraints=best.constraints, offline=True, package_indexes=own)
    elif any(p.build == "source" for p in packages):
        # the answer kept builds from source: lock it once more with what those builds need read from their sdists
        # (and their build requirements locked), each named package and torch held where the decision put them
        pins = [with_spec(r, f"=={public(q.version)}") if (q := locked(packages, r.name)) is not None
                and r.url is None else str(r) for r in sc.reqs]
        packages = compile(lock_plan(dataclasses.replace(best.candidate, packages=tuple(pins)), sc.matrix,
                                     f"=={best.candidate.torch}"), sc.default_index, no_build=best.no_build,
                           constraints=best.constraints, offline=True, package_indexes=own)
    packages, clash, why = firstuse.matched(run, best, packages, compile)
    if clash is not None:  # (a prebuilt-kernel package of another release: the package refuses to import)
        return firstuse.conflicted(best.candidate, clash), ()
    best = dataclasses.replace(best, packages=packages)
    sel = firstuse.held(_explained(run, best), why)
    if (gone := yanked(run, packages)):
        sel = dataclasses.replace(sel, warnings=(*sel.warnings, *gone))
    if run.native is None:
        return firstuse.judged(sel, packages)
    from tritonlock.native import judge

    read = run.native.facts(run.native.wanted(sel, packages))
    found = judge.problems(sel, packages, read, sc.matrix, policy=sc.intent.cuda_policy,
                           optional=sc.intent.optional_gpu_code, imports=sc.reach, lenient=run.lenient)
    if found:  # (the closure locked again for its source builds brought what cannot load: said, never locked)
        from tritonlock.models import Conflict

        return Selection(target=sel.target, ok=False, conflict=Conflict(
            target=sel.target.name, message=judge.conflict(sel, found, [], exists=sc.served))), ()
    checked = judge.checked(packages, run.native.read or read)
    warned = (*sel.warnings, *judge.unknowns(sel, packages, read, sc.matrix, policy=sc.intent.cuda_policy,
                                             optional=sc.intent.optional_gpu_code, imports=sc.reach))
    return firstuse.judged(dataclasses.replace(sel, reasons=(*sel.reasons, *((checked,) if checked else ())),
                                               warnings=warned), packages)


def yanked(run: Run, packages: tuple[LockedPackage, ...]) -> list[str]:
    """A named package locked at a release its index has yanked (PEP 592): uv takes one only where the intent pins it
    exactly, so it is the user's choice — said, with the index's reason, as pip and uv say it when they install it."""
    sc = run.sc
    out = []
    for r in sc.reqs:
        p = locked(packages, r.name)
        if p is None or r.url is not None:
            continue
        mine = {w.name for w in (*p.wheels, *((p.sdist,) if p.sdist else ()))}
        hits = [f for f in sc.facts.files(p.index, p.name) or () if f.filename in mine]
        if hits and all(f.yanked for f in hits):
            why = next((f.yanked_reason for f in hits if f.yanked_reason), None)
            said = f' (its index says: "{why}")' if why else ""
            out.append(f"{p.name} {p.version} is a yanked release{said}: locked because "
                       f"{words.packages_key(sc.intent.path)} pins it ({r}) — its index has withdrawn it; sync "
                       "installs it all the same")
    return out


def _triton_as_decided(sel: Selection, packages: tuple[LockedPackage, ...]) -> bool:
    if not sel.triton_package or not sel.triton:
        return True
    p = locked(packages, sel.triton_package)
    if p is None:
        return False
    spec = sel.triton if sel.triton[:1] in "<>=!~" else f"=={sel.triton}"
    try:
        return SpecifierSet(spec).contains(public(p.version), prereleases=True)
    except InvalidSpecifier:
        return False


# --- what was passed over, and why --------------------------------------------------------------------------------

def _passed(run: Run, o: Outcome) -> tuple[list[str], dict[str, str]]:
    """What the facts and the rule passed over beside the line locked, in words: releases above the one locked that
    cannot load there (those failing for the same reason named together), a package's own build taken instead of its
    default index's — and, per named package, why its newest release cannot load (for its held-back line)."""
    chosen, rank = o.candidate, run.rank(o.candidate)
    out: list[str] = []
    newest_why: dict[str, str] = {}
    own = {n: u for n, u, _ in o.package_indexes}
    for t in run.all_tables():
        p = locked(o.packages, t.name)
        at = vkey(p) if p is not None else ZERO
        above = [v for v in t.excluded(chosen, rank) if (p is None or (parse_version(v) or ZERO) > at)
                 and not t.lacks_extras(v)]  # (a release without the extra asked for: its held-back line says so)
        if t.name in own and p is not None:
            v = public(p.version)
            choice = t.own(v, chosen)
            took = choice.why if choice is not None else f"{t.name}'s build from its own index {own[t.name]}"
            out.append(f"{t.name} {v}'s build from its default index (its native code cannot load here: "
                       f"{t.why(v, chosen, rank)}); took {took}")
        groups: dict[str, list[str]] = {}
        elsewhere: dict[str, list[tuple[str, str]]] = {}  # (held off this line by their own torch requirement)
        torchless = [v for v in above if t.refused.get(v, {}).get(rank, "").startswith(TORCHLESS)]
        if torchless:
            out.append(f"{t.name} {releases(torchless)} ({t.refused[torchless[0]][rank]})")
        for v in [v for v in above if v not in torchless]:
            newest = t.name in run.tables and v == (t.versions[0] if t.versions else None)
            there = beside_its_torch(run, t, v, chosen)
            if there is not None:
                if there[0]:
                    elsewhere.setdefault(there[1], []).append((v, there[0]))
                    if newest:
                        newest_why[t.name] = f"it cannot be locked {there[0]}"
                continue
            why = why_short(t, v, chosen, rank) + _other_lines(run, t, v, chosen)
            if newest:
                newest_why[t.name] = "its native code cannot load on this target: " + why
            f = t.native.get(v)
            groups.setdefault(why.replace(f.filename, "{file}") if f is not None else why, []).append(v)
        for why, vs in groups.items():
            text = why.replace("{file}", "each one's wheel" if len(vs) > 1 else
                               (t.native[vs[0]].filename if t.native.get(vs[0]) is not None else ""))  # type: ignore
            out.append(f"{t.name} {releases(vs)} (its native code cannot load here: {text})")
        for found in elsewhere.values():
            vs = [v for v, _ in found]
            out.append(f"{t.name} {releases(vs)} ({'the newest, ' + vs[0] + ': ' if len(vs) > 1 else ''}it cannot be "
                       f"locked {found[0][1]})")
    return out, newest_why


def _other_lines(run: Run, t: Table, v: str, chosen: Selection) -> str:
    """Where a release needs another CUDA than the line's: whether a torch build that brings it could have it."""
    probs = t.problems(v, chosen)
    libs = [p.needs for p in probs if p.kind == "cuda-library"]
    majors = {int(m[1]) for lib in libs if (m := re.search(r"\.so\.([0-9]+)$", lib))}
    if len(majors) != 1 or any(p.kind != "cuda-library" for p in probs):
        return ""
    (n,) = majors
    others = [(r, s) for r, s in enumerate(run.lines) if line_cuda(s) == n]
    if not others:
        return ""
    torch_ok = [(r, s) for r, s in others if t.excluded_by_torch(v, s) is None]
    if not torch_ok:
        return f"; no torch release whose build brings CUDA {n} fits it"
    r, s = torch_ok[0]
    if t.loads(v, s, r):
        return ""
    return (f"; nor beside the torch builds that bring CUDA {n}, tried for it and not kept: torch {s.torch} "
            f"({s.backend}): {t.why(v, s, r)}")


def _held_for_cuda(run: Run, o: Outcome) -> tuple[str, str, str] | None:
    """Where torch is held below the newest line because a named package's locked release needs another CUDA than
    that line's build brings: (the first reason, the warning, what was passed over), in words."""
    top, chosen = run.lines[0], o.candidate  # (the newest torch line its index serves)
    n = line_cuda(chosen)
    if (top.torch, top.backend) == (chosen.torch, chosen.backend) or n is None or line_cuda(top) == n:
        return None
    if words.own_torch_limits(run.sc, o.packages):
        return None  # (a named package's own torch requirement holds torch: its METADATA is the reason)
    for r in run.sc.reqs:
        t = run.tables.get(canonicalize_name(r.name))
        p = locked(o.packages, r.name)
        if t is None or p is None or t.state != "ok":
            continue
        v = public(p.version)
        probs = [q for q in t.problems(v, top) if q.kind == "cuda-library"]
        if not probs:
            continue
        key, first = f"{t.name} {v}", probs[0]
        why = "; ".join(q.text for q in probs)
        # a newer build that brings that CUDA too, passed over for something else (a torch symbol it lacks): said
        newer = [(r2, s2) for r2, s2 in enumerate(run.lines) if line_cuda(s2) == n and
                 (parse_version(s2.torch) or ZERO) > (parse_version(chosen.torch) or ZERO)]
        past = ""
        if newer:
            r2, s2 = newer[0]
            there = t.problems(v, s2)
            said = (there[0].text + (f" (and {len(there) - 1} more)" if len(there) > 1 else "") if there
                    else t.why(v, s2, r2) or "it could not be locked beside it")
            past = f"; torch {s2.torch} ({s2.backend}) brings CUDA {n} too, but {key} cannot load beside it: {said}"
        return (f"torch {chosen.torch} ({chosen.backend}): the newest torch build that brings CUDA {n}, which {key}'s "
                f"native code needs{', and beside which it loads' if past else ''}{past}; torch {top.torch} "
                f"({top.backend}) would fit this target",
                f"torch {chosen.torch} ({chosen.backend}) is locked, not {top.torch} ({top.backend}): {key}'s native "
                f"code needs CUDA {n}, which torch {top.torch}'s {top.backend} build does not bring ({first.text})"
                + past,
                f"torch {top.torch} ({top.backend}) and the torch builds that bring no CUDA {n} ({key}'s native code "
                f"needs CUDA {n}: {why}); took the torch releases whose build brings it")
    return None


def _folded(sc: Scene, r: Requirement, p: LockedPackage) -> str | None:
    """Where the release locked lacks an extra asked for and is taken as what was asked all the same (Facts.
    folded_extras), on what grounds — the names, where the extra brought any (inferred)."""
    name, v, x = canonicalize_name(r.name), public(p.version), ", ".join(sorted(r.extras))
    got = sc.facts.folded_extras(sc.index_for(name), name, v, sc.target, sc.python, r.extras)
    if got is None:
        return None
    decl, held, brought = got
    head = f"{name} {v} has no extra {x} (its METADATA declares no such Provides-Extra); locked as what {r} asks for: "
    if not brought:
        return head + (f"{name} {decl}, the newest release before it that declares it, gives it no requirement "
                       "(nothing is lost)")
    return head + (f"its own requirements hold {held} of the {brought} packages {x} brought in {name} {decl}, the "
                   f"newest release before it that declares it (inferred: {name} took the extra into its own "
                   "requirements)")


def _explained(run: Run, o: Outcome) -> Selection:
    sc = run.sc
    sel, chosen, packages = sc.sel, o.candidate, o.packages
    native_passed, newest_why = _passed(run, o)
    cuda = _held_for_cuda(run, o)
    passed_over = [*([cuda[2]] if cuda else []), *native_passed, *o.passed_over]
    direct: list[DirectPackage] = []
    warnings: list[str] = []
    at_newest: list[str] = []
    for r in sc.reqs:
        name = canonicalize_name(r.name)
        p = locked(packages, name)
        top = sc.newest(r)
        version = public(p.version) if p else None
        held = None
        if p is not None and top is not None and vkey(p) < (parse_version(top) or ZERO):
            held = words.held_back(sc, name, p, top, o.check(name), tuple(o.passed_over), packages,
                                   native=newest_why.get(name) if top == _first(run, name) else None,
                                   fact=_before_cannot(run, o, name, top))
            warnings.append(f"{name} {version} is locked, not its newest release {top}: {held}")
        elif version is not None:
            at_newest.append(f"{name} {version}")
        if p is not None and r.extras and (said := _folded(sc, r, p)):
            warnings.append(said)
        direct.append(DirectPackage(name=name, requirement=str(r), version=version, newest=top, held_by=held))
    reasons = list(sel.reasons)
    base = sel
    if (chosen.torch, chosen.backend) != (sel.torch, sel.backend):
        if cuda is not None:
            first = cuda[0]
            warnings.insert(0, cuda[1])
        else:
            held_by, lacking = words.torch_held_by(sc, chosen, packages, o.check("torch"), native_holds(run, o))
            first = (f"torch {chosen.torch}: the newest torch {'the index serves' if lacking else 'the packages allow'}"
                     f" ({held_by}); torch {sel.torch} would fit this target")
        passed = [r for r in sel.reasons if r.startswith("passed over ")]
        rest = [r for r in chosen.reasons[1:] if not r.startswith("passed over ")]
        reasons = [first, *passed, *rest]
        base = chosen
    if passed_over:
        reasons.insert(1 if reasons else 0, "passed over what this target cannot have: " + "; ".join(passed_over))
    warnings = list(base.warnings) + warnings
    if at_newest:  # after the torch lines (what the packages decided), before the build's own facts
        at = next((i for i, r in enumerate(reasons) if i and not r.startswith("passed over ")), len(reasons))
        reasons.insert(at, "packages at their newest release: " + ", ".join(at_newest))
    return dataclasses.replace(base, reasons=tuple(reasons), warnings=tuple(warnings), direct=tuple(direct),
                               packages=sel.packages)


def _before_cannot(run: Run, o: Outcome, name: str, top: str) -> str | None:
    """Where the newest release of a named package requires a torch other than the one locked, and beside the newest
    such torch line a package named before it cannot load as locked (by its facts): that, in words — the reason the
    decision kept the torch it did, which uv's check (asked beside the locked torch) cannot say."""
    t = run.tables.get(name)
    if t is None or t.state != "ok" or top not in t.versions:
        return None
    treqs = t.torch_reqs(top) or []
    if not treqs or all(torch_admits(r.specifier, o.candidate) for r in treqs):
        return None
    before = [r for r in run.sc.reqs[:next(i for i, r in enumerate(run.sc.reqs) if canonicalize_name(r.name) == name)]]
    for rank, line in enumerate(run.lines):
        if not all(torch_admits(r.specifier, line) for r in treqs):
            continue
        for r in before:
            q = run.tables.get(canonicalize_name(r.name))
            p = locked(o.packages, r.name)
            if q is None or p is None or q.state != "ok":
                continue
            v = public(p.version)
            qreq = q.excluded_by_torch(v, line)
            if qreq is not None:
                why = f"it requires {words.spec_text(qreq)}"
            elif v in q.native and not q.loads(v, line, rank):
                why = f"its native code cannot load there: {q.why(v, line, rank)}"
            else:
                continue
            return (f"{name} {top} requires {'; '.join(words.spec_text(x) for x in treqs)}, and beside torch "
                    f"{line.torch} ({line.backend}) {q.name} {v}, named before it, cannot be locked: {why}")
        return None  # (the newest torch line it admits: where the packages before it can be, uv's check says why)
    return None


def _first(run: Run, name: str) -> str | None:
    t = run.tables.get(name)
    return t.versions[0] if t is not None and t.versions else None


# --- no release of a package beside a line -------------------------------------------------------------------------

def why_none(t: Table, sel: Selection, rank: int, uv: str = "") -> str:
    """Why no release of `t` can be locked beside the line: the facts of the newest releases they rule out (two, then
    a count), and — where uv's words say the rest (`uv`: releases whose facts were not read, an sdist whose
    requirements the index does not serve) — uv's last words for them. A count claims only what was read."""
    reasons: list[str] = []
    ruled, unread, allowed = 0, list[str](), list[str]()
    for v in t.versions:
        treq = t.excluded_by_torch(v, sel)
        if t.lacks_extras(v):
            text = f"{t.name} {v} has no extra {', '.join(t.extras)}"
        elif treq is not None:
            text = f"{t.name} {v} requires {words.spec_text(treq)}"
        elif not t.loads(v, sel, rank):  # (its facts read, a refusal of the rule, or its requirements')
            why = t.why(v, sel, rank)
            text = (f"{t.name} {v}: {why}" if why.startswith(TORCHLESS)
                    else f"{t.name} {v}'s native code cannot load there: {why}")
        else:
            (unread if t.torch_reqs(v) is None else allowed).append(v)
            continue
        ruled += 1
        if len(reasons) < 2:
            reasons.append(text)
    out = "; ".join(reasons)
    if ruled > 2:
        n = len(t.versions)
        out += (f" (and so for each of its {n} releases that install here)" if not (unread or allowed)
                else f" (and so for {ruled} of its {n} releases that install here)")
    if (unread or allowed) and uv:
        said = uv_said(t.name, unread + allowed, uv)
        if unread:
            out += (f"{'; ' if out else ''}{'the other' if ruled else 'its'} release{'s' if len(unread) != 1 else ''}, "
                    f"{t.name} {_some(unread)} (whose requirements the facts read do not show) uv does not lock there "
                    f"either")
        if allowed:
            one = len(allowed) == 1
            out += (f"{'; ' if out else ''}uv does not lock {t.name} {_some(allowed)} there"
                    f"{' either' if out else ''}, though {'its' if one else 'their'} facts allow "
                    f"{'it' if one else 'them'}")
        out += f": {said}"
    return out


def _some(versions: list[str]) -> str:
    return ", ".join(versions[:NAMED]) + (f" and {len(versions) - NAMED} more" if len(versions) > NAMED else "")


def uv_said(name: str, versions: list[str], uv: str) -> str:
    """uv's words for releases of `name` the facts could not read: its facts of those releases, else its conclusion."""
    return _depends(name, versions, uv) or _last_words(uv)


def _depends(name: str, versions: list[str], uv: str) -> str:
    """uv's facts of the form "lmcache<=0.3.2 depends on torch==2.7.0" whose range holds one of `versions` (and "all
    versions of lmcache depend on …")."""
    flex = r"[-_.]".join(re.escape(x) for x in re.split(r"[-_.]+", name))
    spec = r"(?:[<>=!~]=?[\w.+*!-]+(?:,\s*[<>=!~]=?[\w.+*!-]+)*)"
    found = []
    for m in re.finditer(rf"(?<![\w.-])({flex})({spec}?) depends on ([\w.\[\]-]+{spec}?)", uv, re.IGNORECASE):
        try:
            held = SpecifierSet(m[2].replace(" ", ""))
        except InvalidSpecifier:
            continue
        if any(held.contains(v, prereleases=True) for v in versions):
            found.append(f"{m[1]}{m[2]} depends on {m[3].rstrip('.')}")
    for m in re.finditer(rf"\ball versions of ({flex}) depend on ([\w.\[\]-]+{spec}?)", uv, re.IGNORECASE):
        found.append(f"all versions of {m[1]} depend on {m[2].rstrip('.')}")
    return "; ".join(dict.fromkeys(found))


def _last_words(uv: str) -> str:
    """uv's conclusion on one line: its last sentence (the one that says what cannot be locked with what)."""
    text = words.uv_reason(uv, limit=100_000)
    parts = [p for p in re.split(r"(?<=\.)\s+(?=And because|Because)", text) if p]
    last = parts[-1] if parts else text
    return last if len(last) <= 320 else last[:317].rstrip() + "..."


def own_pages(run: Run, err: ClosureError,
              reachable: Callable[[str, str], str | None]) -> tuple[Selection, tuple[LockedPackage, ...]] | None:
    """Where uv found no closure and names a package the user asked for whose builds per torch and CUDA are on pages
    of its own (compat/packages.toml, [[package-builds]]; a page per torch, not per release): that page for each of
    the torch lines, newest first, whose CUDA it has builds for (4 at most), until one locks. A page this machine does
    not reach is asked once (5 s) and named beside uv's answer. None where no such package is named."""
    from tritonlock.compat import pkgbuilds

    sc = run.sc
    intent = sc.intent
    rows = {b.name: b for b in (*pkgbuilds.curated().values(), *intent.package_builds)}
    said = re.sub(r"[-_.]+", "-", str(err).lower())
    for req in sc.reqs:
        name = canonicalize_name(req.name)
        row = rows.get(name)
        if row is None or "{version}" in row.index or name not in said:
            continue
        tried: list[str] = []
        down: dict[str, str | None] = {}
        seen: set[tuple[str | None, str | None]] = set()
        for x in run.lines:
            choice = pkgbuilds.choose(name, "", x.torch or "", x.backend or "", cuda_major=None,
                                      extra=intent.package_builds)
            if choice is None or (x.torch, x.backend) in seen or len(seen) >= 4:
                continue
            seen.add((x.torch, x.backend))
            host = choice.url.split("/")[2] if "://" in choice.url else choice.url
            if host not in down:
                down[host] = reachable(choice.url, name)
                if down[host]:
                    tried.append(f"{name}'s builds at {choice.url} (not reachable from here: {down[host]})")
            if down[host]:
                continue
            own = ((choice.name, choice.url, "flat" if choice.flat else "simple"),)
            scene = dataclasses.replace(sc, package_indexes=own)
            found, uv = Search(scene, [x], run.compile, warm=True).attempt([str(r) for r in sc.reqs])
            if found is None:
                tried.append(f"{name}'s build at {choice.url} (uv finds no closure with it)")
                continue
            o = Outcome(candidate=found[0], packages=found[1], package_indexes=own,
                        passed_over=(f"{name} from the default index (uv finds no closure with it there: "
                                     f"{_said(err)}); took {choice.why}, for torch {x.torch} ({x.backend})",))
            sel, packages = finish(run, o, run.compile)
            if sel.ok and (x.torch, x.backend) != (sc.sel.torch, sc.sel.backend):
                top = sc.sel
                reasons = [f"torch {x.torch} ({x.backend}): the newest torch build {name}'s own index has a build for "
                           f"({choice.url}); torch {top.torch} ({top.backend}) would fit this target", *sel.reasons[1:]]
                warning = (f"torch {x.torch} ({x.backend}) is locked, not {top.torch} ({top.backend}): {name}'s builds "
                           "on its own index are made per torch and CUDA, and the default index serves none uv can "
                           f"lock ({_said(err)})")
                sel = dataclasses.replace(sel, reasons=tuple(reasons), warnings=(warning, *sel.warnings))
            return sel, packages
        if tried:
            raise words.also_tried(err, tried, sc.intent_file)
    return None


def _said(err: Exception) -> str:
    """uv's finding in a line: its error and first causes (a build's own output left out)."""
    said = [ln.strip().removeprefix("error: ") for ln in str(err).splitlines()
            if ln.startswith(("error: ", "  cause: "))]
    text = "; ".join(said[1:3] or said[:1]) or str(err).splitlines()[0]
    return text[:300]


# --- what the conflicts say of a package no release of which can be locked (decide's) ---------------------------

def with_direct(run: Run, sel: Selection) -> Selection:
    return dataclasses.replace(sel, direct=tuple(DirectPackage(name=canonicalize_name(r.name), requirement=str(r))
                                                 for r in run.sc.reqs))


def native_conflict(run: Run, sel: Selection, found: list[Problem], rejected: list[str], left: str | None = None) -> str:
    from tritonlock.native import judge

    structural = [p for p in found if p.structural]  # (no release or line changes it: that first, nothing to list)
    return judge.conflict(sel, structural or found, [] if structural else rejected,
                          left=None if structural else left, exists=run.sc.served)


def hopeless(run: Run, r: Requirement, uv: str = "") -> str | None:
    """A named package none of whose releases can be locked beside any line by its facts: the conflict, naming the
    package, the fact and the least change (None: some release can). With `uv` (uv's words where it found no lock on
    any line, and they name the package): the releases whose requirements the facts could not read are left to them,
    which the conflict quotes."""
    from tritonlock._term import human_size

    t = run.tables.get(canonicalize_name(r.name))
    if t is None or t.state != "ok" or not t.versions:
        return None
    if uv and not re.search(r"(?<![\w.-])" + r"[-_.]".join(map(re.escape, re.split(r"[-_.]+", t.name))) + r"(?![\w])",
                            uv, re.IGNORECASE):
        return None
    if any(t.first(sel, rank, known=bool(uv)) is not None for rank, sel in enumerate(run.lines)):
        return None
    admitted = [(rank, sel, i) for rank, sel in enumerate(run.lines)
                if (i := t.meta_first(sel)) is not None and i >= 0]
    if not admitted:
        return None  # its torch requirements: uv's words and the host's facts say it (words.no_torch_fits)
    rank, sel, i = admitted[0]
    v = t.versions[i]
    found = t.problems(v, sel)
    if not found and rank in t.refused.get(v, {}):  # (what the rule found beside the line's torch wheel: its symbols)
        found = [refused_problem(run, t, v, rank)]
    if not found and t.gate is not None and t.gate(v, sel, rank) is not None:
        # (it cannot be locked because no release of a package with native code it requires can load: that one's
        # facts are the conflict's, and the fix names the package named as what to lock elsewhere)
        d = run.deps.get(run.gated_by.get((t.name, v), ""))
        if d is not None:
            dv = next((x for x in d.versions if x in d.native and not d.loads(x, sel, rank)), None)
            if dv is not None:
                found = d.problems(dv, sel) or [refused_problem(run, d, dv, rank)]
                t = d
    if not found:
        return None
    t.read_torch_reqs(t.versions if uv else t.versions[t.stopped:] if t.stopped is not None else [])
    unknown = [x for x in t.versions if t.torch_reqs(x) is None] if uv else []
    read = [x for x in t.versions if x in t.native and x not in unknown]
    rejected = [f"{t.name} {x}" for x in read if t.excluded_by_torch(x, sel) is None]
    left = (f"no release of {t.name} that {r} admits is left" + (f" (of {len(t.versions)} that install here, "
            f"{len(rejected)} admit torch {sel.torch} and none of them can load)" if len(rejected) > 1 else ""))
    rest = [x for x in t.versions[t.stopped:] if x not in t.native and t.excluded_by_torch(x, sel) is None] \
        if t.stopped is not None else []
    if rest:
        span = f"the {len(rest)} releases of {t.name} older than {read[-1]} ({rest[0]} … {rest[-1]})" if len(
            rest) > 1 else f"{t.name} {rest[0]}"
        left = (f"not read: {span} — a "
                f"resolve reads at most {human_size(_pkgload.READ_BUDGET)} of a package's wheels looking for a release that can "
                f"load: resolve again to read on (what was read is kept), or name one in "
                f"{words.packages_key(run.sc.intent.path)} (\"{t.name}=={rest[0]}\")")
    if unknown:
        them = ", ".join(unknown[:6]) + (f" and {len(unknown) - 6} more" if len(unknown) > 6 else "")
        left += (f"; uv does not lock {'its other releases' if len(unknown) > 1 else 'the other release'}, {t.name} "
                 f"{them} (whose requirements the facts read do not show), either: "
                 f"{uv_said(t.name, unknown, uv)}")
    return native_conflict(run, with_direct(run, sel), found, rejected, left)
