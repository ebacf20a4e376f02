"""Binary facts shipped with the matrix (compat/native/*.toml, written by `tritonlock compat native`): the facts of
the wheels users bring most, keyed by the file's sha256, so that a first resolve on a new machine reads only what
the matrix does not know. A shipped fact is used only for the same sha256, and only from a file written by this
reader's version with every field this code's facts have (a file written before a field was added is not trusted
for any of its rows: the wheels are read instead, until the tool is run again). The format is generic: each row is
the facts' dataclass fields by name (defaults left out), so a field added to NativeFacts or NativeMember flows
through the tool and this reader without a change here."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import threading
import typing
from pathlib import Path
from typing import Any

from tritonlock.models import NativeFacts

FOLDER = "native"  # under compat/
# What compat/native/ may hold in all (checked by tests/test_native_shipped.py): the first resolve of a new machine
# is what it buys; the repository and every installed tritonlock carry it. 2.3 MB since issue 40: each module's torch
# C++ symbols (what the symbol check needs without the wheel) took the shipped rows from 1.8 to 2.0 MB; 2.45 MB since
# reader native-v5 (the modules each wheel loads inside a `try`, and the releases published since): 2.39 MB; 2.65 MB
# since CuPy is judged as any package (cupy-cuda12x's and cupy-cuda13x's wheels read whole, not by file names only:
# 185 kB each, 80 kB before): 2.57 MB; 3.0 MB since the packages whose older releases a first resolve reads get more
# of them (tritonlock/maintain/native.py RELEASES_OF: every lmcache release, eight of sgl-kernel and bitsandbytes,
# seven of onnxruntime-gpu; a cold resolve spent 10 to 50 s reading those wheels): 2.93 MB
BUDGET = 3_000_000
# the file's own header table
_META = "meta"
_ROW = "wheel"
_POOL = "members"
_SHA_LINE = re.compile(r'^sha256 = "([0-9a-f]{64})"\s*$', re.M)


def schema() -> dict[str, list[str]]:
    """The fields of every dataclass a NativeFacts is made of, by class name: what a shipped file must have been
    written with to be trusted."""
    out: dict[str, list[str]] = {}
    todo: list[type] = [NativeFacts]
    while todo:
        cls = todo.pop()
        if cls.__name__ in out:
            continue
        out[cls.__name__] = [f.name for f in dataclasses.fields(cls)]
        for hint in _hints(cls).values():
            todo += [t for t in _inner_types(hint) if isinstance(t, type) and dataclasses.is_dataclass(t)]
    return dict(sorted(out.items()))


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))


def _inner_types(hint: Any) -> list[Any]:
    args = typing.get_args(hint)
    return [hint] if not args else [t for a in args for t in _inner_types(a)]


def plain(obj: Any) -> Any:
    """A dataclass as a table of its fields that differ from their defaults (recursively); tuples as lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
            if value != default and value is not None:
                out[f.name] = plain(value)
        return out
    if isinstance(obj, (tuple, list)):
        return [plain(x) for x in obj]
    if isinstance(obj, (str, int, bool, float)):
        return obj
    raise TypeError(f"a {type(obj).__name__} cannot be shipped")


def rebuild(cls: type, raw: Any) -> Any:
    """The dataclass `cls` from `plain`'s table, every value checked against its declared type (ValueError where a
    value is not of it, or a key is not a field)."""
    if not isinstance(raw, dict):
        raise ValueError(f"{cls.__name__}: expected a table")
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(raw) - names
    if unknown:
        raise ValueError(f"{cls.__name__}: no field {sorted(unknown)[0]!r}")
    try:
        return cls(**{k: _value(hints[k], v, f"{cls.__name__}.{k}") for k, v in raw.items()})
    except TypeError as err:  # a required field missing
        raise ValueError(f"{cls.__name__}: {err}") from None


def _value(hint: Any, raw: Any, where: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return rebuild(hint, raw)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        inner = [a for a in args if a is not type(None)]
        if raw is None and len(inner) < len(args):
            return None
        if len(inner) == 1:
            return _value(inner[0], raw, where)
        raise ValueError(f"{where}: cannot rebuild {hint!r}")
    if origin is tuple:
        if not isinstance(raw, list):
            raise ValueError(f"{where}: expected a list")
        return tuple(_value(args[0], x, where) for x in raw)
    if hint in (str, int, bool, float):
        if type(raw) is not hint:  # (exact: a bool is not an int here)
            raise ValueError(f"{where}: expected a {hint.__name__}")
        return raw
    raise ValueError(f"{where}: cannot rebuild {hint!r}")


def dumps(rows: list[NativeFacts], package: str, reader: str) -> str:
    """A compat/native file: its header (the reader's version and the fields its rows were written with), the
    shared objects its wheels carry (each once: the same library in a wheel for each Python is one entry), then one
    [[wheel]] table per file, sorted by file name, its `members` the entries' ids. Each row's `source` names the
    wheel by its file name and sha256, which a reviewer can fetch and check."""
    from tritonlock.lock.lockfile import toml_value

    ordered = sorted(rows, key=lambda f: (f.filename, f.sha256))
    pool: dict[str, int] = {}
    for f in ordered:
        for m in f.members:
            pool.setdefault(toml_value(plain(m)), len(pool))
    lines = [f"# Binary facts of {package}'s wheels, read from the wheels themselves by `tritonlock compat native`",
             "# (tritonlock/maintain/native.py) — generated, do not edit: run the tool again. Each [[wheel]] is one",
             "# file, named with its sha256; resolve uses a row only for a wheel of that sha256 (docs/decision.md).",
             f"[{_META}]", f"reader = {toml_value(reader)}", f"package = {toml_value(package)}",
             "source = " + toml_value("each row's wheel, by its file name and sha256 (fetch it from the index and "
                                      "compare: sha256sum, then `tritonlock compat native --check`)")]
    for cls, fields in schema().items():
        lines.append(f"fields-{cls} = {toml_value(fields)}")
    lines += ["", f"[{_POOL}]", "source = " + toml_value("the shared objects of the wheels below (each row lists "
                                                         "its own by id)"), "items = ["]
    lines += [f"  {{ id = {i}, {text[2:]}," if text != "{  }" else f"  {{ id = {i} }},"
              for text, i in pool.items()]
    lines.append("]")
    for f in ordered:
        row = plain(f)
        lines += ["", f"[[{_ROW}]]", f"sha256 = {toml_value(row.pop('sha256'))}"]
        row.pop("members", None)
        if f.members:
            row["members"] = [pool[toml_value(plain(m))] for m in f.members]
        for key in sorted(row):
            lines.append(f"{key} = {toml_value(row[key])}")
    return "\n".join(lines) + "\n"


def loads(text: str) -> tuple[Any, dict[str, dict[str, Any]]]:
    """(the file's header table, its rows by sha256 as `plain` tables: members resolved from their ids).
    ValueError where the file is not one."""
    from tritonlock import _toml

    data = _toml.loads(text)
    items = data.get(_POOL, {}).get("items", []) if isinstance(data.get(_POOL), dict) else []
    pool = {e["id"]: {k: v for k, v in e.items() if k != "id"} for e in items if isinstance(e, dict) and "id" in e}
    rows: dict[str, dict[str, Any]] = {}
    for raw in data.get(_ROW, []):
        if not isinstance(raw, dict) or not isinstance(raw.get("sha256"), str):
            raise ValueError("a [[wheel]] row without its sha256")
        row = dict(raw)
        if "members" in row:
            if not isinstance(row["members"], list) or any(i not in pool for i in row["members"]):
                raise ValueError(f"{row['sha256']}: members that are not the file's")
            row["members"] = [pool[i] for i in row["members"]]
        rows[row["sha256"]] = row
    return data.get(_META), rows


def trusted(meta: Any, reader: str) -> str | None:
    """Why a file's rows are not to be used (another reader's version, fields this code's facts have that the file
    was written without, or the other way round); None where they are."""
    if not isinstance(meta, dict) or meta.get("reader") != reader:
        return f"written by reader {meta.get('reader') if isinstance(meta, dict) else None!r}, not {reader!r}"
    for cls, fields in schema().items():
        have = meta.get(f"fields-{cls}")
        if not isinstance(have, list) or set(have) != set(fields):
            lacks = sorted(set(fields) - set(have or []))
            return f"written without {cls} fields {lacks}" if lacks else f"written with other {cls} fields"
    return None


def folder() -> Path | None:
    from tritonlock._data import compat_root

    root = compat_root()
    return None if root is None else root / FOLDER


class _Index:
    """sha256 -> the file that ships it, over every compat/native file, built on the first lookup (a text scan, no
    TOML parse); a file is parsed the first time one of its rows is asked for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._where: dict[str, Path] | None = None
        self._texts: dict[Path, str] = {}
        self._files: dict[tuple[Path, str], dict[str, dict[str, Any]] | None] = {}  # (file, reader) -> its rows

    def _load(self) -> dict[str, Path]:
        from tritonlock._files import read_text

        with self._lock:
            if self._where is None:
                where: dict[str, Path] = {}
                d = folder()
                try:
                    files = sorted(d.glob("*.toml")) if d is not None and d.is_dir() else []
                except OSError:
                    files = []
                for path in files:
                    try:
                        text = read_text(path, limit=BUDGET)
                    except (OSError, UnicodeDecodeError):
                        continue
                    self._texts[path] = text
                    for m in _SHA_LINE.finditer(text):
                        where.setdefault(m[1], path)
                self._where = where
            return self._where

    def lookup(self, sha256: str, reader: str) -> NativeFacts | None:
        if os.environ.get("TRITONLOCK_NO_SHIPPED_FACTS", "").strip() not in ("", "0"):
            return None
        path = self._load().get(sha256.lower())
        if path is None:
            return None
        with self._lock:
            if (path, reader) not in self._files:
                try:  # (a file of another reader's version, or without a field this code has: none of it is used)
                    meta, parsed = loads(self._texts[path])
                    self._files[(path, reader)] = parsed if trusted(meta, reader) is None else None
                except (ValueError, TypeError, KeyError, RecursionError):  # (TOMLDecodeError is a ValueError)
                    self._files[(path, reader)] = None
            rows = self._files[(path, reader)]
        raw = None if rows is None else rows.get(sha256.lower())
        if raw is None:
            return None
        try:
            facts: NativeFacts = rebuild(NativeFacts, raw)
        except (ValueError, TypeError, KeyError, RecursionError):
            return None
        if facts.sha256 != sha256.lower() or facts.problem:
            return None
        return facts


_INDEX = _Index()


def lookup(sha256: str, reader: str) -> NativeFacts | None:
    """The shipped facts of the wheel with this sha256, where a file of reader version `reader` ships them."""
    if not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
        return None
    return _INDEX.lookup(sha256, reader)


def forget() -> None:
    """Look again at compat/native on the next lookup (a test that writes files there)."""
    global _INDEX
    _INDEX = _Index()
