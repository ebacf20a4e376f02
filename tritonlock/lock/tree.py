"""`tritonlock tree`: a target's locked dependency graph, from the lock alone (its recorded edges, lock-version 3.1),
drawn as uv draws `uv tree` — or inverted, who pulls a package in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tritonlock.errors import LockfileError, UsageError
from tritonlock.models import Lock, LockedPackage, LockedTarget


@dataclass(frozen=True, kw_only=True, slots=True)
class Graph:
    """One target's closure as a graph: name → package, name → what it requires, and why each root is there."""

    packages: dict[str, LockedPackage]
    requires: dict[str, tuple[str, ...] | None]  # None: not recorded
    roots: dict[str, str]  # name → why the closure was asked for it ("requested", "torch decision", …), in order

    @property
    def required_by(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {n: [] for n in self.packages}
        for name, deps in self.requires.items():
            for d in deps or ():
                if d in out:
                    out[d].append(name)
        return {k: tuple(sorted(v)) for k, v in out.items()}

    @property
    def unknown(self) -> list[str]:
        return sorted(n for n, d in self.requires.items() if d is None)


def _canon(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def graph(target: LockedTarget) -> Graph:
    from tritonlock.lock.edges import roots_of

    sel = target.selection
    pkgs = {p.name: p for p in target.packages}
    direct = {d.name for d in sel.direct}
    roots: dict[str, str] = {}
    for r in roots_of(target):
        name = _canon(r.name)
        if name not in pkgs or name in roots:
            continue
        if name in ("torch", sel.triton_package):
            roots[name] = "the torch decision"
        elif name in direct:
            roots[name] = f"requested: {r}"
        else:
            roots[name] = "added by the decision — `tritonlock show` says why"
    requires = {p.name: p.dependencies for p in target.packages}
    return Graph(packages=pkgs, requires=requires, roots=roots)


def no_edges(lock: Lock, lock_path: str) -> bool:
    """Whether the lock records no edge at all (an older lock): `tree` has nothing to draw from."""
    return all(p.dependencies is None for t in lock.targets for p in t.packages)


def no_edges_error(lock: Lock, lock_path: str) -> LockfileError:
    return LockfileError(
        f"{lock_path} (lock-version {lock.lock_version}, written by {lock.created_by or 'an older tritonlock'}) records "
        "no dependency edges: locks record them from lock-version 3.1 on — write it again keeping every pin with "
        "`tritonlock resolve --upgrade-package PKG` (only PKG and what it forces may move; name a package you are "
        "happy to see move), or re-resolve it all with `tritonlock resolve --upgrade`; `tree` then reads the graph "
        "from the lock")


def _label(g: Graph, name: str) -> str:
    p = g.packages[name]
    return f"{name} v{p.version}"


def lines(g: Graph, *, packages: tuple[str, ...] = (), invert: bool = False, depth: int = 255) -> list[str]:
    """The tree as uv draws it: each root, then its children under ├── / └──; a package whose subtree was already
    drawn is marked (*) and not drawn again. Inverted, the children are the packages that require it."""
    children = g.required_by if invert else {n: tuple(sorted(d or ())) for n, d in g.requires.items()}
    if packages:
        starts = list(packages)
    elif invert:  # every package nothing else is required by... the leaves: what the others stand on
        starts = sorted(n for n, d in g.requires.items() if d is not None and not d)
    else:
        starts = list(g.roots) + sorted(n for n, parents in g.required_by.items()
                                        if not parents and n not in g.roots)
    out: list[str] = []
    shown: set[str] = set()

    def mark(name: str) -> str:
        extra = ""
        if invert and name in g.roots:
            extra = f" ({g.roots[name]})"
        if not invert and g.requires.get(name) is None:
            extra = " (dependencies not recorded)"
        return _label(g, name) + extra

    def walk(name: str, prefix: str, level: int) -> None:
        kids = [k for k in children.get(name, ()) if k in g.packages]
        for i, kid in enumerate(kids):
            last = i == len(kids) - 1
            branch = "└── " if last else "├── "
            again = kid in shown and children.get(kid)  # (a cycle too: its first package is shown before its walk)
            out.append(prefix + branch + mark(kid) + (" (*)" if again else ""))
            if again or level + 1 >= depth:
                continue
            shown.add(kid)
            walk(kid, prefix + ("    " if last else "│   "), level + 1)

    for name in starts:
        again = name in shown and children.get(name)
        out.append(mark(name) + (" (*)" if again else ""))
        if again or depth <= 0:
            continue
        shown.add(name)
        walk(name, "", 0)
    return out


def check_names(targets: list[LockedTarget], names: tuple[str, ...], lock_path: str) -> tuple[str, ...]:
    """The packages `tree PKG…` names, canonical; a name no shown target locks is bad input (exit 2)."""
    want = tuple(dict.fromkeys(_canon(n) for n in names))
    locked = {p.name for t in targets for p in t.packages}
    unknown = [n for n in want if n not in locked]
    if unknown:
        from tritonlock._term import printable

        where = f"target {targets[0].name!r}" if len(targets) == 1 else "any target"
        said = ", ".join(repr(printable(n, 100)) for n in unknown)
        raise UsageError(f"{lock_path} locks no package named {said} in {where} — name a package it locks "
                         "(`tritonlock show` lists them)")
    return want


def text(targets: list[LockedTarget], *, packages: tuple[str, ...] = (), invert: bool = False,
         depth: int = 255) -> str:
    """Every target's tree; targets whose trees are the same are drawn once, under one heading naming them all."""
    groups: dict[tuple[str, ...], list[str]] = {}
    notes: dict[tuple[str, ...], list[str]] = {}
    for t in targets:
        if not t.selection.ok:
            body: tuple[str, ...] = ("(a conflict: nothing is locked for this target)",)
            groups.setdefault(body, []).append(t.name)
            continue
        g = graph(t)
        wanted = tuple(n for n in packages if n in g.packages)
        if packages and not wanted:
            body = (f"(locks none of {', '.join(packages)})",)
        else:
            body = tuple(lines(g, packages=wanted, invert=invert, depth=depth))
        groups.setdefault(body, []).append(t.name)
        if g.unknown and body not in notes:
            notes[body] = [f"note: {len(g.unknown)} package(s) have no recorded dependencies (their METADATA could not "
                           f"be read when the lock was written): {', '.join(g.unknown[:6])}"
                           + (" …" if len(g.unknown) > 6 else "")]
    out: list[str] = []
    single = len(groups) == 1
    for body, names in groups.items():
        if not single:
            out.append(f"{'target' if len(names) == 1 else 'targets'} {', '.join(names)}:")
        out += [line if single else "  " + line for line in body]
        out += [n if single else "  " + n for n in notes.get(body, [])]
    return "\n".join(out)


def as_json(lock: Lock, targets: list[LockedTarget]) -> dict[str, Any]:
    """The graph per target: each package with what it requires and what requires it (null: not recorded)."""
    out = []
    for t in targets:
        if not t.selection.ok:
            out.append({"name": t.name, "conflict": True, "roots": [], "packages": []})
            continue
        g = graph(t)
        by = g.required_by
        out.append({"name": t.name, "conflict": False, "roots": list(g.roots),
                    "packages": [{"name": n, "version": p.version,
                                  "dependencies": list(deps) if (deps := g.requires[n]) is not None else None,
                                  "required-by": list(by.get(n, ())), "root": g.roots.get(n)}
                                 for n, p in sorted(g.packages.items())]})
    return {"lock-version": lock.lock_version, "targets": out}
