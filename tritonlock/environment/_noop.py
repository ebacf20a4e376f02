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


def _open_dir(venv: Path | str, base: str) -> int | None:
    """A descriptor of the venv's folder `base` (its site directory, usually) that the stats below resolve names
    against — one path lookup for the folder, not one per file; None where the platform cannot."""
    if os.stat not in os.supports_dir_fd:
        return None
    try:
        return os.open(os.path.join(os.fspath(venv), base) if base else venv,
                       os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def files_digest(venv: Path | str, files: list[str], base: str = "") -> str:
    """Size and modification time of each of these files of the venv (see `record_files`; relative to its folder
    `base`), as one digest: one stat per file, nothing read. The digest is Python's own hash of the tuple of those
    integers (for integers it is the same in every process of one Python version, and the stamp is keyed on that
    version through the machine key): a quarter of the time of hashing their text."""
    stats: list[int] = []
    add, stat = stats.extend, os.stat
    fd = _open_dir(venv, base)
    try:
        root = os.path.join(os.fspath(venv), base)
        for rel in files:
            try:
                st = stat(rel, dir_fd=fd) if fd is not None else stat(os.path.join(root, rel))
                add((st.st_size, st.st_mtime_ns))
            except (OSError, ValueError):
                add((-1, -1))
    finally:
        if fd is not None:
            os.close(fd)
    return f"{len(files)}:{hash(tuple(stats))}"


def site_base(venv: Path | str) -> str:
    """The venv's (first) site directory, relative to it: what the stamp's paths are written relative to (the
    same 28 characters left off sixteen thousand paths is a third of the stamp, read by every no-op)."""
    sites = _site_dirs(os.fspath(venv))
    return os.path.relpath(os.path.realpath(sites[0]), os.path.realpath(venv)) if sites else ""


def under(base: str, rel: str) -> str:
    """A path relative to the venv, made relative to its folder `base` (a path outside it climbs out with "..")."""
    if not base:
        return rel
    if rel == base:
        return "."
    if rel.startswith(base + "/"):
        return rel[len(base) + 1:]
    return "../" * (base.count("/") + 1) + rel


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


def dir_times(venv: Path | str, dirs: list[str], base: str = "") -> list[int]:
    """The modification times of these directories of the venv (see `record_dirs`; relative to its folder `base`);
    -1 for one that is not there."""
    stat = os.stat
    out: list[int] = []
    add = out.append
    fd = _open_dir(venv, base)
    root = os.path.join(os.fspath(venv), base)
    try:
        for rel in dirs:
            try:
                add((stat(rel, dir_fd=fd) if fd is not None else stat(os.path.join(root, rel))).st_mtime_ns)
            except (OSError, ValueError):
                add(-1)
    finally:
        if fd is not None:
            os.close(fd)
    return out


def dir_listing(venv: Path | str, rel: str, base: str = "") -> str:
    """What a directory holds, as a short digest — its byte-code cache (`__pycache__`) left out: Python writes one
    beside the modules it imports (verify, `tritonlock run`), which changes the folder's time and nothing a sync
    checks; a stray module or a deleted one changes this."""
    try:
        names = sorted(n for n in os.listdir(os.path.join(os.fspath(venv), base, rel)) if n != "__pycache__")
    except OSError:
        return "-"
    return sha256_hex("\0".join(names).encode("utf-8", "surrogateescape"))[:16]


def _dirs_unchanged(venv: str, stamp: dict[str, Any]) -> bool:
    """Whether the recorded folders hold what they held when the stamp was written: each one's time as recorded,
    or — where a time moved — the same entries but for a byte-code cache (listed only then)."""
    dirs, base = stamp["dirs"].split("\n") if stamp["dirs"] else [], stamp["base-dir"]
    now, then = dir_times(venv, dirs, base), stamp["dir-times"]
    if now == then:
        return True
    if len(now) != len(then):
        return False
    lists = stamp["dir-lists"].split("\n")
    if len(lists) != len(dirs):
        return False
    for i, (a, b) in enumerate(zip(now, then)):
        if a != b and (a < 0 or b < 0 or dir_listing(venv, dirs[i], base) != lists[i]):
            return False
    return True


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
    dists, base, times = d.get("dists"), d.get("base"), d.get("dir-times")
    return (isinstance(d.get("key"), (str, type(None))) and isinstance(d.get("target"), str)
            and isinstance(d.get("packages"), int) and isinstance(d.get("system-site-packages"), bool)
            and isinstance(d.get("cfg"), str) and isinstance(dists, dict)
            and all(isinstance(v, list) and all(isinstance(x, int) for x in v) for v in dists.values())
            and isinstance(base, list) and all(_strs(x) for x in base)
            and isinstance(d.get("dirs"), str) and isinstance(times, list)
            and all(isinstance(x, int) and not isinstance(x, bool) for x in times)
            and isinstance(d.get("dir-lists"), str)
            and isinstance(d.get("files"), str) and isinstance(d.get("files-digest"), str)
            and isinstance(d.get("base-dir"), str))


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
    base = site_base(venv)
    dirs = [under(base, d) for d in record_dirs(venv)]
    files = [under(base, f) for f in record_files(venv)]
    _write_json(venv / SYNCED, {"key": key, "target": target, "packages": packages,
                                "system-site-packages": system_site_packages, "dists": fingerprint(venv),
                                "base": site_listing(base_sites), "cfg": cfg_digest(venv), "base-dir": base,
                                # one string, not a list: thousands of paths parse in a fraction of the time
                                "dirs": "\n".join(dirs), "dir-times": dir_times(venv, dirs, base),
                                "dir-lists": "\n".join(dir_listing(venv, d, base) for d in dirs),
                                "files": "\n".join(files), "files-digest": files_digest(venv, files, base)})


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


def matching_stamp(project: Path | str, venv: Path | str, *, target: str | None, python: str | None,
                   system_site_packages: bool | None, locked: bool = False) -> dict[str, Any] | None:
    """The venv's completed-sync stamp when the last completed sync of it had exactly these inputs and no
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

    own = ""
    if in_py and intent_bytes is not None:  # the project itself, installed editable: its build's inputs too
        from tritonlock.environment._project import key_part

        own = key_part(project)
    machine, files = raw_machine_key(), target_files(project, intent_bytes) + own
    key = sync_key(lock_bytes=lock_bytes, intent_bytes=intent_bytes, machine=machine, target=target,
                   python=python, files=files)
    if (key is None or key != stamp["key"] or cfg_digest(venv) != stamp.get("cfg")
            or fingerprint(venv) != stamp.get("dists") or not _dirs_unchanged(venv, stamp)
            or files_digest(venv, stamp["files"].split("\n") if stamp["files"] else [], stamp["base-dir"])
            != stamp["files-digest"]):
        # (a file or folder deleted behind sync's back changes its directory's time, a file edited in place its own
        # size or time: look in depth, as the full path does)
        return None
    made = read_made(venv) or {}
    if stamp.get("system-site-packages") and site_listing(made.get("base-sites") or []) != stamp.get("base"):
        return None
    # what the answer depends on besides the venv, whatever the command line (--target, --python) that asked: the
    # key of a verify record (see verified_key)
    inputs = sync_key(lock_bytes=lock_bytes, intent_bytes=intent_bytes, machine=machine, target=None, python=None,
                      files=files)
    return {**stamp, "_inputs": inputs}


def already_synced(project: Path | str, venv: Path | str, *, target: str | None, python: str | None,
                   system_site_packages: bool | None, locked: bool = False) -> str | None:
    """The "already matches" line when `matching_stamp` finds the venv as its last completed sync left it."""
    stamp = matching_stamp(project, venv, target=target, python=python, system_site_packages=system_site_packages,
                           locked=locked)
    if stamp is None:
        return None
    return f"{_as_pathlib_says(os.fspath(venv))} already matches target {stamp.get('target')} ({stamp.get('packages')} packages)"


def settle(venv: Path | str, stamp: dict[str, Any]) -> dict[str, Any]:
    """The stamp with its folders' times as they are now, where they moved only by byte-code caches (Python wrote
    them beside the modules verify imported): written back, so the next no-op check finds the times equal and lists
    no folder. Called right after `matching_stamp` accepted the venv; returns the stamp as it now stands."""
    dirs = stamp["dirs"].split("\n") if stamp["dirs"] else []
    now = dir_times(venv, dirs, stamp["base-dir"])
    if now == stamp["dir-times"]:
        return stamp
    new = {**stamp, "dir-times": now}
    from pathlib import Path

    restore_synced(Path(venv), {k: v for k, v in new.items() if not k.startswith("_")})  # (what was read, as read)
    return new


# ---------------------------------------------------------------- verified with nothing changed since

# Written after a verify inside `sync` passed, keyed on what that verify proved: the venv as its completed-sync stamp
# records it (every distribution, every file's size and time, the inputs of the sync: lock, intent, tritonlock, the
# machine key — driver, GPUs, Python), the interpreter the venv runs, and the variables torch, Triton and Inductor
# read. A plain `sync` whose no-op check finds the same answers "verified at <time> with nothing changed since".
VERIFIED = ".tritonlock-verified.json"
# the variables whose values change what verify runs (tlverify/memo.py's list; PATH itself left out: activating the
# venv changes it, and verify's compilers are found by CC/CXX or Triton's own)
_VERIFY_VARS = ("TORCH", "TRITON", "CUDA", "NVIDIA", "HIP", "ROCM", "ROCR", "HSA", "PYTORCH", "INDUCTOR", "CC", "CXX",
                "LD_", "ZE_", "ONEAPI", "SYCL")


def _interpreter(venv: str) -> list[int]:
    """The interpreter the venv runs, as the file it resolves to: a Python upgraded in place is another one."""
    exe = os.path.join(venv, "Scripts", "python.exe") if os.name == "nt" else os.path.join(venv, "bin", "python")
    try:
        st = os.stat(os.path.realpath(exe))
    except OSError:
        return []
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def verified_key(venv: Path | str, stamp: dict[str, Any]) -> str:
    """What a passed verify is valid for (see VERIFIED): what the folders hold, not their times — a byte-code cache
    written by the verify itself changes those and nothing it proved; a file added anywhere changes the first."""
    venv = _as_pathlib_says(os.fspath(venv))
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(_VERIFY_VARS))
    parts = [stamp.get("_inputs"), stamp.get("target"), stamp.get("dists"), stamp.get("base"), stamp.get("cfg"),
             stamp.get("files-digest"), stamp.get("dir-lists"), _interpreter(venv), env]
    return sha256_hex("\0".join(str(p) for p in parts).encode("utf-8", "surrogateescape"))


def _verified_ok(d: dict[str, Any]) -> bool:
    return (isinstance(d.get("key"), str) and isinstance(d.get("when"), (int, float))
            and not isinstance(d.get("when"), bool) and isinstance(d.get("target"), str))


def write_verified(venv: Path, *, ok: bool, stamp: dict[str, Any] | None, when: float | None = None) -> None:
    """After verify inside `sync`: a pass is recorded against the venv's stamp; anything else removes the record
    (a failed or unfinished verify proves nothing, and the next sync verifies again)."""
    import time

    path = os.path.join(os.fspath(venv), VERIFIED)
    if not ok or stamp is None or not stamp.get("_inputs"):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    from pathlib import Path

    _write_json(Path(path), {"key": verified_key(venv, stamp), "target": stamp.get("target", ""),
                             "when": round(time.time() if when is None else when, 3)})


def drop_verified(venv: Path | str) -> None:
    try:
        os.unlink(os.path.join(os.fspath(venv), VERIFIED))
    except FileNotFoundError:
        pass


def verified_line(venv: Path | str, stamp: dict[str, Any]) -> str | None:
    """"<venv> matches target T; verified at <time> with nothing changed since" when the venv's verify record holds
    for this stamp (as `matching_stamp` returns it: with the inputs' key); None otherwise."""
    venv = _as_pathlib_says(os.fspath(venv))
    rec = _read_json(os.path.join(venv, VERIFIED), _verified_ok)
    if (rec is None or not stamp.get("_inputs") or rec["key"] != verified_key(venv, stamp)
            or rec["target"] != stamp.get("target")):
        return None
    import time

    when = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(rec["when"]))
    return (f"{venv} matches target {stamp.get('target')} ({stamp.get('packages')} packages); verified at {when} "
            "with nothing changed since (`tritonlock sync --verify` verifies again)")


def already_verified(project: Path | str, venv: Path | str, *, target: str | None, python: str | None,
                     system_site_packages: bool | None, locked: bool = False) -> str | None:
    """Plain `sync`'s no-op: the venv matches its stamp (`matching_stamp`) and a verify passed on exactly it."""
    stamp = matching_stamp(project, venv, target=target, python=python, system_site_packages=system_site_packages,
                           locked=locked)
    return verified_line(venv, stamp) if stamp is not None else None
