"""Check compat/ against the default package index: file tags (Python, platform, glibc) and wheel METADATA pins."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from tritonlock.index import IndexClient, IndexFile, default_index
from tritonlock.matrix import Matrix, TorchRelease, TritonRelease, load_matrix

Index = IndexClient  # the check reads the index through the project's one client


@dataclass(frozen=True)
class Wheel:
    version: Version
    python: str  # "3.12" or "3.13t"
    platform: str | None  # tritonlock platform name, None for ones the matrix does not track
    glibc: str | None
    file: IndexFile


def _platform(tag: str) -> tuple[str | None, str | None]:
    """(tritonlock platform, glibc floor) of a wheel platform tag; manylinux1 -> 2.5, manylinux2014 -> 2.17."""
    if tag.startswith("win_amd64"):
        return "win_amd64", None
    if tag.startswith("macosx") and tag.endswith("arm64"):
        return "macos_arm64", None
    if tag.startswith("macosx") and tag.endswith("x86_64"):
        return "macos_x86_64", None
    m = re.match(r"manylinux(?:_(\d+)_(\d+)|(2014)|(2010)|(1))_(x86_64|aarch64)$", tag)
    if not m:
        return None, None
    glibc = f"2.{m.group(2)}" if m.group(1) else "2.17" if m.group(3) else "2.12" if m.group(4) else "2.5"
    return f"linux_{m.group(6)}", glibc


def wheels(files: Iterable[IndexFile]) -> list[Wheel]:
    out = []
    for f in files:
        if not f.filename.endswith(".whl") or f.yanked:
            continue
        _, version, _, tags = parse_wheel_filename(f.filename)
        for tag in tags:
            plat, glibc = _platform(tag.platform)
            ft = tag.abi.endswith("t") and tag.abi.startswith("cp")
            py = f"{tag.interpreter[2]}.{tag.interpreter[3:]}" + ("t" if ft else "")
            if tag.abi == "abi3":  # one wheel for this Python and every later 3.x
                out += [Wheel(version, f"3.{m}", plat, glibc, f) for m in range(int(tag.interpreter[3:]), 16)]
            elif tag.interpreter.startswith("cp"):
                out.append(Wheel(version, py, plat, glibc, f))
    return out


def _cuda_of(reqs: list[Requirement]) -> str | None:
    """CUDA of a build from its runtime pins: nvidia-cuda-runtime-cu12==12.4.127 or cuda-toolkit[...]==13.0.2."""
    for r in reqs:
        if r.name in ("cuda-toolkit",) or re.fullmatch(r"nvidia-cuda-runtime(-cu\d+)?", r.name):
            spec = next(iter(r.specifier), None)
            if spec is not None:
                major, minor = spec.version.split(".")[:2]
                return f"cu{major}{minor}"
    return None


def check_torch(rel: TorchRelease, all_wheels: list[Wheel], index: Index) -> list[str]:
    found: list[str] = []
    say = found.append
    mine = [w for w in all_wheels if w.version == Version(rel.version)]
    if not mine:
        return [f"torch {rel.version}: no wheels on the index"]
    pys = sorted({w.python for w in mine if not w.python.endswith("t")}, key=Version)
    fts = sorted({w.python for w in mine if w.python.endswith("t")}, key=lambda s: Version(s[:-1]))
    if pys != list(rel.python):
        say(f"torch {rel.version}: python: index has {pys}, compat has {list(rel.python)}")
    if fts != list(rel.free_threaded):
        say(f"torch {rel.version}: free_threaded: index has {fts}, compat has {list(rel.free_threaded)}")
    plats = {w.platform for w in mine if w.platform}
    if plats != set(rel.pypi_backends or {}):
        say(f"torch {rel.version}: platforms: index has {sorted(plats)}, compat pypi_backends has {sorted(rel.pypi_backends)}")
    for plat in sorted(p for p in plats if p.startswith("linux")):
        tag_floor = min((w.glibc for w in mine if w.platform == plat and w.glibc), key=Version)
        have = rel.glibc.get(plat)
        # A curated floor may be stricter than the tag (manylinux1-tagged wheels built on manylinux2014), never looser.
        if have is None or Version(have) < Version(tag_floor) or (Version(tag_floor) >= Version("2.17") and have != tag_floor):
            say(f"torch {rel.version}: glibc[{plat}]: wheel tags say {tag_floor}, compat has {have}")
    for plat in ("linux_x86_64", "linux_aarch64"):
        meta = next((m for w in mine if w.platform == plat and (m := index.metadata(w.file))), None)
        if meta is None:
            say(f"note: torch {rel.version}: no readable METADATA for {plat}; pins not checked")
            continue
        reqs = [Requirement(line.split(":", 1)[1].strip()) for line in meta.splitlines()
                if line.startswith("Requires-Dist:")]
        machine = plat.split("_", 1)[1]
        env = {"platform_system": "Linux", "platform_machine": machine, "sys_platform": "linux",
               "python_version": rel.python[0]}
        active = [r for r in reqs if r.marker is None or r.marker.evaluate(env)]
        backend = _cuda_of(active) or "cpu"
        if rel.pypi_backends.get(plat) != backend:
            say(f"torch {rel.version}: pypi_backends[{plat}]: METADATA says {backend}, compat has {rel.pypi_backends.get(plat)}")
        if plat == "linux_x86_64" and rel.pypi_backend != backend:
            say(f"torch {rel.version}: pypi_backend: METADATA says {backend}, compat has {rel.pypi_backend}")
        triton = next((r for r in reqs if r.name == "triton"), None)
        spec = str(triton.specifier) if triton else ""
        # aarch64 wheels of early releases carry no triton line at all; the pin is read from the x86_64 wheel.
        if plat == "linux_x86_64" and spec != rel.triton_requirement:
            say(f"torch {rel.version}: triton_requirement: METADATA says {spec!r}, compat has {rel.triton_requirement!r}")
        if (triton is not None and triton in active) != (plat in rel.triton_platforms):
            say(f"torch {rel.version}: triton_platforms: METADATA {plat} wheel {'pulls' if triton in active else 'does not pull'} "
                f"triton, compat has {list(rel.triton_platforms)}")
        below = re.search(r'python_version < "(3\.\d+)"', str(triton.marker)) if triton else None
        if triton is not None and (below.group(1) if below else None) != rel.triton_python_below:
            say(f"torch {rel.version}: triton_python_below: METADATA says {below.group(1) if below else None}, "
                f"compat has {rel.triton_python_below}")
    return found


def check_triton(t: TritonRelease, all_wheels: list[Wheel]) -> list[str]:
    mine = [w for w in all_wheels if w.version == Version(t.version)]
    if not mine:
        return [f"triton {t.version}: no wheels on the index"]
    found = []
    pys = sorted({w.python for w in mine if not w.python.endswith("t")}, key=Version)
    if pys != list(t.python):
        found.append(f"triton {t.version}: python: index has {pys}, compat has {list(t.python)}")
    plats = sorted({w.platform for w in mine if w.platform}, key=lambda p: p != "linux_x86_64")
    if plats != list(t.platforms):
        found.append(f"triton {t.version}: platforms: index has {plats}, compat has {list(t.platforms)}")
    for plat in plats:
        floor = min((w.glibc for w in mine if w.platform == plat and w.glibc), key=Version)
        if t.glibc.get(plat) != floor:
            found.append(f"triton {t.version}: glibc[{plat}]: wheel tags say {floor}, compat has {t.glibc.get(plat)}")
    return found


def run(matrix: Matrix, index: Index, versions: set[str] | None = None) -> list[str]:
    """Every disagreement between compat/ and the index; lines starting "note:" are not failures."""
    torch_files, triton_files = wheels(index.files("torch")), wheels(index.files("triton"))
    found: list[str] = []
    for rel in matrix.torch:
        if versions is None or rel.version in versions:
            found += check_torch(rel, torch_files, index)
    for t in matrix.triton:
        if versions is None or t.version in versions:
            found += check_triton(t, triton_files)
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--compat", help="compat directory (default: the shipped one)")
    ap.add_argument("--index", help="default index (default: PIP_INDEX_URL / pip config / pip's default)")
    ap.add_argument("--versions", help="comma-separated torch/triton versions to check (default: all)")
    args = ap.parse_args(argv)
    matrix = load_matrix(args.compat)
    index = Index(args.index or default_index())
    found = run(matrix, index, set(args.versions.split(",")) if args.versions else None)
    for line in found:
        print(line)
    bad = [f for f in found if not f.startswith("note:")]
    print(f"{len(bad)} disagreement(s) with {index.url} (matrix {matrix.version})", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
