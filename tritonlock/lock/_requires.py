"""Requires-Dist lines parsed once a process: the closure's edges, the lock's integrity check and the packages'
facts read the same lines again and again (releases repeat them)."""

from __future__ import annotations

import functools

from packaging.requirements import InvalidRequirement, Requirement


@functools.lru_cache(maxsize=1 << 16)
def parsed_requirement(line: str) -> Requirement | None:
    """A Requires-Dist line parsed once a process; shared: read it, never change it. None where it does not parse."""
    try:
        return Requirement(line)
    except InvalidRequirement:
        return None
