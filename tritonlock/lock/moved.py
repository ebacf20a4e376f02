"""What moved between two locks, per target, and why — `resolve --upgrade-package`'s summary: each package that
moved, was added or removed, with what asked for it (the upgrade, or the locked package that requires it, from the
lock's edges), and each package asked for that stayed where it was."""

from __future__ import annotations

from tritonlock.models import Lock, LockedTarget


def _why(name: str, t: LockedTarget, asked: tuple[str, ...], changed: set[str]) -> str:
    if name in asked:
        return "asked for"
    parents = sorted(p.name for p in t.packages if name in (p.dependencies or ()))
    if not parents:
        return "moved with the others" if any(p.dependencies is not None for p in t.packages) else "moved"
    first = sorted(parents, key=lambda n: (n not in changed, n not in asked, n))
    by = {p.name: p.version for p in t.packages}
    return "required by " + ", ".join(f"{n} {by[n]}" for n in first[:3]) + (" …" if len(first) > 3 else "")


def target_lines(old: LockedTarget | None, new: LockedTarget, asked: tuple[str, ...]) -> list[str]:
    """The moves of one target (empty list: nothing moved and nothing was asked of it)."""
    if not new.selection.ok:
        return ["nothing locked (a conflict: see above)"]
    before = {p.name: p.version for p in old.packages} if old is not None and old.selection.ok else {}
    after = {p.name: p.version for p in new.packages}
    changed = {n for n in after if before.get(n) != after[n]} | {n for n in before if n not in after}
    out: list[str] = []
    for name in sorted(changed, key=lambda n: (n not in asked, n)):
        if name not in after:
            out.append(f"- {name} {before[name]} (no longer required)")
        elif name not in before:
            out.append(f"+ {name} {after[name]} ({_why(name, new, asked, changed)})")
        else:
            out.append(f"~ {name} {before[name]} -> {after[name]} ({_why(name, new, asked, changed)})")
    direct = {d.name: d for d in new.selection.direct}
    for name in asked:
        if name in changed or name not in after:
            continue
        d = direct.get(name)
        if d is not None and d.held_by:
            out.append(f"= {name} {after[name]}: stays — {d.held_by}")
        else:
            out.append(f"= {name} {after[name]}: stays — already the newest release the rest of the lock allows")
    kept = len([n for n in after if n in before and before[n] == after[n] and n not in asked])
    if kept:
        out.append(f"every other pin kept as the lock had it ({kept} package{'s' if kept != 1 else ''})")
    return out


def lines(old: Lock, new: Lock, asked: tuple[str, ...]) -> list[str]:
    """Per target (targets with the same moves together), what moved and why."""
    olds = {t.name: t for t in old.targets}
    groups: dict[tuple[str, ...], list[str]] = {}
    for t in new.targets:
        groups.setdefault(tuple(target_lines(olds.get(t.name), t, asked)), []).append(t.name)
    out: list[str] = []
    for body, names in groups.items():
        out.append(f"{'target' if len(names) == 1 else 'targets'} {', '.join(names)}:")
        out += [f"  {b}" for b in body]
    return out
