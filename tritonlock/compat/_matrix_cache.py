"""The matrix cache: the validated Matrix as plain JSON (data only — reading it can never run code)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def encode(obj: Any) -> Any:
    """Frozen dataclasses, tuples, frozensets and dicts of str/int/bool/None → JSON values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (tuple, list)):
        return [encode(x) for x in obj]
    if isinstance(obj, frozenset):
        return sorted(encode(x) for x in obj)
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if obj is None or isinstance(obj, (str, int, float)):
        return obj
    raise TypeError(f"cannot cache a {type(obj).__name__}")


Decoder = typing.Callable[[Any], Any]


def _check(kind: type) -> Decoder:
    def run(raw: Any) -> Any:
        if type(raw) is not kind:  # exact: a bool is not an int here
            raise ValueError(kind.__name__)
        return raw
    return run


def _decoder(hint: Any) -> Decoder:
    """A function that rebuilds a value of type `hint` from JSON, checking every type (ValueError if not)."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _DECODERS.get(hint) or _dataclass_decoder(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        inner = [_decoder(a) for a in args if a is not type(None)]
        nullable = type(None) in args
        if len(inner) != 1:
            raise ValueError(f"cannot rebuild {hint!r}")
        one = inner[0]
        return (lambda raw: None if raw is None else one(raw)) if nullable else one
    if origin in (tuple, frozenset):
        item, build = _decoder(args[0]), origin

        def seq(raw: Any) -> Any:
            if type(raw) is not list:
                raise ValueError(build.__name__)
            return build(map(item, raw))
        return seq
    if origin is dict:
        key, value = _decoder(args[0]), _decoder(args[1])

        def mapping(raw: Any) -> Any:
            if type(raw) is not dict:
                raise ValueError("dict")
            return {key(k): value(v) for k, v in raw.items()}
        return mapping
    if hint in (str, int, float, bool):
        return _check(hint)
    raise ValueError(f"cannot rebuild {hint!r}")


def _dataclass_decoder(cls: type) -> Decoder:
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    fields: dict[str, Decoder] = {}

    def run(raw: Any) -> Any:
        if type(raw) is not dict or not raw.keys() <= fields.keys():
            raise ValueError(cls.__name__)
        try:
            return cls(**{k: fields[k](v) for k, v in raw.items()})
        except TypeError as err:  # a required field is missing
            raise ValueError(f"{cls.__name__}: {err}") from None
    _DECODERS[cls] = run  # before the fields: a dataclass may (indirectly) hold itself
    fields.update({f.name: _decoder(hints[f.name]) for f in dataclasses.fields(cls)})
    return run


_DECODERS: dict[type, Decoder] = {}


def decode(cls: type[T], raw: Any) -> T:
    """Rebuild a `cls` from its JSON form; ValueError when any value is not of its declared type."""
    run = _DECODERS.get(cls) or _dataclass_decoder(cls)
    obj: T = run(raw)
    return obj


def _trusted(path: Path) -> bool:
    """Only a file this user owns, that nobody else can write, in a directory nobody else can write."""
    if os.name == "nt":
        return True
    try:
        for p in (path, path.parent):
            st = p.lstat()
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return False
    except OSError:
        return False
    return path.is_file() and not path.is_symlink()


def read(path: Path, cls: type[T]) -> T | None:
    """The cached object, or None when the file is missing, foreign, or not exactly a `cls` as JSON."""
    if not _trusted(path):
        return None
    from tritonlock._files import read_text

    try:  # (bounded: a file swapped for a huge one is passed over, not read whole)
        raw = json.loads(read_text(path, limit=64 << 20))
        obj = decode(cls, raw)
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError, RecursionError):
        return None
    return obj if isinstance(obj, cls) else None


def write(path: Path, obj: Any) -> None:
    """Best effort: a read-only or foreign cache directory only costs speed."""
    from tritonlock._files import write_atomic
    from tritonlock.errors import TritonlockError

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.name != "nt" and path.parent.stat().st_mode & 0o022 and path.parent.stat().st_uid == os.getuid():
            path.parent.chmod(0o700)  # made by an older tritonlock under a lax umask: ours, so tighten it
        write_atomic(path, json.dumps(encode(obj), separators=(",", ":")), mode=0o600, what="matrix cache")
    except (OSError, TypeError, TritonlockError):
        pass
