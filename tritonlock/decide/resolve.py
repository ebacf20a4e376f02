"""Pick python, torch, backend and triton per target from intent × matrix (each target's search: search.py), machines
alike once; explain conflicts in words."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tritonlock.decide import rules
from tritonlock.compat.matrix import Matrix
from tritonlock.compat.rows import TorchRelease
from tritonlock.models import Intent, Selection, TargetSpec
from tritonlock._archs import gpu_runs
from tritonlock.decide.rules import platform_of
from tritonlock.decide.search import Resolver

__all__ = ["feasible", "gpu_runs", "platform_of", "release_problem", "resolve", "resolve_one", "selection_json"]


# A fleet is many machines of few kinds: the decision for a target depends on its machine facts, not on its name
# (which only appears in words: "the Python of the saved machine 'node-0007'", a conflict's "target 'node-0007'").
# Each kind of machine is decided once, for a stand-in name, and the words are then written for each target's own
# name — the same Selections as deciding each target on its own, in a fraction of the time (1,000 host files of 10
# kinds: bench/fleet1000.py).
_NAME = "\x00tritonlock-target-name\x00"


def _kind(t: TargetSpec) -> TargetSpec:
    import dataclasses

    origin = "file" if t.origin.startswith("file") else t.origin  # only the kind of origin is read by the rules
    return dataclasses.replace(t, name=_NAME, origin=origin)


def _named(sel: Selection, t: TargetSpec) -> Selection:
    """A Selection decided for the stand-in name, for target t: its target, and its name in every message."""
    import dataclasses

    def words(text: str) -> str:
        return text.replace(repr(_NAME), repr(t.name)).replace(_NAME, t.name)

    conflict = sel.conflict
    if conflict is not None:
        conflict = dataclasses.replace(conflict, target=t.name, message=words(conflict.message),
                                       facts=tuple(words(f) for f in conflict.facts))
    return dataclasses.replace(sel, target=t, reasons=tuple(words(r) for r in sel.reasons),
                               warnings=tuple(words(w) for w in sel.warnings), conflict=conflict)


_RESOLVED: dict[tuple[int, int, TargetSpec, str], tuple[Intent, Matrix, Selection]] = {}


def resolve(intent: Intent, matrix: Matrix, targets: tuple[TargetSpec, ...], default_python: str) -> tuple[Selection, ...]:
    """One Selection per target, in order; deterministic for the same inputs. Machines alike are decided once per
    intent and matrix (also across calls: `check` re-decides a fleet's targets one by one)."""
    out = []
    for t in targets:
        kind = _kind(t)
        key = (id(intent), id(matrix), kind, default_python)
        hit = _RESOLVED.get(key)
        if hit is None or hit[0] is not intent or hit[1] is not matrix:  # (kept with their entry: ids stay theirs)
            if len(_RESOLVED) > 4096:
                _RESOLVED.clear()
            hit = (intent, matrix, resolve_one(intent, matrix, kind, default_python))
            _RESOLVED[key] = hit
        out.append(_named(hit[2], t))
    return tuple(out)


def resolve_one(intent: Intent, matrix: Matrix, target: TargetSpec, default_python: str, *,
                advise: bool = True) -> Selection:
    """One target's Selection; advise=False skips the search for ways out of a conflict (for what-if loops)."""
    from tritonlock.decide.resolve_vendor import resolve_vendor, vendor  # AMD (ROCm) and Intel (XPU) targets

    if vendor(target) is not None:
        return resolve_vendor(intent, matrix, target, default_python,
                              cpu=lambda i, t: Resolver(i, matrix, t, default_python).run(advise=advise)) or Resolver(
            intent, matrix, target, default_python).run(advise=advise)
    return Resolver(intent, matrix, target, default_python).run(advise=advise)


_FEASIBLE: dict[tuple[int, int, TargetSpec, str], tuple[Intent, Matrix, tuple[Selection, ...]]] = {}


def feasible(intent: Intent, matrix: Matrix, target: TargetSpec, default_python: str) -> tuple[Selection, ...]:
    """Every torch release that fits this target, newest first: one ok Selection each (its preferred variant, index,
    triton pin, reasons and warnings), as `resolve_one` gives when the intent pins that release. All of the host
    rules apply and the intent's torch, cuda and triton constraints hold; a target nothing fits gives (). Machines
    alike are decided once per intent and matrix (see _NAME)."""
    kind = _kind(target)
    key = (id(intent), id(matrix), kind, default_python)
    hit = _FEASIBLE.get(key)
    if hit is None or hit[0] is not intent or hit[1] is not matrix:  # (kept with their entry: their ids stay theirs)
        if len(_FEASIBLE) > 4096:
            _FEASIBLE.clear()
        hit = (intent, matrix, _feasible(intent, matrix, kind, default_python))
        _FEASIBLE[key] = hit
    return tuple(_named(sel, target) for sel in hit[2])


def _feasible(intent: Intent, matrix: Matrix, target: TargetSpec, default_python: str) -> tuple[Selection, ...]:
    import dataclasses

    spec = SpecifierSet(intent.torch) if intent.torch else SpecifierSet()
    out: list[Selection] = []
    for r in matrix.torch:
        if Version(r.version) not in spec:
            continue
        pinned = dataclasses.replace(intent, torch=f"=={r.version}")
        sel = resolve_one(pinned, matrix, target, default_python, advise=False)  # an AMD/Intel GPU's own builds too
        if sel.ok:
            out.append(sel)
    return tuple(out)


def release_problem(intent: Intent, matrix: Matrix, target: TargetSpec, release: TorchRelease,
                    default_python: str) -> str | None:
    """Why one torch release does not fit this target under the intent (torch's own build or its Triton); None
    when it fits."""
    from tritonlock.decide.resolve_vendor import release_problem_vendor, vendor

    if vendor(target) is not None:
        return release_problem_vendor(intent, matrix, target, release, default_python)
    r = Resolver(intent, matrix, target, default_python)
    if r.gpu and intent.cuda != "cpu":  # a Jetson's GPU: nothing on PyTorch's index is built for it
        jetson = next((why for cc in r.h.ccs if (why := rules.gpu_has_pytorch_wheels(r.h, cc))), None)
        if jetson is not None:
            return jetson
    unknown = r.gpu_driver_problem()
    if unknown is not None:  # the driver does not drive a GPU: no release fits until that changes
        return "; ".join(unknown[0])
    fit, why = r.fit(release)
    if fit is None:
        return why
    return r.triton(release, fit.variant).problem



def selection_json(sel: Selection) -> dict[str, object]:
    """The public `resolve --dry-run --json` shape of one target (a documented contract)."""
    d: dict[str, object] = {
        "name": sel.target.name, "ok": sel.ok, "python": sel.python, "torch": sel.torch, "backend": sel.backend,
        "index": sel.index, "triton_package": sel.triton_package, "triton": sel.triton,
        "warnings": list(sel.warnings), "reasons": list(sel.reasons),
    }
    if sel.direct:  # the user's packages as locked: version, newest release, what held it below that
        d["direct"] = [{"name": p.name, "requirement": p.requirement, "version": p.version, "newest": p.newest,
                          "at_newest": p.held_by is None, "held_by": p.held_by} for p in sel.direct]
    if not sel.ok and sel.conflict:
        d["conflict"] = sel.conflict.message
    return d
