"""The words a lock's targets are shown in: a decision's summary (resolve, show), its source builds and package
notes, `show`'s table — returned as text for the CLI to print."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tritonlock.models import LockedPackage, LockedTarget, NativeFacts, Selection


def _same(text: str) -> str:
    return text


def selection_text(s: Selection, words: Callable[[str], str] = _same) -> str:
    """A decision in a few lines: torch, backend, triton and Python, the index, then each reason and warning (in
    `words`: as the project's intent file spells its tables)."""
    from tritonlock._term import styled

    lines = [styled(f"target {s.target.name}:", bold=True) + f" torch {s.torch} ({s.backend}) + "
             f"{s.triton_package or 'no triton'}{' ' + s.triton if s.triton else ''} on Python {s.python}",
             f"  index: {s.index}"]
    lines += ["  " + styled("why:", dim=True) + f" {words(r)}" for r in s.reasons]
    lines += ["  " + styled("warning:", fg="yellow") + f" {words(w)}" for w in s.warnings]
    return "\n".join(lines)


def build_lines(t: LockedTarget | None, only: set[str] | None = None) -> list[str]:
    """A locked target's source builds and package notes, one indented line each (`only`: these packages)."""
    if t is None:
        return []
    from tritonlock.lock import builds
    from tritonlock._term import styled

    pkgs = [p for p in t.packages if only is None or p.name in only]
    built = builds.source_lines(pkgs, t.selection.backend)
    return (["  " + styled("build:", fg="yellow") + f" {line}" for line in built]
            + ["  " + styled("note:", dim=True) + f" {line}" for line in builds.note_lines(pkgs)])


def package_build_json(p: LockedPackage | None, backend: str | None = None) -> dict[str, Any]:
    from tritonlock.lock import builds

    return builds.package_json(p, backend) if p is not None else {}


def builds_json(t: LockedTarget | None) -> dict[str, Any]:
    """--json: a locked target's source builds and package notes."""
    if t is None:
        return {}
    from tritonlock.lock import builds

    return {"source_builds": [{"name": p.name, "version": p.version, **builds.package_json(p, t.selection.backend)}
                              for p in t.packages if p.build],
            "package_notes": [{"name": p.name, "note": p.note} for p in t.packages if p.note]}


def unchecked_native(t: LockedTarget, native: tuple[NativeFacts, ...]) -> list[tuple[LockedPackage, NativeFacts]]:
    """The target's packages locked with their native code unchecked (a [[native]] table that says `unchecked`: its
    wheel's binary facts could not be read, and resolve was allowed to lock it so), each with those facts."""
    unread = {f.sha256: f for f in native if f.problem}
    out: list[tuple[LockedPackage, NativeFacts]] = []
    for p in t.packages:
        f = next((unread[w.sha256] for w in p.wheels if w.sha256 in unread), None)
        if f is not None:
            out.append((p, f))
    return out


def unchecked_json(t: LockedTarget, native: tuple[NativeFacts, ...]) -> list[dict[str, Any]]:
    """--json (show, check): the target's packages whose native code was not checked."""
    return [{"name": p.name, "version": p.version, "file": f.filename, "why": f.problem}
            for p, f in unchecked_native(t, native)]


def show_text(targets: list[LockedTarget], *, verified: Callable[[LockedTarget], list[str]],
              recorded: Callable[[str], bool], words: Callable[[str], str] = _same,
              native: tuple[NativeFacts, ...] = ()) -> str:
    """`show`'s table: per target its decision and every pinned package, with what `verified` says of its runs
    (`recorded`: whether a target has any); `native`: the lock's binary facts (a package whose native code was not
    checked is marked so)."""
    # a fleet's targets of one kind of machine share their decision and packages (lock-version 3): shown once, with
    # the names of the others
    groups: dict[tuple[Any, ...], list[LockedTarget]] = {}
    for t in targets:
        sel = t.selection
        key = (sel.ok, sel.python, sel.torch, sel.backend, sel.index, sel.triton_package, sel.triton, sel.packages,
               sel.driver_floor, sel.archs, sel.ptx, sel.reasons, sel.warnings, sel.direct,
               sel.conflict.message if sel.conflict else None, t.packages)
        groups.setdefault(key if sel.ok else ("conflict", t.name), []).append(t)
    out: list[str] = []
    for t, *others in groups.values():
        if not t.selection.ok:  # recorded as a conflict: nothing is locked for it
            from tritonlock._term import styled

            message = t.selection.conflict.message if t.selection.conflict else "nothing fits"
            out.append(styled(f"target {t.name}:", bold=True) + " " + styled("conflict", fg="red")
                       + " — nothing is locked for it (`tritonlock resolve` exits 3 until it is fixed)")
            out += [f"  {line}" for line in message.splitlines()]
            out.append("")
            continue
        out.append(selection_text(t.selection, words))
        width = max((len(p.name) for p in t.packages), default=4)
        vwidth = max((len(p.version) for p in t.packages), default=7)
        out.append(f"  {'package'.ljust(width)}  {'version'.ljust(vwidth)}  index")
        unchecked = {p.name for p, _ in unchecked_native(t, native)}
        out += [f"  {p.name.ljust(width)}  {p.version.ljust(vwidth)}  {p.index}"
                + ("  (built from source at sync)" if p.build == "source" else "")
                + ("  (native code NOT checked: its wheel could not be read)" if p.name in unchecked else "")
                for p in t.packages]
        out += build_lines(t)
        out += [f"  {line}" for line in verified(t)]
        if others:
            out.append(f"  the same decision and packages for {len(others)} more target(s): "
                       + ", ".join(o.name for o in others))
            for o in others:
                if recorded(o.name):
                    out += [f"  {o.name}: {line}" for line in verified(o)]
        out.append("")
    return "\n".join(out)
