"""What a wheel file name says: version, Python, platform and glibc/macOS floors of each wheel on an index."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from tritonlock.lock.index import IndexFile


@dataclass(frozen=True)
class Wheel:
    version: Version
    python: str  # "3.12" or "3.13t"
    platform: str | None  # tritonlock platform name, None for ones the matrix does not track
    glibc: str | None
    file: IndexFile
    macos: str | None = None  # the macOS floor of a macosx_X_Y tag: "14.0"


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
            mac = re.match(r"macosx_(\d+)_(\d+)_", tag.platform)
            macos = f"{mac.group(1)}.{mac.group(2)}" if mac else None
            ft = tag.abi.endswith("t") and tag.abi.startswith("cp")
            py = f"{tag.interpreter[2]}.{tag.interpreter[3:]}" + ("t" if ft else "")
            if tag.abi == "abi3":  # one wheel for this Python and every later 3.x
                out += [Wheel(version, f"3.{m}", plat, glibc, f, macos) for m in range(int(tag.interpreter[3:]), 16)]
            elif tag.interpreter.startswith("cp"):
                out.append(Wheel(version, py, plat, glibc, f, macos))
    return out


def cuda_of(reqs: list[Requirement]) -> str | None:
    """CUDA of a build from its runtime pins: nvidia-cuda-runtime-cu12==12.4.127 or cuda-toolkit[...]==13.0.2."""
    for r in reqs:
        if r.name in ("cuda-toolkit",) or re.fullmatch(r"nvidia-cuda-runtime(-cu\d+)?", r.name):
            spec = next(iter(r.specifier), None)
            if spec is not None:
                major, minor = spec.version.split(".")[:2]
                return f"cu{major}{minor}"
    return None


