"""The wheels whose binary facts a resolve asked for and could not read (tritonlock.native.read's Reader.unread):
nothing is known of their native code, so a resolve that locks one — or ends in a conflict while one was unread —
fails, unless the user allows it; allowed, each target that locks one says so and the lock keeps it unchecked."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from tritonlock.errors import TritonlockError
from tritonlock.models import Intent, LockedPackage, Selection

if TYPE_CHECKING:
    from tritonlock.native.read import Reader


def unread_native(decided: list[tuple[Selection, tuple[LockedPackage, ...]]], reader: Reader, intent: Intent,
                  allow: bool) -> tuple[list[tuple[Selection, tuple[LockedPackage, ...]]], tuple[str, ...],
                                        TritonlockError | None]:
    """The wheels whose binary facts the decision asked for and could not get (by ranged reads, nor downloaded
    whole): nothing is known of their native code, so a resolve that locks one — or that ends in a conflict while
    one was unread, which may be why — fails (exit 4, naming each wheel and why), unless the user allows it
    (--allow-unchecked-native, or [environment] allow-unchecked-native: true for every package, or a list of the
    packages). Allowed: each target that locks one says so in a warning, and the lock keeps it as unchecked
    ([[native]] `unchecked`). (The decisions, warnings for what was unread and not locked, and the error to raise.)"""
    from packaging.utils import canonicalize_name

    from tritonlock.errors import IndexError_

    unread = reader.unread(reader.asked)
    if not unread:
        return decided, (), None
    allowed = allow or intent.allow_unchecked_native is True
    names = set() if isinstance(intent.allow_unchecked_native, bool) else {
        canonicalize_name(n) for n in intent.allow_unchecked_native}

    def ok(name: str) -> bool:
        return allowed or canonicalize_name(name) in names

    locked: dict[str, list[tuple[str, LockedPackage]]] = {}  # sha256 -> (target, package) that lock it
    for s, pkgs in decided:
        for p in pkgs if s.ok else ():
            for w in p.wheels:
                if w.sha256 in unread:
                    locked.setdefault(w.sha256, []).append((s.target.name, p))
    conflict = any(not s.ok for s, _ in decided)
    refused = [(sha, f) for sha, f in sorted(unread.items(), key=lambda kv: kv[1].filename)
               if (sha in locked or conflict) and not ok(f.filename.split("-")[0])]
    if refused:
        lines = []
        for sha, f in refused[:10]:
            where = ", ".join(dict.fromkeys(f"{p.name} {p.version}, target {t!r}" for t, p in locked.get(sha, [])))
            lines.append(f"  {f.filename} ({where or 'a release the decision weighed, which ended in a conflict'}): "
                         f"{f.problem}")
        more = f"\n  … and {len(refused) - 10} more" if len(refused) > 10 else ""
        n = len(refused)
        return decided, (), IndexError_(
            f"the native code of {n} wheel{'' if n == 1 else 's'} could not be read, so whether "
            f"{'it loads' if n == 1 else 'they load'} on the target is not known (the binaries of every locked wheel "
            f"are checked before a lock is written; nothing was written):\n" + "\n".join(lines) + more +
            "\n  fix: serve the wheels from an index (or a mirror) that answers HTTP Range requests or serves the "
            "whole file, and run `tritonlock resolve` again; or lock "
            f"{'it' if n == 1 else 'them'} unchecked: `tritonlock resolve --allow-unchecked-native` (or "
            "allow-unchecked-native = true in [environment]) — the lock then says so, and `tritonlock verify` "
            "imports it on the machine")
    out = []
    for s, pkgs in decided:
        mine = [(p, unread[w.sha256]) for p in (pkgs if s.ok else ()) for w in p.wheels if w.sha256 in unread]
        if mine:
            s = dataclasses.replace(s, warnings=s.warnings + tuple(
                f"{p.name} {p.version}: its native code was NOT checked — {f.filename} could not be read "
                f"({f.problem}); it is locked unchecked, as allowed (allow-unchecked-native): `tritonlock verify` "
                "imports it on the machine" for p, f in dict.fromkeys(mine)))
        out.append((s, pkgs))
    notes = tuple(f"{f.filename}: its native code could not be read ({f.problem}); the decision went on without "
                  "it (it is not locked)" for sha, f in sorted(unread.items()) if sha not in locked)
    return out, notes, None
