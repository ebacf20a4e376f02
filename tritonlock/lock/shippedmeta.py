"""METADATA shipped with the matrix (compat/metadata/*.toml, written by `tritonlock compat metadata`): the requirement
headers of the files typical locks hold — torch's CUDA libraries above all — keyed by each file's sha256. A first
resolve on a new machine otherwise fetches them again: on an index without PEP 658 hashes the integrity check
downloads every locked file of up to 64 MB whole (150 MB of torch's CUDA closure) and reads the larger ones' METADATA
by ranged reads. A row is used only for a file of that sha256: a file of that sha256 has that METADATA for ever.
`checked` rows were read from the whole file, its bytes hashed to that sha256 (what the integrity check vouches
for); the others from inside the wheel by ranged reads, as its index served them (good for the lock's edges and the
decision's words, never for the check). TRITONLOCK_NO_SHIPPED_FACTS=1 turns these off as it does the binary facts."""

from __future__ import annotations

import os
import re
import threading
from typing import Any

FOLDER = "metadata"  # under compat/
# What compat/metadata may hold in all: the headers of about 1,500 files (each a few hundred bytes; torch's about
# 1.5 kB) — a first resolve's reads of torch's CUDA closure for the torch releases and CPUs typical locks hold;
# 800 kB since each row carries its `source` (the file's name and sha256 again, for a reviewer): 737 kB for 449 rows;
# 900 kB since lmcache's seed locks lmcache first (beside the newest vllm no lmcache loads, and a conflict locks
# nothing): lmcache 0.5.6 with vllm 0.32.0 on the H200, its closure's headers: 860 kB for 509 rows
BUDGET = 900_000
# the headers kept: what the check, the edges and the decision read of a METADATA (its description is left out)
HEADERS = ("Metadata-Version", "Name", "Version", "Requires-Python", "Provides-Extra", "Requires-Dist")
_ROW = "file"
_SHA_LINE = re.compile(r'^sha256 = "([0-9a-f]{64})"\s*$', re.M)


def headers_only(metadata: str) -> str:
    """The HEADERS of a METADATA text's header block, as "Key: value" lines in their order, read as the decision,
    the check and the edges read them (tritonlock.lock._requires.metadata_fields: the block ends at its first empty
    line; a License's blank lines are white space, a continuation — not the end of it)."""
    from tritonlock.lock._requires import header_items

    wanted = {h.lower() for h in HEADERS}
    out = [f"{k}: {' '.join(v.split())}" for k, v in header_items(metadata) if k.lower() in wanted]
    return "\n".join(out) + "\n" if out else ""


def dumps(package: str, rows: list[dict[str, Any]]) -> str:
    """A compat/metadata file: its header, then one [[file]] table per file (sha256, filename, checked, the source a
    reviewer opens, metadata), sorted by file name."""
    from tritonlock.lock.lockfile import toml_value

    lines = [f"# METADATA headers of {package}'s files, read by `tritonlock compat metadata` (tritonlock/maintain/"
             "metadata.py) —", "# generated, do not edit: run the tool again. Each [[file]] is one file, named with "
             "its sha256; resolve", "# uses a row only for a file of that sha256 (tritonlock/lock/shippedmeta.py).",
             "[meta]", f"package = {toml_value(package)}",
             'source = "each row\'s file, by its name and sha256: fetch it from the index, compare its sha256 '
             '(sha256sum), then read its *.dist-info/METADATA (unzip -p)"', ""]
    for row in sorted(rows, key=lambda r: str(r["filename"])):
        how = "the whole file, its bytes hashed to that sha256" if row["checked"] else "ranged reads of the wheel"
        source = f"the file {row['filename']}, sha256 {row['sha256']}: its METADATA, read from {how}"
        lines += [f"[[{_ROW}]]", f"sha256 = {toml_value(row['sha256'])}", f"filename = {toml_value(row['filename'])}",
                  f"checked = {toml_value(bool(row['checked']))}", f"source = {toml_value(source)}",
                  f"metadata = {toml_value(row['metadata'])}", ""]
    return "\n".join(lines)


def loads(text: str) -> list[dict[str, Any]]:
    """The rows of a compat/metadata file, each checked for its keys and their types (ValueError where one is not)."""
    from tritonlock._toml import loads as toml_loads

    doc = toml_loads(text)
    rows = doc.get(_ROW, [])
    if not isinstance(rows, list):
        raise ValueError(f"[[{_ROW}]]: expected tables")
    for row in rows:
        if not (isinstance(row, dict) and isinstance(row.get("sha256"), str) and re.fullmatch(
                "[0-9a-f]{64}", row["sha256"]) and isinstance(row.get("filename"), str)
                and isinstance(row.get("checked"), bool) and isinstance(row.get("metadata"), str)):
            raise ValueError(f"a [[{_ROW}]] row without sha256, filename, checked and metadata: {str(row)[:200]}")
    return rows


class _Shipped:
    """The rows, found by their sha256 lines at the first lookup and each file parsed when one of its rows is asked for
    (a first resolve asks for a few dozen)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._where: dict[str, str] | None = None  # sha256 -> the file's path
        self._rows: dict[str, dict[str, dict[str, Any]]] = {}  # path -> sha256 -> row ({} where it could not be read)

    def _load(self) -> dict[str, str]:
        from tritonlock._files import read_text

        if self._where is None:
            where: dict[str, str] = {}
            d = folder()
            try:
                names = sorted(n for n in os.listdir(d) if n.endswith(".toml")) if d else []
            except OSError:
                names = []
            for name in names:
                path = os.path.join(d or "", name)
                try:
                    text = read_text(path, limit=BUDGET)
                except (OSError, UnicodeDecodeError):
                    continue
                for m in _SHA_LINE.finditer(text):
                    where.setdefault(m[1], path)
            self._where = where
        return self._where

    def lookup(self, sha256: str) -> dict[str, Any] | None:
        from tritonlock._files import read_text

        with self._lock:
            path = self._load().get(sha256.lower())
            if path is None:
                return None
            if path not in self._rows:
                try:
                    self._rows[path] = {r["sha256"]: r for r in loads(read_text(path, limit=BUDGET))}
                except (OSError, ValueError, UnicodeDecodeError, RecursionError):
                    self._rows[path] = {}  # (a file that does not read: none of it is used)
            return self._rows[path].get(sha256.lower())


def folder() -> str | None:
    """compat/metadata/ of the shipped matrix (None without one)."""
    from tritonlock._data import compat_dir

    root = compat_dir()
    return os.path.join(root, FOLDER) if root else None


_SHIPPED = _Shipped()


def forget() -> None:
    """Look at the folder afresh at the next lookup (a test, or the tool, that wrote it)."""
    global _SHIPPED
    _SHIPPED = _Shipped()


def shipped_metadata(sha256: str, *, checked: bool) -> str | None:
    """The METADATA headers the matrix ships for a file of this sha256 (`checked`: only from a row read from the whole
    file); None where it ships none."""
    if os.environ.get("TRITONLOCK_NO_SHIPPED_FACTS", "").strip() not in ("", "0"):
        return None
    row = _SHIPPED.lookup(sha256)
    if row is None or (checked and not row["checked"]):
        return None
    return str(row["metadata"]) or None
