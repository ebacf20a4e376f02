"""A package's own per-CUDA builds on an index of its own (compat/packages.toml, and [[package-builds]] in the
intent): which index holds the build of a release for a torch's CUDA, as a choice like torch's backend."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from packaging.utils import canonicalize_name

from tritonlock.models import PackageBuilds
from tritonlock.native.variants import Pick


@dataclass(frozen=True, kw_only=True, slots=True)
class BuildChoice:
    name: str
    url: str
    variant: str  # "cu129"
    flat: bool
    why: str  # in words, with the row's inference said


@lru_cache(maxsize=1)
def _table() -> tuple[str, dict[str, Any]]:
    """compat/packages.toml, read once: (its path, its tables); ("", {}) where the matrix has none."""
    from tritonlock import _toml
    from tritonlock._data import compat_root

    root = compat_root()
    path = root / "packages.toml" if root else None
    if path is None or not path.is_file():
        return "", {}
    return str(path), _toml.loads(path.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def curated() -> dict[str, PackageBuilds]:
    """compat/packages.toml, by normalized name."""
    path, table = _table()
    return {b.name: b for b in parse_rows(table.get("build", []), path, "build")}


@lru_cache(maxsize=1)
def optional_gpu_code() -> dict[str, str]:
    """compat/packages.toml [[optional-gpu-code]]: the packages whose kernels are for some GPUs only, called only on
    those, by normalized name -> what the row rests on that no source states ("" where nothing)."""
    rows = _table()[1].get("optional-gpu-code", [])
    return {canonicalize_name(r["name"]): str(r.get("inferred", "")) for r in rows if isinstance(r, dict)
            and isinstance(r.get("name"), str)}


@lru_cache(maxsize=1)
def dlopen_needed() -> frozenset[tuple[str, str]]:
    """compat/packages.toml [[dlopen-needed]]: (package, library) where a package loads a library by name at run time
    (dlopen: its ELF does not list it) and its own documentation or metadata says it cannot work without it: the
    native-code rule then refuses a lock that does not bring it, instead of warning."""
    rows = _table()[1].get("dlopen-needed", [])
    return frozenset((canonicalize_name(r["name"]), r["library"]) for r in rows if isinstance(r, dict)
                     and isinstance(r.get("name"), str) and isinstance(r.get("library"), str))


@lru_cache(maxsize=1)
def cuda_build_picks() -> tuple[Pick, ...]:
    """compat/packages.toml [[cuda-build-pick]]: how a package picks, at run time, the per-CUDA library it loads
    (tritonlock.native.variants.Pick); a row without a name, a pick of "exact" or "major", or a source is left out
    (tests/test_native_cudapick.py checks that none is)."""
    rows = _table()[1].get("cuda-build-pick", [])
    return tuple(Pick(name=canonicalize_name(r["name"]), versions=str(r.get("versions", "")), pick=r["pick"],
                      without=str(r.get("without", "")), source=str(r["source"]))
                 for r in rows if isinstance(r, dict) and isinstance(r.get("name"), str)
                 and r.get("pick") in ("exact", "major") and isinstance(r.get("source"), str))


@dataclass(frozen=True, kw_only=True, slots=True)
class FirstUse:
    """A package that compiles (or downloads) its CUDA kernels when they are first called: compat/packages.toml
    [[kernels-at-first-use]]."""

    name: str  # normalized
    min_gpu: tuple[int, int]  # the least compute capability it has kernels for
    prebuilt: tuple[str, ...]  # the packages that carry its kernels compiled (normalized)
    source: str
    same_release: bool = False  # it refuses to import beside a prebuilt package of another release


@lru_cache(maxsize=1)
def kernels_at_first_use() -> dict[str, FirstUse]:
    """compat/packages.toml [[kernels-at-first-use]], by normalized name; a row without a name, a min-gpu written
    as "7.5" or a source is left out (tests/test_firstuse.py checks that none is)."""
    out: dict[str, FirstUse] = {}
    for r in _table()[1].get("kernels-at-first-use", []):
        if not (isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(r.get("source"), str)
                and isinstance(r.get("min-gpu"), str) and re.fullmatch(r"[0-9]+\.[0-9]+", r["min-gpu"])):
            continue
        major, minor = r["min-gpu"].split(".")
        prebuilt = r.get("prebuilt", [])
        out[canonicalize_name(r["name"])] = FirstUse(
            name=canonicalize_name(r["name"]), min_gpu=(int(major), int(minor)), source=r["source"],
            same_release=r.get("same-release") is True,
            prebuilt=tuple(canonicalize_name(n) for n in prebuilt if isinstance(n, str)) if isinstance(
                prebuilt, list) else ())
    return out


def any_wheel_natives() -> frozenset[str]:
    """The packages whose py3-none-any wheels may carry native code all the same: those of [[cuda-build-pick]]."""
    return frozenset(p.name for p in cuda_build_picks())


def parse_rows(rows: object, where: str, key: str) -> list[PackageBuilds]:
    """Rows of [[build]] (compat) or [[package-builds]] (an intent); MatrixError / IntentError-worthy problems are
    raised as ValueError naming the row."""
    out = []
    for i, row in enumerate(rows if isinstance(rows, list) else []):
        name, index, cuda = (row.get("name"), row.get("index"), row.get("cuda")) if isinstance(row, dict) else (
            None, None, None)
        if not (isinstance(name, str) and isinstance(index, str) and isinstance(cuda, list) and cuda
                and all(isinstance(c, str) and re.fullmatch(r"cu[0-9]{3}|cpu", c) for c in cuda)):
            raise ValueError(f"{where}: {key}[{i}]: needs name, index (a URL with {{version}}, {{cuda}} or {{torch}}) "
                             "and cuda (a list like [\"cu128\", \"cu130\"])")
        if not re.match(r"https?://|file://", index):
            raise ValueError(f"{where}: {key}[{i}].index: {index!r} is not an http(s):// or file:// URL")
        fmt = row.get("format", "simple")
        if fmt not in ("simple", "flat"):
            raise ValueError(f"{where}: {key}[{i}].format: {fmt!r} — use \"simple\" (an index) or \"flat\" (a page "
                             "of links, pip's find-links)")
        out.append(PackageBuilds(name=canonicalize_name(name), index=index, cuda=tuple(cuda), flat=fmt == "flat",
                                 inferred=str(row.get("inferred", "")), source=str(row.get("source", ""))))
    return out


def _cuda(variant: str) -> tuple[int, int] | None:
    m = re.fullmatch(r"cu([0-9]+)([0-9])", variant)
    return (int(m[1]), int(m[2])) if m else None


def choose(name: str, version: str, torch: str, backend: str, *, cuda_major: int | None,
           extra: tuple[PackageBuilds, ...] = ()) -> BuildChoice | None:
    """The index of `name` `version`'s build for a torch of `backend` (cu128): a variant of the same CUDA major as
    the torch (`cuda_major` when the need is one major), the nearest at or below the torch's CUDA, else above."""
    rows = {b.name: b for b in (*curated().values(), *extra)}
    b = rows.get(canonicalize_name(name))
    torch_cuda = _cuda(backend)
    if b is None or torch_cuda is None:
        return None
    major = cuda_major or torch_cuda[0]
    same = [v for v in b.cuda if (c := _cuda(v)) is not None and c[0] == major]
    if not same:
        return None
    at_or_below = [v for v in same if (_cuda(v) or (0, 0)) <= torch_cuda]
    variant = max(at_or_below, key=lambda v: _cuda(v) or (0, 0)) if at_or_below else min(
        same, key=lambda v: _cuda(v) or (0, 0))
    url = b.index.format(version=version.split("+", 1)[0], cuda=variant, torch=torch.split("+", 1)[0])
    why = f"{b.name}'s {variant} build from its own index {url}"
    if b.inferred:
        why += f" (inferred: {b.inferred})"
    return BuildChoice(name=b.name, url=url, variant=variant, flat=b.flat, why=why)
