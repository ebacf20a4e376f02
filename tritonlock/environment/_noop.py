"""The no-op fast path of `sync` and the two marker files it reads: standard library only, and of that only what
Python's start-up has already loaded (os, and the interpreter's own C modules for JSON and sha256) — no pathlib,
typing, re, json or hashlib — so that `tritonlock sync --no-verify` on a venv that already matches costs little more
than Python's start-up. Paths are plain strings here; the functions other modules call still take and give Paths."""

from __future__ import annotations

import os

from tritonlock._files import read_bytes
from tritonlock._machine import sha256_hex
from tritonlock._stamp import code_stamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

# How tritonlock made this venv (Python, --system-site-packages, the base interpreter): kept for its life.
MADE = ".tritonlock-made.json"
# Written only after a sync completed, removed before an install starts: its absence after a kill means
# "check every distribution's files", its presence lets a no-op sync answer from file stats alone.
SYNCED = ".tritonlock-synced.json"
STATE_FORMAT = 1


def _site_dirs(venv: str) -> list[str]:
    """site_dirs as strings: what (venv / "lib").glob("python3*/site-packages") finds, sorted."""
    if os.name == "nt":
        return [os.path.join(venv, "Lib", "site-packages")]
    lib = os.path.join(venv, "lib")
    try:
        names = sorted(n for n in os.listdir(lib) if n.startswith("python3") and os.path.isdir(os.path.join(lib, n)))
    except OSError:
        return []
    return [p for n in names if os.path.lexists(p := os.path.join(lib, n, "site-packages"))]


def _dist_info_names(site: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(site) if n.endswith(".dist-info") and os.path.isdir(os.path.join(site, n)))
    except OSError:
        return []


def site_dirs(venv: Path) -> list[Path]:
    from pathlib import Path

    return [Path(s) for s in _site_dirs(os.fspath(venv))]


def dist_infos(site: Path) -> list[Path]:
    from pathlib import Path

    return [Path(site) / n for n in _dist_info_names(os.fspath(site))]


def place(venv: Path) -> Path:
    """Where the venv's directory is: a venv that is a symbolic link (`.venv -> /scratch/envs/x`) is rebuilt and
    swapped where the link points, so the link stays the user's, as it was."""
    if not os.path.islink(venv):
        return venv
    from pathlib import Path

    return Path(os.path.realpath(venv))


def siblings(venv: Path) -> tuple[Path, Path]:
    """Where a rebuild is made (…-new) and where the old venv waits during a two-step swap (…-old): beside the
    venv's directory (beside what a symbolic link points at)."""
    at = place(venv)
    return (at.parent / f".{at.name}.tritonlock-new", at.parent / f".{at.name}.tritonlock-old")


def _siblings(venv: str) -> tuple[str, str]:
    """siblings(), as strings (pathlib's parent and name: "." has no name)."""
    path = _as_pathlib_says(venv)
    parent, name = os.path.split(path)
    if path == ".":
        parent, name = ".", ""
    return (_as_pathlib_says(os.path.join(parent or ".", f".{name}.tritonlock-new")),
            _as_pathlib_says(os.path.join(parent or ".", f".{name}.tritonlock-old")))


def fingerprint(venv: Path | str) -> dict[str, list[int]]:
    """.dist-info name → [mtime_ns, size] of its RECORD ([] when it has none): what changes when anything
    installs, upgrades or removes a distribution."""
    out: dict[str, list[int]] = {}
    for site in _site_dirs(os.fspath(venv)):
        for name in _dist_info_names(site):
            try:
                st = os.stat(os.path.join(site, name, "RECORD"))
            except OSError:
                out[name] = []
                continue
            out[name] = [st.st_mtime_ns, st.st_size]
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


def files_digest(venv: Path | str, files: list[str]) -> str:
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
    return sha256_hex(repr([len(files), stats]).encode())


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


def dirs_digest(venv: Path | str, dirs: list[str]) -> str:
    """The modification times of these directories of the venv (see `record_dirs`), as one digest."""
    base, stat = os.fspath(venv), os.stat
    parts: list[str] = []
    for rel in dirs:
        try:
            parts.append(f"{rel}\0{stat(os.path.join(base, rel)).st_mtime_ns}")
        except (OSError, ValueError):
            parts.append(f"{rel}\0-")
    return sha256_hex("\0".join(parts).encode("utf-8", "surrogateescape"))


def site_listing(sites: list[str]) -> list[list[str]]:
    """The .dist-info names in each of these directories (the preinstalled stack a venv sees)."""
    return [_dist_info_names(s) for s in sites]


class _Decoder:
    """What the C JSON scanner asks of a decoder (json.decoder.JSONDecoder's defaults)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict[str, str] = {}

    @staticmethod
    def parse_constant(name: str) -> object:
        raise ValueError(name)  # NaN, Infinity: never in a marker tritonlock wrote


def _loads(text: str) -> object:
    """json.loads for a marker file, through the interpreter's C scanner (the json package imports re)."""
    try:
        from _json import make_scanner
    except ImportError:  # pragma: no cover - an interpreter without the C accelerator
        import json

        return json.loads(text)
    scan = make_scanner(_Decoder())  # type: ignore[arg-type]  # (any object with a decoder's attributes)
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        value, end = scan(text, start)
    except StopIteration as err:
        raise ValueError(f"not JSON at {err.value}") from None
    except SystemError:  # (CPython's scanner on '{' nested a hundred thousand deep: no marker tritonlock wrote)
        raise ValueError("nested too deeply") from None
    if text[end:].strip(" \t\n\r"):
        raise ValueError("extra data")
    return value


def _read_json(path: Path | str, valid: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """A marker file, or None when it is missing, not ours, or not of the shape tritonlock writes (a marker edited by
    hand, or by something else, is ignored — never trusted, never a traceback)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = _loads(fh.read())
    except (OSError, ValueError, RecursionError):  # (json's own JSONDecodeError is a ValueError)
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
    import json

    text = json.dumps({"format": STATE_FORMAT, **data}, indent=1, sort_keys=True) + "\n"
    try:
        if path.read_text(encoding="utf-8") == text:
            return  # a no-op sync leaves the venv untouched, its markers included
    except (OSError, UnicodeDecodeError):
        pass
    from tritonlock._files import write_atomic

    write_atomic(path, text, what="sync")  # never through a link planted in the venv


def read_made(venv: Path | str) -> dict[str, Any] | None:
    return _read_json(os.path.join(venv, MADE), _made_ok)


def write_made(venv: Path, *, python: str, system_site_packages: bool, base_python: str | None,
               base_sites: list[str], created_by: str) -> None:
    _write_json(venv / MADE, {"python": python, "system-site-packages": system_site_packages,
                              "base-python": base_python, "base-sites": base_sites, "created-by": created_by})


def read_synced(venv: Path | str) -> dict[str, Any] | None:
    return _read_json(os.path.join(venv, SYNCED), _synced_ok)


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


def cfg_digest(venv: Path | str) -> str:
    try:
        with open(os.path.join(venv, "pyvenv.cfg"), "rb") as fh:
            return sha256_hex(fh.read())
    except OSError:
        return ""


def restore_synced(venv: Path, data: dict[str, Any]) -> None:
    data = {k: v for k, v in data.items() if k != "format"}
    _write_json(venv / SYNCED, data)


def target_files(project: Path | str, intent_bytes: bytes | None) -> str:
    """The digest of the host files the intent's `target-files` includes (their edits make a lock stale, so they
    are inputs of a sync's answer as much as the intent itself)."""
    if intent_bytes is None or b"target-files" not in intent_bytes:
        return ""
    from pathlib import Path

    from tritonlock._fast import target_files_key

    try:
        return target_files_key(Path(project) / "triton-env.toml", intent_bytes)
    except (OSError, ValueError):
        return "unreadable"


def sync_key(*, lock_bytes: bytes, intent_bytes: bytes | None, machine: str | None, target: str | None,
             python: str | None, files: str = "") -> str | None:
    """Everything besides the venv that a sync's answer depends on (`files`: see `target_files`); None when it
    cannot be told cheaply."""
    if machine is None:
        return None
    parts = (lock_bytes, intent_bytes if intent_bytes is not None else b"\0none",
             repr([machine, target, python, files, code_stamp()]).encode("utf-8", "surrogateescape"))
    return sha256_hex(b"".join(sha256_hex(part).encode() for part in parts))


def _as_pathlib_says(path: str) -> str:
    """str(Path(path)) without pathlib: "." components and doubled separators dropped, ".." kept."""
    if os.name == "nt":  # pragma: no cover - drive letters and both separators: pathlib's own rules
        from pathlib import Path

        return str(Path(path))
    parts = [x for x in path.split("/") if x not in ("", ".")]
    text = "/".join(parts)
    if path.startswith("/"):
        text = ("//" if path.startswith("//") and not path.startswith("///") else "/") + text
    return text or "."


def already_synced(project: Path | str, venv: Path | str, *, target: str | None, python: str | None,
                   system_site_packages: bool | None, locked: bool = False) -> str | None:
    """The "already matches" line when the last completed sync of this venv had exactly these inputs and no
    distribution (nor the preinstalled stack it sees) changed since; None means "take the full path"."""
    venv, project = _as_pathlib_says(os.fspath(venv)), os.fspath(project)
    stamp = read_synced(venv)
    if stamp is None or not stamp.get("key") or any(os.path.lexists(s) for s in _siblings(venv)):
        return None  # (a killed sync left something beside the venv: the full path cleans it up)
    if system_site_packages is not None and system_site_packages != stamp.get("system-site-packages"):
        return None
    try:
        lock_bytes = read_bytes(os.path.join(project, "triton-env.lock"))
        from tritonlock._discover import PYPROJECT, has_tritonlock_table, intent_bytes as relevant_bytes

        # the project's intent as _discover.intent_file finds it (both files at once: the full path says so)
        env, py = os.path.join(project, "triton-env.toml"), os.path.join(project, PYPROJECT)
        in_py = has_tritonlock_table(py)
        if in_py and os.path.isfile(env):
            return None
        intent_path = py if in_py else env
        intent_bytes = relevant_bytes(intent_path) if os.path.exists(intent_path) else None
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
