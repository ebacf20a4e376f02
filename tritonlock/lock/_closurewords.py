"""What the closure step says where uv cannot give a lock its pins: a package that needs a source build under
[environment].no-build, a package from a folder or a checkout (no file whose sha256 a lock can pin)."""

from __future__ import annotations

import re
from typing import Any

from packaging.utils import canonicalize_name


def no_build_note(output: str, no_build: tuple[str, ...], python: str | None, platform: str) -> str:
    """uv failed under [environment].no-build: name each package it wanted a wheel of and what it would take."""
    if not no_build:
        return ""
    names = list(dict.fromkeys(canonicalize_name(n) for n in re.findall(r"Wheels are required for `([^`]+)`", output)))
    if not names:
        return ""
    allow = ("remove them from" if len(names) > 1 else "remove it from") if ":all:" not in no_build else "narrow"
    return (f"\n  note: {', '.join(names)} {'have' if len(names) > 1 else 'has'} no wheel for this target (Python "
            f"{python} on {platform}) in any version the requirements allow, and "
            f"[environment].no-build forbids building {'them' if len(names) > 1 else 'it'} from source\n  fix: "
            f"{allow} [environment].no-build to let sync build {'them' if len(names) > 1 else 'it'} (which may need "
            "nvcc and a C/C++ compiler), or require a version that has a wheel for this target")


def unpinnable(name: str, raw: dict[str, Any]) -> str:
    src = raw.get("directory") or raw.get("vcs") or {}
    where = (src.get("url") or src.get("path") or "") if isinstance(src, dict) else ""
    kind = "a folder" if "directory" in raw else "a version-control checkout" if "vcs" in raw else "a source"
    return (f"{name} comes from {kind}{f' ({where})' if where else ''}, which has no file whose sha256 a lock can pin "
            "(a team's lock installs the same bytes everywhere); nothing was written — build a wheel of it (`pip "
            f"wheel --no-deps <its source> -w wheels/`) and name that wheel in the packages ({name} @ <the wheel's "
            "https:// or file:// URL>), or publish it to an index")
