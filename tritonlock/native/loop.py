"""decide → lock → decide: the packages decision (tritonlock.decide.packages), the lock stage's binary facts of the
closure it locks (tritonlock.native.read's reader, handed in), and the native-code rule on them
(tritonlock.native.judge); a closure that breaks the rule is decided again until it is a lock or a conflict.
tritonlock.project orchestrates: it hands this module the reader and what to read of a closure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tritonlock.errors import ClosureError
from tritonlock.models import Intent, LockedPackage, Selection

if TYPE_CHECKING:
    from collections.abc import Callable

    from tritonlock.compat.matrix import Matrix
    from tritonlock.decide._pkgfacts import Facts
    from tritonlock.native.judge import Wanted
    from tritonlock.native.read import Reader

# How many times the native-code rule may send one target's decision back (each round passes over the releases
# whose native code cannot load there: the package's own build for the torch's CUDA first, then older releases)
NATIVE_ROUNDS = 4



def _said(err: Exception) -> str:
    """uv's finding in a line: its error and first causes (a build's own output left out)."""
    said = [ln.strip().removeprefix("error: ") for ln in str(err).splitlines()
            if ln.startswith(("error: ", "  cause: "))]
    text = "; ".join(said[1:3] or said[:1]) or str(err).splitlines()[0]
    return text[:300]


def _own_first(intent: Intent, c: tuple[Selection, ...],
               err: str) -> tuple[list[tuple[str, Selection, Any]], list[str]]:
    """Where uv found no closure and names a package the user asked for whose builds per torch and CUDA are on an index
    of its own (compat/packages.toml, [[package-builds]]; a page per torch, not per release): that index for each of
    the torch choices, newest first, whose CUDA it has builds for (4 at most), and what could not be asked (an index
    this machine does not reach: asked once, 5 s)."""
    import re
    from urllib.parse import urlsplit

    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    from tritonlock.compat import pkgbuilds
    from tritonlock.lock.index import unreachable

    rows = {b.name: b for b in (*pkgbuilds.curated().values(), *intent.package_builds)}
    said = re.sub(r"[-_.]+", "-", err.lower())
    out: list[tuple[str, Selection, Any]] = []
    notes: list[str] = []
    for req in intent.packages:
        try:
            name = canonicalize_name(Requirement(req).name)
        except InvalidRequirement:
            continue
        row = rows.get(name)
        if row is None or "{version}" in row.index or name not in said:
            continue
        seen: set[tuple[str | None, str | None]] = set()
        down: dict[str, str | None] = {}
        for x in c:
            choice = pkgbuilds.choose(name, "", x.torch or "", x.backend or "", cuda_major=None,
                                      extra=intent.package_builds)
            if choice is None or (x.torch, x.backend) in seen or len(seen) >= 4:
                continue
            seen.add((x.torch, x.backend))
            host = urlsplit(choice.url).netloc
            if host not in down:
                down[host] = unreachable(choice.url, name)
                if down[host]:
                    notes.append(f"{name}'s builds at {choice.url} (not reachable from here: {down[host]})")
            if not down[host]:
                out.append((name, x, choice))
        if out or notes:
            return out, notes
    return out, notes


def decide(s: Selection, c: tuple[Selection, ...], intent: Intent, matrix: Matrix, dindex: str, *,
           facts: Facts, host: Callable[[], tuple[Selection, ...]], reader: Reader, python: str,
           wanted: Callable[[Selection, tuple[LockedPackage, ...]], list[Wanted]],
           lines: Callable[[int], tuple[Selection, ...]] = lambda n: ()
           ) -> tuple[Selection, tuple[LockedPackage, ...]]:
    """decide → lock → decide: the packages decision, then the lock stage's binary facts of its closure, then the
    decision's native-code rule; a closure that breaks the rule is decided again — the release's own build for the
    torch's CUDA first, where compat/packages.toml or [[package-builds]] knows one; else, where it only needs another
    CUDA major, the torch builds that bring it (`lines`; undone where that locks no such closure, or where the release
    is then passed over for another problem); else the release passed over, with the releases before it that fail
    the same way whatever is locked — until the closure is a lock, or no choice is left and the target is a conflict
    naming what it needs, what was tried and what was not."""
    import dataclasses

    from tritonlock.native import judge as rule
    from tritonlock.decide import packages as pk
    from tritonlock.compat import pkgbuilds
    from tritonlock.decide._pkgfacts import public
    from tritonlock.lock.closure import compile_target, guessing
    from tritonlock.models import Conflict
    from packaging.utils import canonicalize_name

    constraints: list[str] = []
    passed: list[str] = []
    own: list[tuple[str, str, str]] = []
    own_release: dict[str, str] = {}
    rejected: list[str] = []
    tried: set[str] = set()
    last: tuple[Selection, list[rule.Problem]] | None = None
    left: str | None = None  # why the decision with the releases passed over locks nothing
    # a move to the torch releases that bring another CUDA, not yet proven: (s, c, package, release) to go back to
    moved: tuple[Selection, tuple[Selection, ...], str, str, int, str] | None = None
    # release -> the torch choices before its move, and where `passed` says so
    lines_tried: dict[str, tuple[Selection, tuple[Selection, ...], int]] = {}
    held: tuple[str, ...] = ()  # (warning, first reason): torch held back for a package's CUDA
    err_text: ClosureError | None = None
    # uv's cached answer, while the online one comes: its wheels' facts are read from then on
    compiled = guessing(compile_target, lambda sel, pkgs: reader.prefetch(wanted(sel, pkgs), guess=True)) \
        if reader.early and s.target.name not in reader.from_lock else compile_target
    # a package the default index serves nothing lockable of (PyG's: sdists whose build imports torch), with builds
    # per torch and CUDA on an index of its own: (name, torch choice, its build's index), newest torch first
    first_err: ClosureError | None = None
    upfront: list[tuple[str, Selection, Any]] | None = None
    tried_own: list[str] = []
    spent = 0  # the rounds that passed releases over (a move to another torch line, and its undoing, spend none)

    def served(name: str) -> bool:
        """Whether the default index serves `name` (a package's build for the other CUDA major, for the fix)."""
        got = facts.files(dindex, name)
        if got is None:
            raise LookupError(name)  # (not asked: the fix says it as a maybe)
        return bool(got)

    for step in range(3 * NATIVE_ROUNDS):  # (at most one move per release judged: each spends a round or is undone)
        decision: tuple[Selection, tuple[LockedPackage, ...]] | None
        try:
            decision = pk.decide(s, c, intent, matrix, dindex, compile=compiled, facts=facts,
                                 default_python=python, host=host, constraints=tuple(constraints),
                                 passed=tuple(passed), warm=step > 0, package_indexes=tuple(own),
                                 seen=lambda sel, pkgs: reader.seen(wanted(sel, pkgs), pkgs))
        except ClosureError as err:
            said = [ln.strip().removeprefix("error: ") for ln in str(err).splitlines() if ln.startswith("error: ")]
            left = f"uv finds no closure ({said[0]})" if said else None
            decision, err_text = None, err
        if moved is not None and (decision is None or not decision[0].ok or not any(
                canonicalize_name(p.name) == canonicalize_name(moved[2]) and public(p.version) == moved[3]
                for p in decision[1])):
            # no torch that brings that CUDA locks that release with the rest: it is passed over after all
            (s, c, name, version, at, instead), moved, held = moved, None, ()
            constraints.append(f"{name}!={version}")
            passed[at] = instead
            rejected.append(f"{name} {version}")
            continue
        if decision is None:
            if own and own[-1][0] in own_release:
                # a package's own index did not serve that build: pass the release over instead
                name = own.pop()[0]
                constraints.append(f"{name}!={own_release.pop(name)}")
                passed[-1] += f"; {name}'s own index did not serve it"
                continue
            if last is None:
                assert err_text is not None
                if first_err is None:
                    first_err = err_text
                    upfront, tried_own = _own_first(intent, c, str(err_text))
                    tried_own = [f"{n}'s build at {ch.url} (uv finds no closure with it)" for n, _, ch in upfront] \
                        + tried_own
                elif upfront is not None and own:
                    own.pop()  # (that torch's page of builds locks nothing either: the next torch's)
                    passed.pop()
                if not upfront:
                    if not tried_own:
                        raise first_err
                    raise _also_tried(first_err, tried_own, intent.path)
                name, x, choice = upfront.pop(0)
                own.append((choice.name, choice.url, "flat" if choice.flat else "simple"))
                passed.append(f"{name} from the default index (uv finds no closure with it there: {_said(first_err)}); "
                              f"took {choice.why}, for torch {x.torch} ({x.backend})")
                if x is not c[0] and (x.torch, x.backend) != (c[0].torch, c[0].backend):
                    held = (f"is locked, not {c[0].torch} ({c[0].backend}): {name}'s builds on its own index are made "
                            f"per torch and CUDA, and the default index serves none uv can lock ({_said(first_err)})",
                            f"the newest torch build {name}'s own index has a build for ({choice.url}); torch "
                            f"{c[0].torch} ({c[0].backend}) would fit this target")
                s, c = x, (x,)
                continue
        if (decision is None or not decision[0].ok) and last is not None:
            # with the releases whose native code cannot load passed over, nothing is left: that is the conflict
            if decision is not None and decision[0].conflict:
                left = decision[0].conflict.message.splitlines()[0]
            message = rule.conflict(last[0], last[1], rejected, left=left, exists=served)
            return Selection(target=s.target, ok=False, conflict=Conflict(target=s.target.name, message=message)), ()
        assert decision is not None
        sel, pkgs = decision
        if not sel.ok:
            return sel, pkgs
        moved = None
        read = reader.facts(wanted(sel, pkgs))
        found = rule.problems(sel, pkgs, read, matrix, policy=intent.cuda_policy, optional=intent.optional_gpu_code,
                              imports=intent.imports)
        if not found:
            checked = rule.checked(pkgs, reader.read)
            reasons = list(sel.reasons)
            if held and reasons and reasons[0].startswith(f"torch {sel.torch}: the newest release matching torch"):
                reasons[0] = f"torch {sel.torch} ({sel.backend}): {held[1]}"  # (not what the intent's torch matches)
            warned = (*sel.warnings, *(f"torch {sel.torch} ({sel.backend}) {h}" for h in held[:1]),
                      *rule.unknowns(sel, pkgs, read, matrix, policy=intent.cuda_policy,
                                     optional=intent.optional_gpu_code, imports=intent.imports))
            return dataclasses.replace(sel, reasons=(*reasons, *((checked,) if checked else ())), warnings=warned), pkgs
        last = (sel, found)
        structural = [p for p in found if p.structural]
        if structural or spent == NATIVE_ROUNDS - 1:
            message = rule.conflict(sel, structural or found, rejected, 0 if structural else NATIVE_ROUNDS,
                                    exists=served)
            return Selection(target=s.target, ok=False, conflict=Conflict(target=s.target.name, message=message)), ()
        spent += 1
        rejected_before, own_before = len(rejected), len(own)
        by_release: dict[str, list[rule.Problem]] = {}
        for p in found:
            by_release.setdefault(f"{p.package} {public(p.version)}", []).append(p)
        for key, probs in by_release.items():
            if key in tried:
                continue
            tried.add(key)
            p = next((q for q in probs if q.kind in ("cuda-library", "cuda-driver")), probs[0])
            why = "; ".join(q.text for q in probs)
            # a CUDA the torch does not bring, or the driver does not run: the release's build for the torch's CUDA
            choice = pkgbuilds.choose(p.package, p.version, sel.torch or "", sel.backend or "", cuda_major=None,
                                      extra=intent.package_builds) if p.kind in ("cuda-library", "cuda-driver") else None
            line = rule.torch_line(sel, probs, lines) if choice is None and moved is None and key not in lines_tried \
                and intent.cuda == "auto" else None
            if line is not None:
                # the release needs another CUDA than the torch brings: the torch releases whose build brings it
                # (the packages keep their newest releases, as the decision gives them before the newest torch)
                lines_tried[key] = (s, c, len(passed))
                tried.discard(key)  # (with the torch moved, what else it needs is judged again)
                n = line[0]
                moved = (s, c, p.package, public(p.version), len(passed),
                         f"{key} (its native code cannot load here: {why}; no torch release whose build brings "
                         f"CUDA {n} locks with the other requirements)")
                c = line[1]
                s = c[0]  # (the decision takes the newest of its candidates as the one that would fit)
                passed.append(f"torch {sel.torch} ({sel.backend}) and the torch builds that bring no CUDA {n} ({key}'s "
                              f"native code needs CUDA {n}: {why}); took the torch releases whose build brings it")
                held = (f"is locked, not {sel.torch} ({sel.backend}): {key}'s native code needs CUDA {n}, which torch "
                        f"{sel.torch}'s {sel.backend} build does not bring ({p.text})",
                        f"the newest torch build that brings CUDA {n}, which {key}'s native code needs; torch "
                        f"{sel.torch} ({sel.backend}) would fit this target")
                continue
            rejected.append(key)
            if key in lines_tried:  # passed over after all (another problem with the torch moved): torch goes back
                s, c, at = lines_tried[key]
                held, passed[at] = (), (f"the torch builds that bring the CUDA {key}'s native code needs, tried for it "
                                        "and not kept: it cannot load with them either")
            if choice is not None and p.package not in {n for n, _, _ in own}:
                own.append((choice.name, choice.url, "flat" if choice.flat else "simple"))
                own_release[choice.name] = public(p.version)
                passed.append(f"{key}'s build from its default index (its native code cannot load here: {why}); "
                              f"took {choice.why}")
            else:
                constraints.append(f"{p.package}!={public(p.version)}")
                passed.append(f"{key} (its native code cannot load here: {why})")
                # the releases before it that fail the same way whatever is locked: passed over in this round too
                bound = next((q.index for q in pkgs if canonicalize_name(q.name) == canonicalize_name(p.package)), "")
                for v, why in rule.older_hopeless(sel, probs, facts, bound or dindex, matrix, intent.cuda_policy,
                                                  reader.facts, intent.optional_gpu_code, intent.imports):
                    tried.add(f"{p.package} {v}")
                    rejected.append(f"{p.package} {v}")
                    constraints.append(f"{p.package}!={v}")
                    passed.append(f"{p.package} {v} (its native code cannot load here: {why})")
        if moved is not None and len(rejected) == rejected_before and len(own) == own_before:
            spent -= 1  # (only a move to another torch line: the round after says whether it holds)
    # the steps ran out (moves undone one after another): the last closure judged is the conflict, with what was not
    # tried said
    assert last is not None
    message = rule.conflict(last[0], last[1], rejected, NATIVE_ROUNDS, left=left, exists=served)
    return Selection(target=s.target, ok=False, conflict=Conflict(target=s.target.name, message=message)), ()


def _also_tried(err: ClosureError, tried: list[str], intent_path: str) -> ClosureError:
    """uv's failure with what the decision tried beside it; where a package's own page of builds did not answer,
    the fix is that page (reach it, or a mirror of it), not uv's generic one."""
    import re
    from pathlib import Path

    down = [m for t in tried if (m := re.match(r"(\S+)'s builds at (\S+) \(not reachable from here", t))]
    text = str(err)
    if down:
        text = "\n".join(line for line in text.splitlines() if not line.startswith("  fix: "))
    text += "\n  also tried: " + "; ".join(tried)
    if down:
        pages = ", ".join(dict.fromkeys(m[2] for m in down))
        names = ", ".join(dict.fromkeys(m[1] for m in down))
        text += (f"\n  fix: {names}'s builds are on {pages}, which does not answer from here: resolve where it does, "
                 f"or name a mirror of it for {names} in {Path(intent_path).name} (a [[package-builds]] table with "
                 "its index)")
    return ClosureError(text, uv=err.uv)
