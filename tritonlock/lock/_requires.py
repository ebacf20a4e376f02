"""Requires-Dist lines parsed once a process: the closure's edges, the lock's integrity check and the packages'
facts read the same lines again and again (releases repeat them); and a METADATA's header fields, parsed one way for
all of them."""

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


def header_items(text: str) -> list[tuple[str, str]]:
    """A METADATA's header fields in their order, (name, value) as email's parser gives them: only the header block,
    which ends at the first empty line (a License's blank lines are white space: a continuation, not the end), not
    the description after it."""
    import re
    from email.parser import HeaderParser

    end = re.search(r"\r?\n\r?\n", text)
    return [(k, str(v)) for k, v in HeaderParser().parsestr(text[:end.end()] if end else text).items()]


@functools.lru_cache(maxsize=4096)
def metadata_fields(text: str) -> dict[str, tuple[str, ...]]:
    """A METADATA's header fields (names lower-cased, values as email's parser gives them), parsed once a process:
    the search asks each release's Requires-Dist and Provides-Extra on every line it weighs (unsloth's 277 releases
    of 460 header lines each, a millisecond a parse: 800 parses). The header block only (header_items)."""
    out: dict[str, list[str]] = {}
    for k, v in header_items(text):
        out.setdefault(k.lower(), []).append(v)
    return {k: tuple(v) for k, v in out.items()}
