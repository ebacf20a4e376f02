"""`why` with the user's packages: what the lock says they hold back (`package_advice`), and each change a line
names applied to the whole decision — the packages locked again with uv through a callable the orchestrator hands in
(`check_packages`), so no line claims a change that would not unlock what it names."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from tritonlock.compat.matrix import Matrix
from tritonlock.errors import TritonlockError
from tritonlock.models import Intent, Selection, TargetSpec
from tritonlock.decide.why import INTENT_KINDS, Advice, Checked, Line, advise


# --- the user's packages (what the lock's decision recorded) -------------------------------------------------------

@dataclass(frozen=True, kw_only=True, slots=True)
class Held:
    """One thing the user's packages hold back on a target, as the lock's decision recorded it; `line` is the
    least change (from compat/, offline) that lets the torch a held package's newest release needs fit the target."""

    words: str  # what stands, without a change to check
    name: str | None = None  # the package held below its newest release
    version: str | None = None  # locked
    newest: str | None = None
    torch: str | None = None  # the torch its newest release needs
    line: Line | None = None


def package_advice(intent: Intent, matrix: Matrix, target: TargetSpec, default_python: str,
                   locked: Selection | None) -> tuple[Held, ...]:
    """What the user's packages hold back on this target, from the lock's decision (`direct` and its torch reason):
    a torch the packages keep below what the target allows, and each package below its newest release — for those
    the target holds back, the least change that unlocks the torch they need (the same search as the lines above;
    `check_packages` then checks it with the packages locked)."""
    import re

    if locked is not None and not locked.ok and locked.conflict is not None:
        # the lock records this target as a conflict of the packages (resolve exits 3 for it): say that first
        head, *rest = locked.conflict.message.splitlines()
        fix = next((x.strip() for x in rest if x.strip().startswith("fix:")), "")
        return (Held(words=f"the lock records a conflict for this target: {head}" + (f" — {fix}" if fix else "")),)
    if locked is None or not locked.ok:
        return ()
    out: list[Held] = []
    first = locked.reasons[0] if locked.reasons else ""
    m = re.match(r"torch (\S+): the newest torch the packages allow \((.*)\); torch (\S+) would fit this target$",
                 first)
    if m:
        # a package's requirement: only a release of it that allows the newer torch helps (no machine change);
        # otherwise (the index lacks that torch, or uv found no solution) say what held it, and no more
        out.append(Held(words=f"torch {m[3]} fits this target, but the lock holds torch {m[1]}: {m[2]}"
                        + (f" — a newer release of the package that allows torch {m[3]} would unlock it; no change to "
                           "this machine would" if " requires " in m[2] else "")))
    for d in locked.direct:
        if d.held_by is None:
            continue
        host = re.search(r"; torch (\S+) does not fit this target: ", d.held_by)
        line = None
        if host:
            found = [ln for ln in advise(intent, matrix, target, default_python, host[1]).lines if ln.torch == host[1]]
            line = found[0] if found else None
        if line is not None and line.status == "blocked" and host:
            out.append(Held(words=f"{d.name} {d.newest} (locked: {d.version}): {d.held_by}", name=d.name,
                            version=d.version, newest=d.newest, torch=host[1], line=line))
        else:
            out.append(Held(words=f"{d.name} {d.newest} (locked: {d.version}): {d.held_by}"))
    from tritonlock.native.notes import native_warnings

    # what the native-code rule locked and said (a library a module may load by name, an optional part, PTX only)
    out += [Held(words=f"native code: {w}") for w in native_warnings(locked.warnings)]
    return tuple(out)


# --- each change applied to the whole decision: the packages locked with uv ----------------------------------------

# The packages decision for each target under an intent — what `resolve` would lock, written nowhere. The orchestrator
# hands it in (tritonlock.project.packages_decision): the decision stage does not run the lock's stage itself.
Decide = Callable[[Intent, tuple[TargetSpec, ...]], tuple[Selection, ...]]

_Key = tuple[tuple[tuple[str, str], ...], TargetSpec]  # a change (its kinds and values) and the machine it makes

MAX_CHECKS = 6  # distinct changes locked with uv per run: each is one packages decision (seconds with uv's cache warm)

OFFLINE_WORDS = "each line by resolving again with its change against compat/ (offline)"


def check_packages(advice: list[Advice], intent: Intent, matrix: Matrix, default_python: str,
                   locked: dict[str, Selection | None], decide: Decide | None, skip: str | None,
                   limit: int = MAX_CHECKS) -> list[Advice]:
    """Each change a line or a held package names, applied to the whole decision with the user's packages: the
    packages decided again (uv and the indexes, through `decide`), so no line claims a change that would not unlock
    what it names, and each says the next blocker. `skip` says why nothing is locked (--offline, no fresh lock);
    without packages in the intent the lines stand as checked offline."""
    if not intent.packages:
        return advice
    held = {a.target.name: package_advice(intent, matrix, a.target, default_python, locked.get(a.target.name))
            for a in advice}
    worlds: dict[_Key, tuple[Intent, TargetSpec]] = {}  # each distinct change, in the order asked
    for a in advice:  # a held package's change first: the claim a user acts on
        for h in held[a.target.name]:
            if h.line is not None:
                worlds.setdefault(*_world(intent, h.line))
    for a in advice:
        for ln in a.lines:
            if ln.status in ("blocked", "excluded") and ln.then is not None:
                worlds.setdefault(*_world(intent, ln))
    results: dict[_Key, Checked] = {}
    if skip is None and decide is not None and worlds:
        order = list(worlds)
        asked, over = order[:limit], order[limit:]
        for key in over:
            results[key] = Checked(checked=False, words=f"not checked with uv: {limit} other change(s) were checked "
                                                         f"first, at most {limit} a run — narrow it with --target or "
                                                         "--torch")
        groups: dict[tuple[tuple[str, str], ...], list[_Key]] = {}  # one packages decision per intent change:
        for key in asked:  # its machines together (they share uv's runs and the wheels' facts)
            groups.setdefault(tuple(x for x in key[0] if x[0] in INTENT_KINDS), []).append(key)
        for keys in groups.values():
            try:
                got = decide(worlds[keys[0]][0], tuple(worlds[k][1] for k in keys))
            except TritonlockError as err:  # uv or an index failed: said, and those lines stay unchecked
                first = next((x.strip() for x in str(err).splitlines() if x.strip()), type(err).__name__)
                for k in keys:
                    results[k] = Checked(checked=False, words=f"not checked with uv: {first}")
                continue
            for k, sel in zip(keys, got):  # the decision under the target's own name (k[1]: the changed machine)
                results[k] = Checked(checked=True, words="", then=dataclasses.replace(sel, target=k[1]))
    why_not = Checked(checked=False, words=f"not checked with uv ({skip})" if skip else "not checked with uv")
    out = []
    for a in advice:
        # a line unchecked for a reason of its own says so; one that nothing was checked for leaves it to `checked`
        lines = tuple(dataclasses.replace(ln, with_packages=_line_verdict(results[_world(intent, ln)[0]]))
                      if ln.status in ("blocked", "excluded") and ln.then is not None
                      and _world(intent, ln)[0] in results else ln for ln in a.lines)
        words = tuple(_held_verdict(h, results.get(_world(intent, h.line)[0], why_not) if h.line else None)
                      for h in held[a.target.name])
        how = (f"{OFFLINE_WORDS}, and with your packages by locking them with uv and the indexes with that change "
               "applied" if skip is None and decide is not None else
               f"{OFFLINE_WORDS} — not by locking your packages with uv, which may hold back what a line names "
               f"({skip})")
        out.append(dataclasses.replace(a, lines=lines, packages=words, checked=how))
    return out


def format_checked(advice: list[Advice]) -> str:
    """The one line that says how the advice above was checked ("" where the intent names no packages)."""
    return next((f"checked: {a.checked}" for a in advice if a.checked), "")


def _world(intent: Intent, ln: Line) -> tuple[_Key, tuple[Intent, TargetSpec]]:
    """The line's change applied to the user's own intent and machine (not to a pinned torch): the key and the pair
    the packages decision runs on. The target is renamed after the change, for the progress lines."""
    assert ln.then is not None
    it = intent
    for c in ln.changes:
        if c.kind == "torch":
            it = dataclasses.replace(it, torch=c.need)
        elif c.kind == "triton":
            it = dataclasses.replace(it, triton=c.need)
        elif c.kind == "cuda":
            it = dataclasses.replace(it, cuda=c.need)
        elif c.kind == "cuda-policy":
            it = dataclasses.replace(it, cuda_policy=c.need)
    t = ln.then.target
    label = ", ".join(f"{c.kind} {c.need}" for c in ln.changes)
    return (tuple((c.kind, c.need) for c in ln.changes), t), (it, dataclasses.replace(t, name=f"{t.name} with {label}"))


def _sel_words(s: Selection) -> str:
    tri = f" + {s.triton_package} {s.triton}" if s.triton else ""
    return f"torch {s.torch} ({s.backend}){tri}"


def _line_verdict(c: Checked) -> Checked:
    """What a line's change gives with the packages: the torch the lock would hold, and the decision's own reason."""
    if not c.checked or c.then is None:
        return c
    s = c.then
    if not s.ok:
        head = s.conflict.message.splitlines()[0] if s.conflict else "no lock fits"
        return dataclasses.replace(c, words=f"with your packages (checked with uv): nothing can be locked — {head}")
    reason = s.reasons[0] if s.reasons else ""
    reason = reason.split(": ", 1)[1] if reason.startswith(f"torch {s.torch}: ") else reason
    return dataclasses.replace(c, words=f"with your packages (checked with uv): the lock gets {_sel_words(s)}"
                                         + (f" — {reason}" if reason else ""))


def _held_verdict(h: Held, c: Checked | None) -> str:
    """A held package's line: the change that lets the torch it needs fit, and what locking with that change gave —
    the package at its newest (the change unlocks it), or the release it gets instead and what then holds it."""
    if h.line is None or c is None:
        return h.words
    change = " and ".join(x.words for x in h.line.changes)
    head = f"{h.name} {h.newest} (locked: {h.version}) needs torch {h.torch}"
    if not c.checked or c.then is None:
        return f"{head}: needs {change} — {c.words}"
    s = c.then
    if not s.ok:
        first = s.conflict.message.splitlines()[0] if s.conflict else "no lock fits"
        return (f"{head}, but {change} is not enough — checked with uv: with it, nothing can be locked on this "
                f"target: {first}")
    d = next((x for x in s.direct if x.name == h.name), None)
    if d is not None and d.version == h.newest:
        return f"{head}: needs {change} — checked with uv: with it, the lock gets {h.name} {h.newest}"
    got = f"{h.name} {d.version}" if d is not None and d.version else f"no {h.name}"
    nxt = f"; {h.name} {h.newest} is then held back by: {d.held_by}" if d is not None and d.held_by else ""
    return (f"{head}, but {change} is not enough — checked with uv: with it, the lock gets {got} "
            f"({_sel_words(s)}){nxt}")
