"""The user's packages in the decision, as one search. The facts that decide what can load where are read first —
per torch line the target runs, each named package's releases by their torch requirements (METADATA) and their
native code (the wheels' binary facts: CUDA major, torch build and release, GPU code), a batch at a time — and become
per-line constraints: a release that cannot load beside line T is passed over for T only. Then uv is asked for the
lines the facts leave open, the most promising first (lines alike compiled together), each answer checked and its
closure judged by the native-code rule, until no line left can beat the best answer by the stated order: the
packages in the order the user wrote them, each at its newest release lockable with the ones before it, then torch
newest. There is no round limit: the search ends when the facts are exhausted. While uv reads the pages online (the
warm-up: uv's own compile, with its network time), the search runs on uv's cache alone; it stands where uv, asked
each question again once the pages are read, answers alike (_pkgcompile.Ahead)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tritonlock.decide import _pkgexplain as explain
from tritonlock.decide import _pkgwords as words
from tritonlock.decide._pkgcheck import Impossible, Search
from tritonlock.decide._pkgcompile import Ahead, memo, warm_up
from tritonlock.decide._pkgfacts import Facts, marker_env, parse_version, public
from tritonlock.decide._pkgfallback import fallback, least_fix, recent_floors
from tritonlock.decide._pkgjudge import judge_of as _judge, judged, line_exports as _line_exports, native_cause, refuse
from tritonlock.decide._pkgload import Env, Table, candidate_lines, choose_build
from tritonlock.decide._pkgpassed import pass_torchless, passed_everywhere
from tritonlock.decide._pkgscene import (NONE, ZERO, Compile, Fallback, Fix, Key, Native, Outcome, Run, Scene,
                                         deferred, locked, out_of_search, torch_served)
from tritonlock.decide.lockplan import lock_plan
from tritonlock.decide.requirements import user_requirements, with_spec
from tritonlock.errors import ClosureError, ResolveError, TritonlockError
from tritonlock.models import Conflict, Intent, LockedPackage, Selection

if TYPE_CHECKING:
    from tritonlock.compat.matrix import Matrix
    from tritonlock.native.rule import Problem

# --- the decision --------------------------------------------------------------------------------------------------

def decide(sel: Selection, candidates: tuple[Selection, ...], intent: Intent, matrix: Matrix, default_index: str,
           *, compile: Compile, facts: Facts | None = None, default_python: str = "",
           host: Callable[[], tuple[Selection, ...]] | None = None, native: Native | None = None,
           more_lines: Callable[[int], tuple[Selection, ...]] | None = None,
           say: Callable[[str], None] | None = None,
           reachable: Callable[[str, str], str | None] | None = None) -> tuple[Selection, tuple[LockedPackage, ...]]:
    """Lock one target whose intent names packages: among the torch lines the target runs (`candidates`, newest
    first, and with `cuda = "auto"` the builds of other CUDA majors, `more_lines(n)`), the answer the stated order
    picks (see the module). `native`: the rule on each closure (None: off). A named package that only an ancient
    release could satisfy, one none of whose releases can load here, or one that a package named after it would
    hold back, is a conflict: the returned selection is not ok, its conflict names the packages and the least
    fix, and no packages are locked for it."""
    facts = facts or Facts()
    say = say or (lambda text: None)
    reqs = user_requirements(intent)
    python = sel.python or default_python
    lines = candidate_lines(candidates or (sel,), intent, more_lines)
    sc = Scene(sel=sel, candidates=tuple(candidates or (sel,)), intent=intent, matrix=matrix, facts=facts, reqs=reqs,
               python=python, default_python=default_python, default_index=default_index, host=host,
               seen=native.seen if native is not None else None)
    exports = _line_exports(facts, python)

    judged: dict[tuple[object, ...], list[Problem]] = {}  # (what the rule found: the second search's too)

    def new_env(lenient: bool, noted: list[bool]) -> Env:
        return Env(target=sel.target, python=python, facts=facts, read=native.facts if native is not None else None,
                   judge=_judge(matrix, intent, sc.reach, exports, lenient, noted, judged) if native else None,
                   choose=functools.partial(choose_build, intent), say=say)

    noted: list[bool] = []  # (the first search's: whether the rule met a failure a package's own `try` catches)
    env = new_env(False, noted)
    markers = marker_env(sel.target, python)
    named = [r for r in reqs if r.url is None and (r.marker is None or r.marker.evaluate(markers))]
    raw, compile = compile, memo(compile)
    # uv is asked at once (in the background) for the newest lines, while the facts are read
    warmup = warm_up(sc, lines, compile) if native is not None else None
    try:
        # the packages' pages and torch's (which releases each torch index serves), read side by side
        facts.prefetch([(sc.index_for(r.name), r.name) for r in named]
                       + [(i, "torch") for i in dict.fromkeys(c.index for c in lines if c.index)])
        lines = [c for c in lines if torch_served(facts, c)] or lines
        def new_tables(env: Env) -> dict[str, Table]:
            return {canonicalize_name(r.name): Table(env=env, name=canonicalize_name(r.name), index=sc.index_for(r.name),
                                                     req=r, extras=tuple(sorted(r.extras))) for r in named}

        tables = new_tables(env)
        for r in named:  # a package no release of which installs on the target: its conflict, before uv is asked
            t = tables[canonicalize_name(r.name)]
            if t.state == "missing":
                raise words.not_served(sc, t.name, t.index)
            if t.state == "none-fit":
                return _conflicted(sel, words.no_file_here(sc, t.name, t.index, r)), ()

        def search(asked: Compile, env: Env, tables: dict[str, Table], noted: list[bool],
                   native: Native | None = native) -> tuple[Selection, Any]:
            scn = sc if native is None else dataclasses.replace(sc, seen=native.seen)  # (the held rule's, or as is)

            def relax() -> Run:  # (the second search: a fresh run whose rule is lenient, see _decided)
                again: list[bool] = []
                env = new_env(True, again)
                return _gated(Run(sc=scn, lines=lines, tables=new_tables(env), deps={}, env=env, compile=asked,
                                  native=native, say=say, warm=True, reachable=reachable, lenient=True, noted=again))

            return _decided(_gated(Run(sc=scn, lines=lines, tables=tables, deps={}, env=env, compile=asked,
                                       native=native, say=say, warm=warmup is not None, reachable=reachable,
                                       noted=noted, relax=relax)), reachable)

        if warmup is None:
            return search(compile, env, tables, noted)
        # while uv reads the pages online (the warm-up), the search asks uv's cache alone: its answer stands where
        # uv, asked each question again once the warm-up is done, answers as the cache did — else it runs again
        ahead = Ahead(compile, raw, warmup)
        held, keep = native.held() if native is not None else (None, lambda: None)  # (kept once confirmed)
        try:
            found: Any = search(ahead, env, tables, noted, held)
        except TritonlockError as err:
            found = err
        if ahead.confirmed():
            warmup.stop()  # (the decision is made: uv's background answer, if still to come, is not needed)
            keep()
            if isinstance(found, TritonlockError):
                raise found
            return found  # type: ignore[no-any-return]
        env = new_env(False, noted := [])
        return search(compile, env, new_tables(env), noted)
    finally:
        if warmup is not None:  # (nothing of the decision outlives it: uv answers within _WARM_UP_S)
            warmup.wait()


def _gated(run: Run) -> Run:
    for t in run.tables.values():
        t.gate = functools.partial(_gate, run, t)
    return run


def _decided(run: Run, reachable: Callable[[str, str], str | None] | None) -> tuple[Selection,
                                                                                     tuple[LockedPackage, ...]]:
    """decide(), once the facts' tables are laid out: the search, then what its answer means. Where the rule found a
    module a package loads inside a `try` that catches its failure (torchao's C++ extensions beside a torch they
    were not built for), a second search lets such failures pass for the packages the user does not name (the import
    works without those modules: a warning says what is off); its answer is taken where it beats the first by the
    stated order (unsloth's newest, which pins torch 2.4.1, beside a torchao whose extensions need a newer torch),
    else the first's (a torchao whose extensions load). The first search stops where the rule first finds such a
    failure: every closure it takes the second takes too, so it can at best tie the second's answer, and it is asked
    at that answer's point alone (_at) — not line after line through what the second search has already weighed
    (unsloth for an H200 target: 4.2 s -> 2.4 s). Where the second has no answer with every named package, the first
    runs whole; where that finds nothing and the second locks the named packages in part, the second's conflict is
    said — it names the package left out, not a module whose import works without it."""
    relax = run.relax if run.native is not None else None
    best: Outcome | None = None
    try:
        best, cut = _search(run, complete=False, until_noted=relax is not None), False
    except _Noted:  # (the first search stopped where the rule first found such a failure)
        cut = True
    if relax is not None and run.noted:
        other = relax()
        run.say("weighing again with the failures packages catch themselves let pass (their imports work)")
        lenient = _search(other, complete=False)
        got = lenient if lenient is not None and other.structural is None else None
        if got is not None and got.prefix is None and cut:
            # every closure the first search takes, the second takes too: the first can at best tie its answer —
            # asked at that answer's point alone; where it ties, its answer is taken (its modules all load)
            tie = _at(run, other.key(got), got)
            run, best = (run, tie) if tie is not None else (other, got)
        else:
            if cut:
                best = _search(run, complete=False)  # (the first search whole after all: memo's answers)
            if got is not None and (
                    (got.prefix is None and (run.structural is not None or best is None
                                             or other.key(got) > run.key(best)))
                    # a part answer, where the first search has none: only failures the second lets pass stand in
                    # the way of its packages, and its conflict names the package it leaves out
                    or (got.prefix is not None and best is None and run.structural is None)):
                run, best = other, got
    sc, sel, lines, compile = run.sc, run.sc.sel, run.lines, run.compile
    reqs = sc.reqs
    if run.structural is not None:
        s, found = run.structural
        return _conflicted(sel, explain.native_conflict(run, s, found, [])), ()
    if best is None:
        return _nothing(run, reachable)
    if best.prefix is not None:
        return _conflicted(sel, _left_out(run, best)), ()
    demoted = [d for d in best.demoted if (p := locked(best.packages, d.name)) is not None
               and (parse_version(public(p.version)) or ZERO) < (parse_version(d.top) or ZERO)]
    if demoted:
        return _conflicted(sel, words.demoted(sc, demoted[0], best.packages, best.candidate)), ()
    # (the checks of a fix ask uv with the lines of the answer's index, what the answer was passed)
    search = Search(dataclasses.replace(sc, package_indexes=best.package_indexes),
                    [best.candidate, *(c for c in lines if c.index == best.candidate.index and c != best.candidate)],
                    compile, constraints=best.constraints, no_build=best.no_build, warm=True)
    for r in reqs:
        if (fb := fallback(sc, best.packages, r)) is not None and pass_torchless(run, fb):
            return _decided(run, reachable)  # (releases that name no torch below one that does: passed over)
        if fb is not None:
            searched, none = _fix_by_search(run, best, fb)
            fix = searched or least_fix(sc, search, best, fb)
            if none and not (fix.change or fix.others):  # (mutual: others too)
                fix = native_cause(run, search, fb, fix)  # (the search found none, uv's checks no other side)
            return _conflicted(sel, words.fallback_conflict(sc, fb, fix, best.passed_over)), ()
    best = explain.torch_checked(run, best, search)
    return explain.finish(run, best, compile)


def _gate(run: Run, t: Table, version: str, sel: Selection, rank: int) -> str | None:
    """Whether a named package's release can be locked beside a line by the facts of the packages with native code
    it requires (those the rule refused a release of: their tables): where none of the releases its requirement
    admits can load there, it cannot either — said without asking uv, line after line."""
    if not run.deps:
        return None
    key = (t.name, version, sel.torch, sel.backend, rank, run.epoch)
    if key in run.gated:
        return run.gated[key]
    run.gated[key] = None  # (while it is worked out: a package that requires itself in a circle does not loop)
    said = None
    # (the requirements that apply there: their markers weighed, an extra's own extras too — sglang[all] -> [srt])
    reqs = t.env.facts.requires(t.index, t.name, version, sel.target, run.sc.python, t.extras) or []
    for r in reqs:
        d = run.deps.get(canonicalize_name(r.name))
        if d is None or d is t:
            continue
        if d.first(sel, rank, spec=r.specifier) is None and d.stopped is None and d.versions:
            said = (f"it requires {words.spec_text(r)}, and no release of {d.name} it admits can load beside torch "
                    f"{sel.torch} ({sel.backend})")
            run.gated_by[(t.name, version)] = d.name
            break
    run.gated[key] = said
    return said


def _conflicted(sel: Selection, message: str) -> Selection:
    """The target's decision as a conflict: nothing of the torch the host alone would allow is claimed."""
    return Selection(target=sel.target, ok=False, conflict=Conflict(target=sel.target.name, message=message))


# --- the search over lines --------------------------------------------------------------------------------------

class _Noted(Exception):
    """_search's `until_noted`: the rule found a failure a package's own `try` catches (the second search is run)."""


def _search(run: Run, *, complete: bool, until_noted: bool = False) -> Outcome | None:
    """The best answer by the stated order among the lines (with `complete`: only answers that lock every named
    package). Each line's bound (what its facts allow at best) orders the work: the most promising line is refined
    with its native facts, then compiled with the lines alike it; the search stops when no line left can beat the
    best answer. `until_noted`: _Noted raised once the rule has found a failure a package's own `try` catches."""
    done: set[int] = set()
    settled: set[int] = set()  # lines uv was asked for
    bounds: dict[int, Any] = {}
    fresh: set[int] = set()  # lines whose bound is their native facts' as the tables stand now
    best: Outcome | None = None
    best_key: Key | None = None
    while True:
        if until_noted and run.noted:
            raise _Noted
        top: int | None = None
        top_bound: Any = None
        second: Any = None  # the runner-up's bound: what the top line must beat
        for rank in range(len(run.lines)):
            if rank in done:
                continue
            b = bounds.get(rank)
            if b is None or (best_key is not None and b <= best_key):
                b = run.bound(rank, best_key, native=rank in fresh)
                if out_of_search(b, best_key, complete):
                    done.add(rank)
                    continue
                bounds[rank] = b
            if top_bound is None or b > top_bound:
                top, top_bound, second = rank, b, top_bound
            elif second is None or b > second:
                second = b
        if top is None:
            return best
        if top not in fresh or deferred(top_bound):
            # its native facts, read now (the bound only drops), as far as it takes to know whether it still beats
            # the runner-up: a line whose newest releases cannot load reads no older one while another may win
            fresh.add(top)
            bounds[top] = run.bound(top, best_key, native=True, beat=second)
            if deferred(bounds[top]) and deferred(top_bound) and bounds[top] >= top_bound:
                # (no lower than before: the runner-up is deferred at the same release — the line's own, read whole)
                bounds[top] = run.bound(top, best_key, native=True)
            if out_of_search(bounds[top], best_key, complete):
                del bounds[top]
                done.add(top)
            continue
        # the lines alike it (its index, the same facts): compiled together, uv picking torch among them (a line
        # whose facts rule out a named package is in it too: uv's words then name what holds torch)
        group = [r for r in range(len(run.lines)) if r not in settled
                 and run.alike(r, top)] if NONE not in top_bound else [top]
        outcome = _settle(run, top, group or [top], top_bound, complete=complete)
        fresh.clear()  # (what the rule refused in the closure may lower other lines' bounds)
        if run.structural is not None:
            return None
        if outcome is _AGAIN:  # (each time one release more is passed over beside a line: the facts run out)
            continue
        done.update(group or [top])
        settled.update(group or [top])
        if complete and isinstance(outcome, Outcome) and outcome.prefix is not None:
            continue  # (uv locked the packages only in part there: not an answer with them all)
        if isinstance(outcome, Outcome) and (best_key is None or run.key(outcome) > best_key):
            best, best_key = outcome, run.key(outcome)


_AGAIN = object()  # _settle's answer where the rule refused what the answer locked: the lines are weighed again


def _at(run: Run, key: Key, other: Outcome) -> Outcome | None:
    """The search's answer at `key` alone (the second search's answer's: its line, each named package at its
    release), None where there is none — its facts leave none there, uv finds none, or the rule refuses each. The
    named packages are asked pinned, and no newer release is checked (the second search found none that locks);
    what that search found of the named packages' newer releases is the answer's too."""
    rank = run.rank(other.candidate)
    if rank < 0:
        return None
    pins: dict[str, str] = {n: p.version for p in other.packages if (n := canonicalize_name(p.name)) in run.tables}
    while True:
        bound = run.bound(rank, None, native=True)  # (with no best to beat: None or a key)
        if bound is None or bound < key:
            return None
        outcome = _settle(run, rank, [rank], bound, pins=pins)
        if run.structural is not None:
            run.structural = None  # (not this search's finding: the first search's answer elsewhere stands)
            return None
        if outcome is not _AGAIN:
            break
    if not isinstance(outcome, Outcome) or run.key(outcome) < key:
        return None
    return dataclasses.replace(outcome, checks=other.checks, demoted=other.demoted)


def _settle(run: Run, top: int, group: list[int], bound: Key, *, complete: bool = False,
            pins: dict[str, str] | None = None) -> Outcome | None | object:
    """uv's answer for the group (the line `top` and the lines alike it), checked, with its closure judged by the
    native-code rule: the answer (None where uv finds none); _AGAIN where the rule refused a release in it — that
    release is passed over beside the line uv chose (with the releases after it that fail there by their own facts,
    read a batch at a time), and the lines are weighed again (the one uv chose may now be worse than another).
    With `complete`, a group uv finds no lock for is None: the packages in part (_shorter's) are no answer then.
    `pins`: the named packages asked at these releases alone (_at's), nothing in part."""
    sc, rep = run.sc, run.lines[top]
    seeing = run.seeing
    cut = next((i for i, c in enumerate(bound[:len(seeing)]) if c == NONE), None)
    reqs = [r for r in sc.reqs if cut is None or canonicalize_name(r.name) not in
            {canonicalize_name(q.name) for q in seeing[cut:]}]
    if pins is not None:
        complete = True
        reqs = [Requirement(with_spec(r, f"=={pins[n]}")) if r.url is None and (n := canonicalize_name(r.name)) in pins
                else r for r in reqs]
    while True:
        own: list[tuple[str, str, str]] = []
        constraints: list[str] = []
        tops: dict[str, str] = {}
        unreached = False
        for t in run.all_tables():
            constraints += [f"{t.name}!={v}" for v in t.excluded(rep, top)]
            if t.name in run.tables:
                top_v = pins[t.name] if pins is not None and t.name in pins else t.top(rep, top)
                if top_v is not None:
                    tops[t.name] = top_v
                    choice = t.own(top_v, rep)
                    if choice is not None and run.unreached(choice.url, t.name):
                        t.own_failed.add(top_v)  # as where its index did not serve that build: weighed again
                        unreached = True
                    elif choice is not None:
                        own.append((choice.name, choice.url, "flat" if choice.flat else "simple"))
        if unreached:
            continue
        sel_group = [run.lines[r] for r in group]
        span = (f"torch {sel_group[-1].torch}–{sel_group[0].torch}" if len(sel_group) > 1
                else f"torch {rep.torch} ({rep.backend})")
        run.say(f"asking uv for the packages with {span}")
        search = Search(dataclasses.replace(sc, package_indexes=tuple(own)), sel_group, run.compile,
                        constraints=tuple(dict.fromkeys(constraints)), warm=run.warm,
                        no_build=tuple(dict.fromkeys([*sc.intent.no_build, *run.unbuilt])))
        try:
            outcome = search.run(reqs, tops if pins is None else {})
        except (ClosureError, Impossible) as err:
            run.warm = True
            run.unbuilt += [n for n in search.unbuilt if n not in run.unbuilt]
            if own and isinstance(err, ClosureError):  # a package's own index did not serve that build
                for name, _, _ in own:
                    run.tables[name].own_failed.add(tops[name])
                continue
            if complete or not isinstance(err, ClosureError) or (
                    shorter := _shorter(run, search, reqs, tops, len(seeing) if cut is None else cut)) is None:
                run.failures.append((rep.index or "", err))
                return None
            outcome = dataclasses.replace(shorter, left_uv=err.uv or str(err))
            cut = outcome.prefix
        run.warm = True
        run.unbuilt += [n for n in search.unbuilt if n not in run.unbuilt]
        outcome = dataclasses.replace(outcome, prefix=cut)
        if run.native is None:
            return outcome
        found = judged(run, outcome)
        if not found:
            return outcome
        structural = [p for p in found if p.structural]
        if structural:
            run.structural = (explain.with_direct(run, outcome.candidate), structural)
            return None
        if not refuse(run, outcome, found):  # nothing new to pass over: the closure's problem is the conflict
            run.structural = (explain.with_direct(run, outcome.candidate), found)
            return None
        return _AGAIN


def _shorter(run: Run, search: Search, reqs: list[Requirement], tops: dict[str, str], n: int) -> Outcome | None:
    """Where uv finds no lock for the named packages whole beside a group (the facts read left each of them a
    release there: a release whose requirements the index does not serve, read only by uv), the packages as far as
    they lock, in the user's order: the first `k` named packages with the ones after them left out (its `prefix`),
    the longest that locks — the stated order's answer there is then the conflict naming the first left out. None
    where even the first alone does not lock, or where the first left out cannot be locked on any line by its facts
    (a package with no wheel under no-build: its own failure, not the pair's)."""
    named = [canonicalize_name(r.name) for r in run.seeing]
    for k in range(n - 1, 0, -1):
        out = set(named[k:])
        try:
            found = search.run([r for r in reqs if canonicalize_name(r.name) not in out],
                               {n_: v for n_, v in tops.items() if n_ not in out})
        except (ClosureError, Impossible):
            continue
        # (the first left out must be lockable on some line by its facts — with wheels only where no-build says so:
        # else its failure is its own, whatever comes before it, and said as such, not as the earlier one's doing)
        t = run.tables[named[k]]
        wheels = ":all:" in search.no_build or named[k] in search.no_build
        if not any(t.first(sel, rank, known=True, wheels=wheels) is not None for rank, sel in enumerate(run.lines)):
            return None
        return dataclasses.replace(found, prefix=k)
    return None


# --- no answer, or one that leaves a named package out ----------------------------------------------------------

def _nothing(run: Run, reachable: Callable[[str, str], str | None] | None) -> tuple[Selection, tuple[LockedPackage,
                                                                                                       ...]]:
    """No line gave an answer: a named package its facts rule out everywhere, a package whose builds are on pages
    of its own, or uv's words with the host's facts."""
    sc = run.sc
    for r in sc.reqs:
        said = explain.hopeless(run, r)
        if said is not None:
            return _conflicted(sc.sel, said), ()
    uv = next((e.uv or str(e) for _, e in run.failures if isinstance(e, ClosureError)), "")
    for r in sc.reqs if uv else ():  # (a release the facts could not read, which uv ruled out on every line)
        said = explain.hopeless(run, r, uv)
        if said is not None:
            return _conflicted(sc.sel, said), ()
    err = next((e for _, e in run.failures if isinstance(e, ClosureError)), None)
    if err is not None and reachable is not None:
        found = explain.own_pages(run, err, reachable)
        if found is not None:
            return found
    why = words.no_torch_fits(sc, run.failures, passed_everywhere(run))
    if isinstance(why, ClosureError):
        raise why  # uv's own error stands (an index that does not answer)
    return _conflicted(sc.sel, str(why)), ()


def _left_out(run: Run, best: Outcome) -> str:
    """The best answer by the stated order leaves a named package out: no release of it can be locked beside the
    ones named before it as they are (or anywhere). The conflict names both, with the best answer that has them
    all as the fix (checked: uv locked it)."""
    seeing = run.seeing
    assert best.prefix is not None
    missing = seeing[best.prefix]
    said = explain.hopeless(run, missing)
    if said is not None:
        return said
    full = _search(run, complete=True) if run.structural is None else None
    before: list[tuple[str, str]] = [(canonicalize_name(r.name), public(p.version)) for r in seeing[:best.prefix]
              if (p := locked(best.packages, r.name)) is not None]
    t = run.tables[canonicalize_name(missing.name)]
    rank = run.rank(best.candidate)
    why = explain.why_none(t, best.candidate, rank, best.left_uv)
    pre = _prerelease(run, missing, before) if run.structural is None else None
    return words.left_out(run.sc, canonicalize_name(missing.name), before, best.candidate, why, full, pre)


def _prerelease(run: Run, missing: Requirement, before: list[tuple[str, str]]) -> tuple[str, Outcome] | None:
    """Where the package left out has a pre-release newer than its every release (a requirement that asks for
    pre-releases has its newest among them already):
    the best answer by the stated order with that pre-release asked for, searched over every line as the first was
    (the native rule judging it as any release) — the pre-release and that answer, where it keeps the packages named
    before it where they are (`before`); None otherwise."""
    sc = run.sc
    name = canonicalize_name(missing.name)
    t = run.tables[name]
    if missing.url:
        return None
    newest = parse_version(t.every[0]) if t.every else None
    pre = [v for v in sc.facts.prereleases(t.index, name) or ()
           if (pv := parse_version(v)) is not None and (newest is None or pv > newest)
           and missing.specifier.contains(v, prereleases=True)]
    if not pre:
        return None
    version = pre[-1]
    req = Requirement(with_spec(missing, f">={version}"))
    tables = {**run.tables, name: Table(env=run.env, name=name, index=t.index, req=req, extras=t.extras)}
    alt_run = dataclasses.replace(run, sc=dataclasses.replace(sc, reqs=[req if canonicalize_name(r.name) == name
                                                                        else r for r in sc.reqs]),
                                  tables=tables, failures=[], structural=None)
    tables[name].gate = functools.partial(_gate, alt_run, tables[name])
    alt = _search(alt_run, complete=True)
    if alt is None or alt.prefix is not None or alt_run.structural is not None:
        return None
    kept = all((p := locked(alt.packages, n)) is not None and public(p.version) == v for n, v in before)
    return (version, alt) if kept else None


def _fix_by_search(run: Run, best: Outcome, fb: Fallback) -> tuple[Fix | None, bool]:
    """The best answer by the stated order with the stand-in's package at a recent release (`fb.since` or newer),
    searched over every line as the first was: where it locks with packages named before it moved down (each to a
    release that is an answer itself), holding those at most there is the fix, checked by that answer. And whether
    that search found no answer at all (the others held at their recent floors)."""
    sc = run.sc
    # (the others above their releases that only stand in: uv, free to take them, read vLLM down to 0.1.2 a line)
    floors = recent_floors(sc, {n: t.index for n, t in run.tables.items()}, fb)
    alt = _held_recent(run, floors)
    if alt is None and run.relax is not None and run.noted:
        # (the answer came from the first search, where a failure a package's own `try` catches refuses what it
        # finds: sglang 0.5.3-0.5.10's torchao 0.9.0, whose extensions need torch 2.6 — the second search's rule
        # lets that pass, as it did for the answer; held recent, only it may find the fix)
        alt = _held_recent(run.relax(), floors)
    if alt is None or alt.prefix is not None:
        return None, alt is None
    mine = locked(alt.packages, fb.name)
    moved = [(canonicalize_name(r.name), q) for r in sc.reqs if canonicalize_name(r.name) != fb.name
             and (q := locked(alt.packages, r.name)) is not None and (p := locked(best.packages, r.name)) is not None
             and (parse_version(public(q.version)) or ZERO) < (parse_version(public(p.version)) or ZERO)]
    if mine is None or not moved or any(fallback(sc, alt.packages, r) is not None for r in sc.reqs):
        return None, False
    return Fix(uv="", change=", ".join(f'"{n}<={public(q.version)}"' for n, q in moved),
               gives=", ".join([f"{fb.name} {public(mine.version)}", *(f"{n} {public(q.version)}" for n, q in moved)])
               + f" with torch {alt.candidate.torch}", others=tuple(n for n, _ in moved)), False


def _held_recent(run: Run, floors: dict[str, str]) -> Outcome | None:
    """The search's answer over every line with each package of `floors` at its floor or newer."""
    sc = run.sc
    reqs = [Requirement(with_spec(r, f">={floors[n]}")) if (n := canonicalize_name(r.name)) in floors else r
            for r in sc.reqs]
    tables = dict(run.tables)
    for name in floors:
        if (old := run.tables.get(name)) is not None:
            req = next(r for r in reqs if canonicalize_name(r.name) == name)
            tables[name] = Table(env=run.env, name=name, index=old.index, req=req, extras=old.extras)
            tables[name].native.update(old.native)
            tables[name].refused.update(old.refused)
    alt_run = dataclasses.replace(run, sc=dataclasses.replace(sc, reqs=reqs), tables=tables, failures=[],
                                  structural=None)
    return _search(alt_run, complete=True)


__all__ = ["Native", "ResolveError", "decide", "lock_plan"]
