"""A records file's kernel lines read as its writer writes them, without tomllib: most of the file's bytes."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from tritonlock import _toml

# One timed kernel as `tritonlock.records.dumps` writes it (keys in its order, the optional ones left out when None;
# strings without an escape or a control character; floats as repr writes them). Such lines are read here, not by
# tomllib — a team's 20,000 runs in seconds, not half a minute (bench/report_bands_bench.py). Any other shape sends
# the whole file to tomllib, which reads it as it always did.
_S = r'"([^"\\\x00-\x1f\x7f]*)"'
_F = r"(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?|-?inf|nan)"
_KERNEL_LINE = re.compile(rf"  \{{ kernel = {_S}, dtype = {_S}, device = {_S}, ok = (true|false)(?:, metric = {_S})?"
                          rf"(?:, value = {_F})?(?:, torch = {_F})?(?:, ratio = {_F})?(?:, speed = {_S})? \}},")

T = TypeVar("T")


def _num(text: str | None) -> float | None:
    """A figure as the records reader keeps it: finite, else none (tritonlock.records._num)."""
    if not text:
        return None
    v = float(text)
    return v if math.isfinite(v) else None


def kernel_lines(text: str, make: Callable[..., T], speeds: Collection[str]) -> tuple[str, dict[int, tuple[T, ...]]] | None:
    """The file with each `kernels = [` list of the writer's own shape read here and left empty in the text, and
    those kernels by entry ([[verified]] table, in order), each made by `make` (KernelSummary's keywords). A list with
    a row of another shape (an all-reduce's, a hand edit) or a speed verdict not in `speeds` is left in the text for
    tomllib, which reads it (and says what is wrong); None when the file itself is not of the writer's shape. A text
    left invalid by this is the caller's to read again with tomllib, for its own words."""
    if '"""' in text or "'''" in text:
        return None  # (a multi-line string could hold what looks like a table header or a kernels list)
    lines = text.split("\n")
    kernels: dict[int, tuple[T, ...]] = {}
    entry, i, out = -1, 0, []
    while i < len(lines):
        line = lines[i]
        if line == "[[verified]]":
            entry += 1
        elif line.lstrip().startswith("["):
            return None  # another table (or an array's line where the writer has none): not the writer's shape
        if line != "kernels = [":
            out.append(line)
            i += 1
            continue
        start, got, mine = i, [], True
        i += 1
        while i < len(lines) and lines[i] != "]":
            m = _KERNEL_LINE.fullmatch(lines[i])
            if m is None or (m[9] is not None and m[9] not in speeds):
                mine = False  # (a row of another shape — an all-reduce's, with its band — or a wrong verdict)
            elif mine:
                got.append(make(kernel=m[1], dtype=m[2], device=m[3], ok=m[4] == "true", metric=m[5],
                                value=_num(m[6]), torch_value=_num(m[7]), ratio=_num(m[8]), speed=m[9]))
            i += 1
        if i == len(lines):
            return None
        if mine:
            kernels[entry] = tuple(got)
            out.append("kernels = []")
        else:  # this entry's list is tomllib's, as it is (its rows keep their order; the others stay fast)
            out += lines[start:i + 1]
        i += 1
    return "\n".join(out), kernels


def read(text: str, make: Callable[..., T], speeds: Collection[str] | None) -> tuple[dict[str, Any],
                                                                                   dict[int, tuple[T, ...]]]:
    """The file as tomllib reads it, with its writer's kernel lines read here (by entry; `speeds` None: none are);
    a TOMLDecodeError is always tomllib's on the file as it is — its line numbers, its words."""
    fast = kernel_lines(text, make, speeds) if speeds is not None else None
    if fast is not None:
        try:
            return _toml.loads(fast[0]), fast[1]
        except _toml.TOMLDecodeError:
            pass
    return _toml.loads(text), {}
