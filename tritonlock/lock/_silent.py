"""The torch indexes that did not answer in this run (closure's compiles): one found silent is asked no more until the
next run, where uv would retry it for seconds a compile."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from tritonlock import _urls
from tritonlock.errors import ClosureError
from tritonlock.models import Selection

# The torch indexes (by host) that did not answer in this run: a compile failed with uv's network words, then one
# quick try of tritonlock's own (lock.index.unreachable) got no answer either. Every later compile bound to such a
# host fails at once with the first one's error, where uv would retry the host for seconds each time (a search over
# five torch lines: 163 s before its exit 4). Forgotten at each new run, as a network may come back.
DOWN: dict[object, ClosureError] = {}
# uv's words for an index that does not answer (not for one that answers without what is asked)
_NETWORK = re.compile(r"Failed to fetch|error sending request|dns error|client error \(Connect\)|onnection refused"
                      r"|timed out|Request failed after")


def host(url: str) -> object:
    """What an index's silence is kept by: its (scheme, host, port), credentials left out (_urls.origin)."""
    return _urls.origin(url) or url


def note_down(url: str, words: str, err: ClosureError) -> None:
    """Keep `err` for the host of the torch index `url` when uv's `words` say an index did not answer and that one
    does not answer a quick try either."""
    if host(url) in DOWN or not _NETWORK.search(words):
        return
    from tritonlock.lock.index import unreachable

    if unreachable(url, "torch") is not None:
        DOWN.setdefault(host(url), err)


def down_first(compile: Callable[..., list[dict[str, Any]]]) -> Callable[..., list[dict[str, Any]]]:
    """`compile` (closure._compile), failing at once where this run found the selection's torch index silent
    (DOWN), and noting a torch index that proves silent when uv fails."""
    @functools.wraps(compile)
    def run(sel: Selection, *args: Any, **kw: Any) -> list[dict[str, Any]]:
        down = DOWN.get(host(sel.index or ""))
        if down is not None:
            raise ClosureError(str(down), uv=down.uv)
        try:
            return compile(sel, *args, **kw)
        except ClosureError as err:
            if sel.index:
                note_down(sel.index, err.uv or "", err)
            raise

    return run


def forget() -> None:
    """A new run: every index is asked again (a network may come back)."""
    DOWN.clear()
