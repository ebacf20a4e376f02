"""`add` and `remove` end to end: the intent edited (tritonlock.intent.edit), locked for every target, or — when any
target cannot be locked (a conflict, an index down, Ctrl-C) — the intent and the lock put back as they were, byte for
byte, and the error says so."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tritonlock.errors import ClosureError, ResolveError, TritonlockError

if TYPE_CHECKING:
    from tritonlock._term import TargetProgress
    from tritonlock.intent.edit import Edit
    from tritonlock.project import LockOutcome


class Interrupted(TritonlockError):
    """Ctrl-C during `add` / `remove`: the files were put back; exit 130 as every interrupted command."""

    exit_code = 130


def _read(path: Path) -> bytes | None:
    from tritonlock._files import read_bytes

    try:
        return read_bytes(path)
    except FileNotFoundError:
        return None


def _put_back(path: Path, before: bytes | None) -> None:
    """The file as it was: its bytes written back (atomically), or removed where there was none."""
    from tritonlock._files import write_atomic

    if _read(path) == before:
        return
    if before is None:
        path.unlink(missing_ok=True)
    else:
        write_atomic(path, before, what="put back")


def unchanged_note(edit: Edit, lock_path: Path, lock_before: bytes | None, verb: str) -> str:
    files = (f"{edit.path.name} and {lock_path.name} are as they were" if lock_before is not None
             else f"{edit.path.name} is as it was (no lock was written)")
    return (f"nothing was changed: {files} — `tritonlock {verb}` changes them only when every target locks "
            "(the reason is above)")


def edit_and_lock(edit: Edit, lock_path: Path, *, verb: str, target_file: str | None = None,
                  progress: TargetProgress | None = None, free: tuple[str, ...] = ()) -> LockOutcome:
    """Write the edited intent, then lock every target keeping the existing lock's pins but those of `free` (what
    `add` added: requirements) and what they force; on any failure put both files back and say so."""
    from tritonlock._files import write_file
    from tritonlock.project import lock_project

    lock_before = _read(lock_path)
    if edit.changed:
        write_file(edit.path, edit.after, what=verb, force=False, replace="edit")
    try:
        return lock_project(edit.path, lock_path, target_file=target_file, progress=progress, strict=True,
                            keep_pins=True, upgrade_packages=free)
    except BaseException as err:
        _put_back(edit.path, edit.before)
        _put_back(lock_path, lock_before)
        note = unchanged_note(edit, lock_path, lock_before, verb)
        if isinstance(err, KeyboardInterrupt):
            raise Interrupted(f"interrupted (Ctrl-C); {note.replace(' (the reason is above)', '')}") from None
        if isinstance(err, TritonlockError):
            conflict = _as_conflict(err)
            if conflict is not None:
                raise ResolveError(f"{conflict}\n{note}") from None
            err.args = (f"{err}\n{note}", *err.args[1:])
        raise


# uv's words for requirements that cannot all hold (a conflict), and for what is rather an index's doing (a package it
# does not have, a request that failed): only the first is a conflict
_UNSATISFIABLE = ("No solution found when resolving dependencies", "requirements are unsatisfiable")
_INDEX_TROUBLE = ("not found in the package registry", "was not found in the cache", "Failed to fetch",
                  "error sending request", "Could not connect", "HTTP status", "network", "timed out", "dns error")


def _as_conflict(err: TritonlockError) -> str | None:
    """uv found no closure because the requirements cannot all hold (a package the edit added against one the
    intent already names, say): that is a conflict — exit 3, as every conflict — with a fix that fits it; an index
    that lacks a package or does not answer stays uv's failure (exit 4)."""
    if not isinstance(err, ClosureError):
        return None
    text = err.uv or str(err)
    if not any(w in text for w in _UNSATISFIABLE) or any(w.lower() in text.lower() for w in _INDEX_TROUBLE):
        return None
    head = str(err).split("\n  fix: ", 1)[0]
    return (f"{head}\n  fix: the requirements above cannot all hold — loosen or drop one of those uv names (in the "
            "intent, or in the command)")
