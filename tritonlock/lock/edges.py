"""The dependency edges a lock records (lock-version 3.1): which locked package requires which on its target, read
from the METADATA of the locked files (each checked against its hash, tritonlock.lock.integrity) with each
Requires-Dist's markers evaluated for the target and the extras asked for along the way."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from tritonlock.lock._requires import parsed_requirement
from tritonlock.models import Lock, LockedPackage, LockedTarget


def _requires(metadata: str) -> list[Requirement]:
    """The Requires-Dist lines of a METADATA text (the headers only; the description after them is not read)."""
    from tritonlock.lock._requires import metadata_fields

    out: list[Requirement] = []
    for value in metadata_fields(metadata).get("requires-dist", ()):
        req = parsed_requirement(value.strip())
        if req is not None:  # (a line no installer could read either is no edge)
            out.append(req)
    return out


def _holds(req: Requirement, env: dict[str, str], extras: Iterable[str]) -> bool:
    """Whether a requirement applies on the target with these extras of its owner asked for."""
    if req.marker is None:
        return True
    for extra in ("", *sorted(extras)):
        try:
            if req.marker.evaluate({**env, "extra": extra}):
                return True
        except Exception:  # noqa: BLE001 — a marker this target cannot decide (platform_release): uv kept it
            return True
    return False


def roots_of(target: LockedTarget) -> list[Requirement]:
    """What the target's closure was asked for: torch, its triton, and the decision's packages (the user's, with
    their extras and markers; what Triton's interpreter needs)."""
    sel = target.selection
    texts = [f"torch=={sel.torch}"] if sel.torch else []
    if sel.triton_package:
        texts.append(sel.triton_package)
    texts += list(sel.packages)
    out: list[Requirement] = []
    for t in texts:
        try:
            out.append(Requirement(t))
        except InvalidRequirement:
            continue
    return out


def closure_edges(packages: tuple[LockedPackage, ...], roots: list[Requirement], env: dict[str, str],
                  metadata: Callable[[LockedPackage], str | None]) -> dict[str, tuple[str, ...] | None]:
    """name → the names of the locked packages it requires on this target (None where its METADATA is unknown). The
    extras each package is asked for are followed to a fixed point: `vllm[audio]` brings what vllm's audio extra
    requires, and what that asks of others in turn."""
    locked = {p.name for p in packages}
    reqs = {p.name: (_requires(m) if (m := metadata(p)) is not None else None) for p in packages}
    extras: dict[str, set[str]] = {p.name: set() for p in packages}
    for r in roots:
        root = str(canonicalize_name(r.name))
        if root in extras and _holds(r, env, ()):
            extras[root] |= set(r.extras)
    changed = True
    while changed:  # (extras only grow, and there are finitely many: this ends)
        changed = False
        for name, rs in reqs.items():
            for r in rs or ():
                dep = str(canonicalize_name(r.name))
                if dep in extras and r.extras and _holds(r, env, extras[name]) and not set(r.extras) <= extras[dep]:
                    extras[dep] |= set(r.extras)
                    changed = True
    out: dict[str, tuple[str, ...] | None] = {}
    for name, rs in reqs.items():
        if rs is None:
            out[name] = None
            continue
        deps = {str(canonicalize_name(r.name)) for r in rs if _holds(r, env, extras[name])}
        out[name] = tuple(sorted(d for d in deps if d in locked and d != name))
    return out


def with_edges(lock: Lock, metadata: Callable[[LockedPackage], str | None]) -> Lock:
    """The lock with each closure's packages carrying their edges. Targets that share a closure share it still (one
    computation, one tuple: the writer keeps one [[closures]] entry for them)."""
    from tritonlock.lock.integrity import marker_environment

    done: dict[int, tuple[LockedPackage, ...]] = {}
    targets: list[LockedTarget] = []
    for t in lock.targets:
        if not t.packages:
            targets.append(t)
            continue
        key = id(t.packages)
        if key not in done:
            edges = closure_edges(t.packages, roots_of(t), marker_environment(t), metadata)
            done[key] = tuple(dataclasses.replace(p, dependencies=edges.get(p.name)) for p in t.packages)
        targets.append(dataclasses.replace(t, packages=done[key]))
    return dataclasses.replace(lock, targets=tuple(targets))


def file_metadata(checked: dict[str, str], packages: Iterable[LockedPackage] = ()) -> Callable[[LockedPackage],
                                                                                             str | None]:
    """A package's METADATA: of its first file that the integrity check read (against its hash), else as the index
    served it (kept per sha256 in tritonlock's cache; for each of `packages` that has neither — a wheel too large to
    check on an index without PEP 658 hashes — read now from inside the wheel with ranged reads, and kept), else None.
    Edges are what `tree` draws: METADATA as served is good enough for them (never for the integrity check)."""
    from tritonlock.lock.integrity import keep_metadata, kept_metadata

    def known(p: LockedPackage) -> str | None:
        files = (*p.wheels, *((p.sdist,) if p.sdist else ()))
        for f in files:
            if f.sha256.lower() in checked:
                return checked[f.sha256.lower()] or None
        for f in files:
            served = kept_metadata(f.sha256, served=True)
            if served:
                return served
        return None

    missing = {p.wheels[0].sha256: p for p in packages if p.wheels and not p.direct and known(p) is None}
    if missing:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(8, len(missing))) as pool:
            for sha, meta in zip(missing, pool.map(_served, missing.values())):
                if meta:
                    keep_metadata(sha, meta, served=True)

    return known


def _served(p: LockedPackage) -> str | None:
    """The METADATA inside a package's wheel as its index serves it (PEP 658 file, else ranged reads); None on any
    failure (the package is then drawn with its dependencies not recorded)."""
    from tritonlock.lock.index import IndexClient
    from tritonlock.native.remotezip import wheel_metadata

    w = p.wheels[0]
    try:
        client = IndexClient(p.index, timeout=60)
        f = next((x for x in client.files(p.name, only=w.name) if x.filename == w.name), None)
        return wheel_metadata(client, f, deep=True) if f is not None else None
    except Exception:  # noqa: BLE001 — an index that fails here fails nothing: the edge is "not recorded"
        return None
