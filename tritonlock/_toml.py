"""TOML reading helpers: parse errors and key paths mapped to file:line."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
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


MAX_KEY_PARTS = 64  # no intent, lock, records or host file has a key path near this long


class _KeyTooLong(tomllib.TOMLDecodeError):  # type: ignore[misc, unused-ignore]
    """tomllib's work (and memory) grows with the square of a dotted key's parts: one 80 KB key `a.a.a…` took
    27 s and 9 GB. A key path longer than any real file has is refused before tomllib reads it."""

    def __init__(self, parts: int, line: int) -> None:
        ValueError.__init__(self, f"a dotted key or table name of {parts} parts (at most {MAX_KEY_PARTS} are read) "
                                  f"(at line {line}, column 1)")
        self.lineno = line


# Past one key's length, the work adds up: 10,000 keys of 63 parts each (2.7 MB) cost tomllib 16 s and 744 MB, and
# 13 MB of them a MemoryError. So the key paths of a whole file are bounded too: Σ parts² (tomllib's time) and Σ parts
# (its memory: a table per part). A lock of thousands of packages uses a few percent of either.
MAX_KEY_WORK = 4_000_000
MAX_KEY_NODES = 1_000_000


class _KeysTooMany(tomllib.TOMLDecodeError):  # type: ignore[misc, unused-ignore]
    def __init__(self, what: str, line: int) -> None:
        ValueError.__init__(self, f"{what} — more than any real file has, and more than is read (at line {line}, "
                                  "column 1)")
        self.lineno = line


_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')
_DOTTED = re.compile(r"[A-Za-z0-9_-]+(?:[ \t]*\.[ \t]*[A-Za-z0-9_-]+)*")
_WORD = r"[A-Za-z0-9_-]+(?:[ \t]*\.[ \t]*[A-Za-z0-9_-]+)*"
# a key (at a line's start, or after "{" or "," in an inline table) or a table name
_KEYS = re.compile(rf"(?:^|[{{,])[ \t]*({_WORD})[ \t]*=|^[ \t]*\[\[?[ \t]*({_WORD})[ \t]*\]")


def _check_key_lengths(text: str) -> None:
    """Linear: per line, quoted strings become one word and a comment goes, then every run of dotted words is
    counted; in a large file, every key and table name adds to the file's budget."""
    large = len(text) > 256 * 1024
    if text.count(".") < MAX_KEY_PARTS and not large:
        return
    work = nodes = 0
    for no, line in enumerate(text.splitlines(), start=1):
        if line.count(".") < MAX_KEY_PARTS and not large:
            continue
        bare = _STRING.sub("s", line).split("#", 1)[0]  # (a comment is not a key)
        if line.count(".") >= MAX_KEY_PARTS:
            for m in _DOTTED.finditer(bare):
                parts = m.group(0).count(".") + 1
                if parts > MAX_KEY_PARTS:
                    raise _KeyTooLong(parts, no)
        if large:
            for m in _KEYS.finditer(bare):
                parts = (m.group(1) or m.group(2) or "").count(".") + 1
                work += parts * parts
                nodes += parts
            if work > MAX_KEY_WORK or nodes > MAX_KEY_NODES:
                raise _KeysTooMany(f"its keys and table names hold {nodes:,} parts ({work:,} by their squares; at "
                                   f"most {MAX_KEY_NODES:,} and {MAX_KEY_WORK:,} are read)", no)


def loads(text: str) -> dict[str, Any]:
    """tomllib.loads; nesting too deep to read, or a key path too long to read in reasonable time and memory, is a
    TOMLDecodeError like any other syntax problem."""
    _check_key_lengths(text)
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
    """repr() of a value for a message, cut short: a hostile file must not make a megabyte of error text. A URL's
    user:password@ is taken out first (cut first, a secret's head could lose the "@" that marks it)."""
    text = repr(value)
    if "://" in text:
        from tritonlock._urls import redact

        text = redact(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def capped(problems: list[str], limit: int = 20) -> list[str]:
    """The first `limit` problems, then one line saying how many more there are."""
    if len(problems) <= limit:
        return problems
    return [*problems[:limit], f"… and {len(problems) - limit} more"]


def nearest(word: str, known: Iterable[str]) -> str | None:
    """The known key or name a misspelt one most likely means ("torhc" → "torch", "cuda_policy" → "cuda-policy"),
    as GPU names are matched (difflib, compat.matrix.nearest_gpu); None when nothing is close."""
    import difflib

    def squeeze(text: str) -> str:
        return re.sub(r"[-_. ]+", "-", text.strip().lower())

    by = {squeeze(k): k for k in known}
    want = squeeze(word)
    if want in by:
        return by[want]
    close = difflib.get_close_matches(want, list(by), n=1, cutoff=0.7)
    return by[close[0]] if close else None
