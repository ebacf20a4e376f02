"""TOML reading helpers: parse errors and key paths mapped to file:line."""

from __future__ import annotations

import re
import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

TOMLDecodeError = tomllib.TOMLDecodeError

_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"']+)\s*=")


def loads(text: str) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads(text)
    return data


def decode_error_line(err: Exception, text: str = "") -> tuple[int | None, str]:
    """Line number and a short message from a TOML decode error (tomllib puts them in the text)."""
    msg = str(err)
    line = getattr(err, "lineno", None)
    if msg.endswith("(at end of document)"):
        return max(1, len(text.rstrip("\n").splitlines())), msg[: -len("(at end of document)")].strip()
    m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
    if m:
        line = int(m.group(1))
        msg = msg[: m.start()].strip()
    return line, msg


def line_of(text: str, path: tuple[str | int, ...]) -> int | None:
    """Best-effort line of a key path like ("targets", 1, "driver") or ("environment", "torch")."""
    table: tuple[str | int, ...] = ()
    counts: dict[str, int] = {}
    best: int | None = None
    for no, raw in enumerate(text.splitlines(), start=1):
        h = _HEADER.match(raw)
        if h:
            name = h.group(2).replace('"', "").replace("'", "").strip()
            if h.group(1) == "[[":
                counts[name] = counts.get(name, -1) + 1
                table = (*name.split("."), counts[name])
            else:
                table = tuple(name.split("."))
            if table == path:
                return no
            if path[: len(table)] == table and best is None:
                best = no
            continue
        k = _KEY.match(raw)
        if k:
            key = k.group(1).strip("\"'")
            full = (*table, key)
            if full == path or (len(path) > len(full) and path[: len(full)] == full):
                return no
    return best
