"""The index pages this run has had uv read online — (index, name) of every package an online compile answered. An
--offline answer is kept only where each package in it is one of these: uv's cache may also hold a page from another
day (a release since published, a file since removed) or from another index once served at the same address. And the
pages being read now: two compiles that lack the same pages (the decision's checks of one lock, asked side by side)
have them read once — the second waits for the first's read — not twice at once (uv's cache then serves the second
one a page at a time: 5.5 s where one read takes 0.6 s)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from packaging.utils import canonicalize_name

Key = tuple[str, str]

READ: set[Key] = set()
_reading: dict[Key, threading.Event] = {}
_lock = threading.Lock()
# how long a compile waits for another's read of the pages it lacks (that read is one uv run, under its own timeout)
_WAIT_S = 900.0


def keys(packages: Iterable[dict[str, Any]]) -> set[Key]:
    """(index, name) of each package of uv's pylock answer."""
    return {(str(p.get("index") or ""), canonicalize_name(str(p.get("name") or ""))) for p in packages}


def named(name: str) -> bool:
    """Whether this run has read a page of this package (on any index)."""
    name = canonicalize_name(name)
    return any(n == name for _, n in READ)


def unread(packages: Iterable[dict[str, Any]]) -> set[Key]:
    return keys(packages) - READ


@contextlib.contextmanager
def claim(wanted: set[Key]) -> Iterator[set[Key]]:
    """Of the pages `wanted` that this run has not read, those no other compile is reading now: this one's to read
    (yielded; being read until the block ends). On leaving, waits for the others' reads of the rest."""
    done = threading.Event()
    with _lock:
        todo = wanted - READ
        mine = {k for k in todo if k not in _reading}
        theirs = {_reading[k] for k in todo - mine}
        for k in mine:
            _reading[k] = done
    try:
        yield mine
    finally:
        with _lock:
            for k in mine:
                if _reading.get(k) is done:
                    del _reading[k]
        done.set()
        for other in theirs:
            other.wait(_WAIT_S)
