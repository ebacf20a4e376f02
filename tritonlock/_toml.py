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


class _TooDeep(tomllib.TOMLDecodeError):  # type: ignore[misc, unused-ignore]
    """tomllib recurses once per nesting level; a hostile file runs Python out of stack."""

    def __init__(self) -> None:
        ValueError.__init__(self, "arrays or tables nested too deeply")


def loads(text: str) -> dict[str, Any]:
    """tomllib.loads; nesting too deep to read is a TOMLDecodeError like any other syntax problem."""
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except RecursionError:
        raise _TooDeep() from None
    return data


def decode_error_line(err: Exception, text: str = "") -> tuple[int | None, str]:
    """Line number and a short message from a TOML decode error (tomllib puts them in the text)."""
    msg = str(err)
    line = getattr(err, "lineno", None)
    if msg.endswith("(at end of document)"):
        return max(1, len(text.rstrip("\n").splitlines())), msg[: -len("(at end of document)")].strip()
    m = re.search(r"\(at line ([0-9]+), column ([0-9]+)\)", msg)
    if m:
        line = int(m.group(1))
        msg = msg[: m.start()].strip()
    return line, msg


class Lines:
    """Where each table header and key of a TOML text is: one pass over the text, then each lookup is cheap
    (an intent with thousands of problems must not rescan the file for every one)."""

    def __init__(self, text: str) -> None:
        self.first: dict[tuple[str | int, ...], int] = {}
        table: tuple[str | int, ...] = ()
        counts: dict[str, int] = {}
        for no, raw in enumerate(text.splitlines(), start=1):
            h = _HEADER.match(raw)
            if h:
                name = h.group(2).replace('"', "").replace("'", "").strip()
                if h.group(1) == "[[":
                    counts[name] = counts.get(name, -1) + 1
                    table = (*name.split("."), counts[name])
                else:
                    table = tuple(name.split("."))
                for cut in range(1, len(table) + 1):  # a header also locates the tables above it
                    self.first.setdefault(table[:cut], no)
                continue
            k = _KEY.match(raw)
            if k:
                self.first.setdefault((*table, k.group(1).strip("\"'")), no)

    def of(self, path: tuple[str | int, ...]) -> int | None:
        """The line of a key path like ("targets", 1, "driver"), else of the nearest enclosing key or table."""
        for cut in range(len(path), 0, -1):
            line = self.first.get(path[:cut])
            if line is not None:
                return line
        return None


def line_of(text: str, path: tuple[str | int, ...]) -> int | None:
    """Best-effort line of a key path (one lookup; build a `Lines` once to look up many)."""
    return Lines(text).of(path)


def shown(value: Any, limit: int = 60) -> str:
    """repr() of a value for a message, cut short: a hostile file must not make a megabyte of error text."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def capped(problems: list[str], limit: int = 20) -> list[str]:
    """The first `limit` problems, then one line saying how many more there are."""
    if len(problems) <= limit:
        return problems
    return [*problems[:limit], f"… and {len(problems) - limit} more"]
