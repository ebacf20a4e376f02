"""The no-change check for `resolve`: file hashes only, before the heavy modules are imported."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from tritonlock._data import compat_root
from tritonlock._files import read_bytes
from tritonlock._machine import raw_machine_key
from tritonlock.errors import TritonlockError


def matrix_version() -> str | None:
    root = compat_root()
    if root is None:
        return None
    from tritonlock import _toml

    try:
        meta = _toml.loads((root / "meta.toml").read_text(encoding="utf-8")).get("meta", {})
    except (OSError, _toml.TOMLDecodeError):
        return None
    version = meta.get("version") if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def machine_json(os_: str, arch: str, glibc: str | None, python: str | None, driver: str | None,
                 cuda: str | None, gpus: tuple[str, ...], macos: str | None = None) -> str:
    # a Mac's version only when known, so that every other machine's key stays what it was
    return json.dumps([os_, arch, glibc, python, driver, cuda, list(gpus)] + ([macos] if macos else []))


def machine_key(inputs_from: str, target_file: str | None) -> str:
    """What, besides the intent and the matrix, the lock's targets came from."""
    if inputs_from == "file" and target_file:
        return hashlib.sha256(read_bytes(target_file)).hexdigest()
    if inputs_from == "host":
        raw = raw_machine_key()
        if raw is not None:
            return raw
        from tritonlock import host

        t = host.to_target(host.detect(toolkit=False, cached=True), name="host")
        return machine_json(t.os, t.arch, t.glibc, t.python, t.driver, t.cuda, t.gpus, t.macos)
    return ""


def target_files_key(intent_path: Path, intent_bytes: bytes) -> str:
    """The bytes of the files the intent's target-files globs match ("" without target-files), so that
    editing hosts/NAME.toml makes the no-change check fail and the full path re-resolve."""
    if b"target-files" not in intent_bytes:
        return ""
    from tritonlock._discover import target_file_globs

    try:
        raw = target_file_globs(intent_path, intent_bytes)
    except (UnicodeDecodeError, ValueError):
        return "unreadable"
    globs = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    base = intent_path.parent
    files: list[tuple[Path, tuple[int, int, int]]] = []
    for pattern in globs:
        if not isinstance(pattern, str) or not pattern.strip() or Path(pattern).is_absolute():
            return "bad-pattern"
        for f in sorted(base.glob(pattern)):
            try:
                st = f.stat()
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                files.append((f, (st.st_size, st.st_mtime_ns, st.st_ino)))
    # a command asks more than once (its staleness check, the no-op stamp): the files are read again only when
    # their sizes, times or inodes changed
    memo = (os.path.abspath(intent_path), intent_bytes, tuple((os.path.abspath(f), k) for f, k in files))
    if _FILES_KEY.get("key") == memo:
        return str(_FILES_KEY["value"])
    h = hashlib.sha256()
    for f, _ in files:
        h.update(f.relative_to(base).as_posix().encode() + b"\0" + read_bytes(f) + b"\0")
    _FILES_KEY.update(key=memo, value=h.hexdigest())
    return h.hexdigest()


_FILES_KEY: dict[str, object] = {}


def input_digest(intent_bytes: bytes, matrix_version: str, key: str) -> str:
    import re

    # user:token@ in an index URL is left out: the lock must not carry even a hash of a secret (a short one
    # could be guessed back from it), and a new token does not change what is locked.
    h = hashlib.sha256(re.sub(rb"(://)[^/\s\"']+@", rb"\1", intent_bytes))  # (to the last @: "user:p@ss@host")
    h.update(b"\0" + matrix_version.encode() + b"\0" + key.encode())
    return "sha256:" + h.hexdigest()


def _header(lock_path: Path) -> dict[str, str]:
    """Top-level string keys of a lock, read line by line up to the first table."""
    import stat

    out: dict[str, str] = {}
    if not stat.S_ISREG(lock_path.stat().st_mode):  # a FIFO or device would block or never end
        raise OSError(f"{lock_path} is not a regular file")
    with lock_path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("["):
                break
            key, sep, value = line.partition(" = ")
            if sep and value.startswith('"'):
                out[key.strip()] = value.strip().strip('"')
    return out


def lock_is_fresh(intent_path: Path, lock_path: Path, target_file: str | None) -> bool:
    """True when the lock was written from exactly these bytes, this matrix and this machine."""
    try:
        head = _header(lock_path)
        from tritonlock._discover import intent_bytes as relevant_bytes

        intent_bytes = relevant_bytes(intent_path)  # of a pyproject.toml, only what the lock depends on
    except (OSError, UnicodeDecodeError):
        return False
    want = head.get("input-digest")
    from tritonlock import LOCK_VERSION

    if head.get("lock-version", "").split(".")[0] != LOCK_VERSION.split(".")[0]:
        return False  # another format: the full path reads it and says what to do
    inputs_from = head.get("inputs-from", "")
    if not want or (inputs_from == "file") != bool(target_file):
        return False
    version = matrix_version()
    if version is None or version != head.get("matrix-version"):
        return False
    try:
        key = machine_key(inputs_from, target_file) + target_files_key(intent_path, intent_bytes)
    except (OSError, ValueError, TritonlockError):  # any doubt means "not fresh": the full path re-checks
        return False
    if input_digest(intent_bytes, version, key) != want:
        return False
    # The header matches, but the rest must too: a lock that every other command refuses (not valid TOML, a
    # table edited after it was written) is never up to date — the full path replaces it and says why.
    from tritonlock.lock.lockfile import read_lock

    try:
        read_lock(lock_path)
    except TritonlockError:
        return False
    return True
