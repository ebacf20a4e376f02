"""The no-op fast path of `sync` and the two marker files it reads: standard library only (os, json, hashlib,
pathlib; tritonlock._files uses nothing more), so that `tritonlock sync --no-verify` on a venv that already
matches costs little more than Python's start-up."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from tritonlock._files import read_bytes

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# How tritonlock made this venv (Python, --system-site-packages, the base interpreter): kept for its life.
MADE = ".tritonlock-made.json"
# Written only after a sync completed, removed before an install starts: its absence after a kill means
# "check every distribution's files", its presence lets a no-op sync answer from file stats alone.
SYNCED = ".tritonlock-synced.json"
STATE_FORMAT = 1


def site_dirs(venv: Path) -> list[Path]:
    if os.name == "nt":
        return [venv / "Lib" / "site-packages"]
    return sorted((venv / "lib").glob("python3*/site-packages"))


def dist_infos(site: Path) -> list[Path]:
    try:
        return sorted(p for p in site.iterdir() if p.name.endswith(".dist-info") and p.is_dir())
    except OSError:
        return []


def place(venv: Path) -> Path:
    """Where the venv's directory is: a venv that is a symbolic link (`.venv -> /scratch/envs/x`) is rebuilt and
    swapped where the link points, so the link stays the user's, as it was."""
    return Path(os.path.realpath(venv)) if os.path.islink(venv) else venv


def siblings(venv: Path) -> tuple[Path, Path]:
    """Where a rebuild is made (…-new) and where the old venv waits during a two-step swap (…-old): beside the
    venv's directory (beside what a symbolic link points at)."""
    at = place(venv)
    return (at.parent / f".{at.name}.tritonlock-new", at.parent / f".{at.name}.tritonlock-old")


def fingerprint(venv: Path) -> dict[str, list[int]]:
    """.dist-info name → [mtime_ns, size] of its RECORD ([] when it has none): what changes when anything
    installs, upgrades or removes a distribution."""
    out: dict[str, list[int]] = {}
    for site in site_dirs(venv):
        for d in dist_infos(site):
            try:
                st = os.stat(d / "RECORD")
            except OSError:
                out[d.name] = []
                continue
            out[d.name] = [st.st_mtime_ns, st.st_size]
    return out


def _recorded(venv: Path) -> list[tuple[str, list[str]]]:
    """(site directory's real path, the paths its RECORDs list), byte-code caches left out."""
    import csv

    out: list[tuple[str, list[str]]] = []
    for site in site_dirs(venv):
        real = os.path.realpath(site)
        paths: list[str] = []
        for d in dist_infos(site):
            try:
                text = (d / "RECORD").read_text(encoding="utf-8", errors="replace")
                lines = text.replace("\0", "").splitlines()
                paths += [p for p in ([line.split(",", 1)[0] for line in lines] if '"' not in text
                                      else [row[0] for row in csv.reader(lines) if row])
                          if p and "__pycache__" not in p]
            except (OSError, csv.Error):
                continue
        out.append((real, paths))
    return out


def record_files(venv: Path) -> list[str]:
    """Every file (relative to the venv) that a RECORD lists: its size and time are what a file edited in place
    changes (its folder's time does not), so the no-op check stats each of them — as sync's full check reads their
    sizes — and the two forms of sync agree about an edit."""
    root = os.path.realpath(venv)
    return sorted({os.path.relpath(os.path.normpath(os.path.join(real, p)), root)
                   for real, paths in _recorded(venv) for p in paths})


def files_digest(venv: Path, files: list[str]) -> str:
    """Size and modification time of each of these files of the venv (see `record_files`), as one digest: one stat
    per file (relative to the venv's directory, where the platform allows), nothing read."""
    stats: list[tuple[int, int] | None] = []
    add, stat = stats.append, os.stat
    fd = None
    try:
        if stat in os.supports_dir_fd:
            fd = os.open(venv, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        fd = None
    try:
        base = str(venv)
        for rel in files:
            try:
                st = stat(rel, dir_fd=fd) if fd is not None else stat(os.path.join(base, rel))
                add((st.st_size, st.st_mtime_ns))
            except (OSError, ValueError):
                add(None)
    finally:
        if fd is not None:
            os.close(fd)
    return hashlib.sha256(repr([len(files), stats]).encode()).hexdigest()


def record_dirs(venv: Path) -> list[str]:
    """Every directory (relative to the venv) that holds a file some RECORD lists, with its ancestors up to the
    site directory: deleting any installed file — or a whole package folder — changes one of their times, which
    the no-op check compares (a stat each, no directory is listed). Byte-code caches are left out."""
    out: set[str] = set()
    root = os.path.realpath(venv)
    for site in site_dirs(venv):
        out.add(os.path.relpath(os.path.realpath(site), root))
        out.update(os.path.relpath(os.path.join(os.path.realpath(site), d.name), root) for d in dist_infos(site))
    for real, paths in _recorded(venv):
        parents = {os.path.dirname(p) for p in paths}
        for raw in parents:  # (a few hundred distinct folders for thousands of files)
            parent = os.path.normpath(os.path.join(real, raw))
            while parent.startswith(root + os.sep):
                rel = os.path.relpath(parent, root)
                if rel in out:
                    break
                out.add(rel)
                parent = os.path.dirname(parent)
    return sorted(out)


def dirs_digest(venv: Path, dirs: list[str]) -> str:
    """The modification times of these directories of the venv (see `record_dirs`), as one digest."""
    base, stat = str(venv), os.stat
    parts: list[str] = []
    for rel in dirs:
        try:
            parts.append(f"{rel}\0{stat(os.path.join(base, rel)).st_mtime_ns}")
        except (OSError, ValueError):
            parts.append(f"{rel}\0-")
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def site_listing(sites: list[str]) -> list[list[str]]:
    """The .dist-info names in each of these directories (the preinstalled stack a venv sees)."""
    return [sorted(p.name for p in dist_infos(Path(s))) for s in sites]


def _read_json(path: Path, valid: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """A marker file, or None when it is missing, not ours, or not of the shape tritonlock writes (a marker edited by
    hand, or by something else, is ignored — never trusted, never a traceback)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT or not valid(data):
        return None
    return data


def _strs(v: object) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _made_ok(d: dict[str, Any]) -> bool:
    return (isinstance(d.get("python"), str) and isinstance(d.get("system-site-packages"), bool)
            and isinstance(d.get("base-python"), (str, type(None))) and _strs(d.get("base-sites")))


def _synced_ok(d: dict[str, Any]) -> bool:
    dists, base = d.get("dists"), d.get("base")
    return (isinstance(d.get("key"), (str, type(None))) and isinstance(d.get("target"), str)
            and isinstance(d.get("packages"), int) and isinstance(d.get("system-site-packages"), bool)
            and isinstance(d.get("cfg"), str) and isinstance(dists, dict)
            and all(isinstance(v, list) and all(isinstance(x, int) for x in v) for v in dists.values())
            and isinstance(base, list) and all(_strs(x) for x in base)
            and _strs(d.get("dirs")) and isinstance(d.get("dirs-digest"), str)
            and isinstance(d.get("files"), str) and isinstance(d.get("files-digest"), str))


def _write_json(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps({"format": STATE_FORMAT, **data}, indent=1, sort_keys=True) + "\n"
    try:
        if path.read_text(encoding="utf-8") == text:
            return  # a no-op sync leaves the venv untouched, its markers included
    except (OSError, UnicodeDecodeError):
        pass
    from tritonlock._files import write_atomic

    write_atomic(path, text, what="sync")  # never through a link planted in the venv


def read_made(venv: Path) -> dict[str, Any] | None:
    return _read_json(venv / MADE, _made_ok)


def write_made(venv: Path, *, python: str, system_site_packages: bool, base_python: str | None,
               base_sites: list[str], created_by: str) -> None:
    _write_json(venv / MADE, {"python": python, "system-site-packages": system_site_packages,
                              "base-python": base_python, "base-sites": base_sites, "created-by": created_by})


def read_synced(venv: Path) -> dict[str, Any] | None:
    return _read_json(venv / SYNCED, _synced_ok)


def drop_synced(venv: Path) -> dict[str, Any] | None:
    """Remove the completed-sync stamp before changing the venv; returns what it said."""
    data = read_synced(venv)
    try:
        os.unlink(venv / SYNCED)
    except FileNotFoundError:
        pass
    return data


def write_synced(venv: Path, *, key: str | None, target: str, packages: int, system_site_packages: bool,
                 base_sites: list[str]) -> None:
    dirs = record_dirs(venv)
    files = record_files(venv)
    _write_json(venv / SYNCED, {"key": key, "target": target, "packages": packages,
                                "system-site-packages": system_site_packages, "dists": fingerprint(venv),
                                "base": site_listing(base_sites), "cfg": cfg_digest(venv), "dirs": dirs,
                                "dirs-digest": dirs_digest(venv, dirs),
                                # one string, not a list: thousands of paths parse in a fraction of the time
                                "files": "\n".join(files), "files-digest": files_digest(venv, files)})


def cfg_digest(venv: Path) -> str:
    try:
        return hashlib.sha256((venv / "pyvenv.cfg").read_bytes()).hexdigest()
    except OSError:
        return ""


def restore_synced(venv: Path, data: dict[str, Any]) -> None:
    data = {k: v for k, v in data.items() if k != "format"}
    _write_json(venv / SYNCED, data)


def _code_stamp() -> list[object]:
    """This tritonlock's version and the stats of its modules and of its compat/ data: a new release, an edited
    checkout or new compatibility data may judge locks and venvs otherwise, so the first sync after takes the full
    path."""
    from tritonlock import __version__
    from tritonlock._data import compat_root

    import tritonlock

    stats: list[object] = [__version__]
    for d in (Path(tritonlock.__file__).parent, compat_root()):
        if d is None:
            stats.append(None)
            continue
        try:
            # the whole package, its sub-packages too (sorted paths: the same tree gives the same stamp)
            for path in sorted(d.rglob("*")):
                if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts:
                    st = path.stat()
                    stats.append([str(path.relative_to(d)), st.st_mtime_ns, st.st_size])
        except OSError:
            stats.append(None)
    return stats


def target_files(project: Path, intent_bytes: bytes | None) -> str:
    """The digest of the host files the intent's `target-files` includes (their edits make a lock stale, so they
    are inputs of a sync's answer as much as the intent itself)."""
    if intent_bytes is None or b"target-files" not in intent_bytes:
        return ""
    from tritonlock._fast import target_files_key

    try:
        return target_files_key(project / "triton-env.toml", intent_bytes)
    except (OSError, ValueError):
        return "unreadable"


def sync_key(*, lock_bytes: bytes, intent_bytes: bytes | None, machine: str | None, target: str | None,
             python: str | None, files: str = "") -> str | None:
    """Everything besides the venv that a sync's answer depends on (`files`: see `target_files`); None when it
    cannot be told cheaply."""
    if machine is None:
        return None
    h = hashlib.sha256()
    for part in (lock_bytes, intent_bytes if intent_bytes is not None else b"\0none",
                 json.dumps([machine, target, python, files, _code_stamp()]).encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def already_synced(project: Path, venv: Path, *, target: str | None, python: str | None,
                   system_site_packages: bool | None, locked: bool = False) -> str | None:
    """The "already matches" line when the last completed sync of this venv had exactly these inputs and no
    distribution (nor the preinstalled stack it sees) changed since; None means "take the full path"."""
    stamp = read_synced(venv)
    if stamp is None or not stamp.get("key") or any(s.exists() for s in siblings(venv)):
        return None  # (a killed sync left something beside the venv: the full path cleans it up)
    if system_site_packages is not None and system_site_packages != stamp.get("system-site-packages"):
        return None
    try:
        lock_bytes = read_bytes(project / "triton-env.lock")
        from tritonlock._discover import intent_bytes as relevant_bytes, intent_file

        intent_path = intent_file(project)
        intent_bytes = relevant_bytes(intent_path) if intent_path.exists() else None
    except OSError:
        return None
    if locked and intent_bytes is None:
        return None  # (--locked checks the lock against the intent: the full path says it is missing)
    from tritonlock._machine import raw_machine_key

    key = sync_key(lock_bytes=lock_bytes, intent_bytes=intent_bytes, machine=raw_machine_key(), target=target,
                   python=python, files=target_files(project, intent_bytes))
    if (key is None or key != stamp["key"] or cfg_digest(venv) != stamp.get("cfg")
            or fingerprint(venv) != stamp.get("dists") or dirs_digest(venv, stamp["dirs"]) != stamp["dirs-digest"]
            or files_digest(venv, stamp["files"].split("\n") if stamp["files"] else []) != stamp["files-digest"]):
        # (a file or folder deleted behind sync's back changes its directory's time, a file edited in place its own
        # size or time: look in depth, as the full path does)
        return None
    made = read_made(venv) or {}
    if stamp.get("system-site-packages") and site_listing(made.get("base-sites") or []) != stamp.get("base"):
        return None
    return f"{venv} already matches target {stamp.get('target')} ({stamp.get('packages')} packages)"
