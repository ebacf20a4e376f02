"""Whether a project's lock is stale against its intent and the matrix: what `show`, `export`, `verify` and `sync
--locked` say of it."""

from __future__ import annotations

from pathlib import Path

from tritonlock.errors import TritonlockError
from tritonlock.models import Lock

LOCK_FILE = "triton-env.lock"


def lock_staleness(project_dir: Path, lock: Lock) -> str | None:
    """Why the project's lock is stale against its triton-env.toml and the matrix; None when it is fresh or there is
    no intent beside it to compare with. The byte-level digest answers first, so a fresh lock costs no TOML parse."""
    from tritonlock import _fast
    from tritonlock.lock import lockfile

    from tritonlock._discover import intent_file

    intent_path, lock_path = intent_file(project_dir), project_dir / LOCK_FILE
    if not intent_path.is_file():
        return None
    if lock.inputs_from != "file" and _fast.lock_is_fresh(intent_path, lock_path, None):
        return None
    from tritonlock.intent.read import read_intent

    try:
        intent = read_intent(intent_path)
    except TritonlockError as err:
        return f"{intent_path} cannot be read ({str(err).splitlines()[0]})"
    return lockfile.staleness(lock, intent, _fast.matrix_version() or lock.matrix_version)


def stale_warning(project_dir: Path, lock: Lock, doing: str) -> str | None:
    """The one line `show`, `export` and `verify` print for a stale lock (they go on; `sync --locked` refuses)."""
    why = lock_staleness(project_dir, lock)
    if why is None:
        return None
    return (f"warning: {project_dir / LOCK_FILE} is stale ({why}); {doing} it as it is — run `tritonlock resolve` to "
            "update it")
