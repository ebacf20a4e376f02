"""Release day: the index already serves a torch or Triton the compatibility matrix does not know. resolve decides
only among the releases the matrix knows (their facts are reviewed); it says, in one line each, what it left out,
instead of letting the newest known release pass for the newest there is."""

from __future__ import annotations

from collections.abc import Iterable

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from tritonlock.compat.matrix import Matrix


def _versions(filenames: Iterable[str]) -> set[Version]:
    out = set()
    for name in filenames:
        if not name.endswith(".whl"):
            continue
        try:
            _, v, _, _ = parse_wheel_filename(name)
        except InvalidWheelFilename:
            continue
        if not v.is_prerelease and not v.is_devrelease:
            out.add(Version(v.public))
    return out


def unknown_lines(package: str, filenames: Iterable[str], known: Iterable[str], matrix_version: str) -> list[str]:
    """One line naming the releases of `package` among `filenames` newer than every release the matrix knows."""
    known_v = {Version(Version(k).public) for k in known}
    if not known_v:
        return []
    newest = max(known_v)
    new = sorted(v for v in _versions(filenames) if v > newest)
    if not new:
        return []
    names = ", ".join(str(v) for v in new)
    verb, it = ("is", "it is") if len(new) == 1 else ("are", "they are")
    return [f"{package} {names} {verb} on the index but not in matrix {matrix_version}; {it} not considered "
            f"(the newest the matrix knows is {newest}; a newer tritonlock or `tritonlock compat check --new` drafts "
            "its rows)"]


def release_day(matrix: Matrix, indexes: Iterable[str]) -> tuple[str, ...]:
    """The lines for torch and triton on the indexes the lock takes them from; an index that does not answer adds no
    line (the closure reports it)."""
    from tritonlock.errors import TritonlockError
    from tritonlock.lock.index import project_files

    files: dict[str, set[str]] = {"torch": set(), "triton": set()}
    for url in dict.fromkeys(indexes):
        for name in files:
            try:
                files[name] |= {f.filename for f in project_files(url, name, timeout=10) if not f.yanked}
            except (TritonlockError, OSError, ValueError):
                continue
    lines = unknown_lines("torch", files["torch"], [r.version for r in matrix.torch], matrix.version)
    lines += unknown_lines("triton", files["triton"], [r.version for r in matrix.triton], matrix.version)
    return tuple(lines)
