"""CUDA user libraries in a target's closure (compat/cudalibs.toml): the CUDA major a build is for, the builds a
target's driver cannot load, and where nvcc can exist at all."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from tritonlock.models import TargetSpec


@dataclass(frozen=True, kw_only=True, slots=True)
class _Table:
    patterns: tuple[re.Pattern[str], ...]  # the CUDA major in group "cuda"
    by_release: frozenset[str]  # names whose release major is the CUDA major
    not_cuda: frozenset[str]
    nvcc_platforms: frozenset[str]  # "linux/x86_64"


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@lru_cache(maxsize=1)
def _table() -> _Table:
    from tritonlock import _toml
    from tritonlock._data import compat_root
    from tritonlock.errors import MatrixError

    root = compat_root()
    path = root / "cudalibs.toml" if root else None
    if path is None or not path.is_file():
        return _Table(patterns=(), by_release=frozenset(), not_cuda=frozenset(), nvcc_platforms=frozenset())
    data = _toml.loads(path.read_text(encoding="utf-8"))
    patterns: list[re.Pattern[str]] = []
    names: set[str] = set()
    for i, row in enumerate(data.get("library", [])):
        if not isinstance(row, dict) or not isinstance(row.get("source"), str):
            raise MatrixError(f"{path}: library[{i}]: needs a source — fix the row")
        pattern, listed = row.get("pattern"), row.get("names")
        if isinstance(pattern, str) and pattern.count("{cuda}") == 1:
            body = "".join("[a-z0-9-]+" if part == "*" else re.escape(part)
                           for part in re.split(r"(\*)", pattern.replace("{cuda}", "\0")))
            patterns.append(re.compile(body.replace("\0", r"(?P<cuda>[0-9]{2})") + r"\Z"))
        elif isinstance(listed, list) and all(isinstance(n, str) for n in listed):
            names.update(_canon(n) for n in listed)
        else:
            raise MatrixError(f"{path}: library[{i}]: needs a pattern with one {{cuda}} or a list of names — fix the "
                              "row")
    not_cuda = {_canon(n) for row in data.get("no-cuda", []) for n in row.get("names", []) if isinstance(n, str)}
    toolkit = data.get("toolkit", {})
    platforms = frozenset(p for p in toolkit.get("platforms", []) if isinstance(p, str))
    return _Table(patterns=tuple(patterns), by_release=frozenset(names), not_cuda=frozenset(not_cuda),
                  nvcc_platforms=platforms)


def cuda_major(name: str, version: str) -> int | None:
    """The CUDA major a release of `name` is built for; None when it is not a CUDA build the table knows."""
    t = _table()
    name = _canon(name)
    if name in t.not_cuda:
        return None
    if name in t.by_release:
        m = re.match(r"(\d+)\.", version)
        major = int(m[1]) if m else 0
        return major if major >= 9 else None  # 0.0.0a0: a placeholder
    for p in t.patterns:
        m = p.fullmatch(name)
        if m:
            return int(m["cuda"])
    return None


def constraint(name: str, major: int) -> str:
    """A uv constraint that keeps the CUDA-`major` builds of `name` out of a lock."""
    name = _canon(name)
    return f"{name}!={major}.*" if name in _table().by_release else f"{name}<0"


def nvcc_possible(target: TargetSpec) -> bool:
    """Whether the CUDA compiler exists for the target's platform at all (it does not for macOS since CUDA 10.2)."""
    platforms = _table().nvcc_platforms
    return not platforms or f"{target.os}/{'aarch64' if target.arch == 'arm64' else target.arch}" in platforms


def nvcc_platforms() -> tuple[str, ...]:
    return tuple(sorted(_table().nvcc_platforms))
