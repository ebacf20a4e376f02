"""Turn a target's top-level pins into its full, hashed package set by driving `uv pip compile`."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from packaging.utils import canonicalize_name

from tritonlock import _subprocess, _toml
from tritonlock.errors import ClosureError
from tritonlock.lockfile import toml_value
from tritonlock.matrix import Matrix
from tritonlock.models import LockedPackage, Selection, Wheel


def python_platform(sel: Selection, glibc_floor: str | None) -> str:
    """uv's --python-platform for a target (the machine being locked for, not this one)."""
    t = sel.target
    if t.os == "windows":
        return "x86_64-pc-windows-msvc"
    if t.os == "macos":
        return "aarch64-apple-darwin"
    glibc = t.glibc or glibc_floor or "2.28"
    minor = int(glibc.split(".")[1])
    # uv knows manylinux_2_17 … manylinux_2_40; clamp so a brand-new glibc still works.
    minor = max(17, min(minor, 40))
    return f"{t.arch}-manylinux_2_{minor}"


def requirements(sel: Selection) -> list[str]:
    reqs = [f"torch=={sel.torch}"]
    if sel.triton_package and sel.triton:
        op = "" if sel.triton[0] in "<>=!~" else "=="
        reqs.append(f"{sel.triton_package}{op}{sel.triton}")
    return reqs + list(sel.packages)


def _pyproject(sel: Selection, reqs: list[str], torch_pkgs: Sequence[str]) -> str:
    lines = ["[project]", 'name = "tritonlock-closure"', 'version = "0"',
             f'requires-python = ">={sel.python}"', "dependencies = ["]
    lines += [f"  {toml_value(r)}," for r in reqs]
    lines += ["]", "", "[[tool.uv.index]]", 'name = "torch"', f"url = {toml_value(sel.index or '')}",
              "explicit = true", "", "[tool.uv.sources]"]
    lines += [f'{p} = {{ index = "torch" }}' for p in torch_pkgs]
    return "\n".join(lines) + "\n"


def compile_target(sel: Selection, matrix: Matrix, default_index: str, *, timeout: float = 900) -> tuple[LockedPackage, ...]:
    """The full transitive set for one ok selection, each package bound to exactly one index."""
    assert sel.ok and sel.torch and sel.index and sel.python
    reqs = requirements(sel)
    # The torch family comes only from the torch index (explicit: nothing else is looked up there).
    import re

    names = {canonicalize_name(m.group(0)) for r in reqs if (m := re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r))}
    torch_pkgs = sorted(names & set(matrix.torch_family))
    release = matrix.torch_release(sel.torch)
    from tritonlock.resolve import platform_of

    floor = release.glibc_for(platform_of(sel.target), sel.backend) if release else None
    with tempfile.TemporaryDirectory(prefix="tritonlock-closure-") as tmp:
        pyproject = Path(tmp) / "pyproject.toml"
        pyproject.write_text(_pyproject(sel, reqs, torch_pkgs), encoding="utf-8")
        out = Path(tmp) / "pylock.toml"
        args = [_subprocess.uv_bin(), "pip", "compile", str(pyproject), "--no-config", "--no-header", "--quiet",
                "--default-index", default_index, "--python-version", sel.python,
                "--python-platform", python_platform(sel, floor), "--generate-hashes", "-o", str(out)]
        proc = _subprocess.run(args, cwd=tmp, timeout=timeout)
        if proc.returncode != 0:
            msg = (proc.stderr or proc.stdout).strip().replace(str(pyproject), "the requirements")
            raise ClosureError(f"uv could not resolve target {sel.target.name!r} "
                               f"({', '.join(reqs)}; torch index {sel.index}; default index {default_index}):\n"
                               f"{msg}\n  fix: check that both indexes are reachable and serve these versions for "
                               f"Python {sel.python} on {python_platform(sel, floor)}")
        data = _toml.loads(out.read_text(encoding="utf-8"))
    pkgs: list[LockedPackage] = []
    for raw in data.get("packages", []):
        name = canonicalize_name(raw["name"])
        index = sel.index if name in torch_pkgs else default_index
        wheels = tuple(_file(w) for w in raw.get("wheels", []))
        sdist = _file(raw["sdist"]) if "sdist" in raw else None
        pkgs.append(LockedPackage(name=name, version=str(raw["version"]), index=index, wheels=wheels, sdist=sdist))
    return tuple(sorted(pkgs, key=lambda p: p.name))


def _file(raw: dict[str, object]) -> Wheel:
    url = str(raw["url"])
    hashes = raw.get("hashes")
    sha = hashes.get("sha256") if isinstance(hashes, dict) else None
    if not isinstance(sha, str):
        raise ClosureError(f"uv gave no sha256 for {url} — the index must publish hashes")
    from urllib.parse import unquote, urlsplit

    name = unquote(urlsplit(url).path).rsplit("/", 1)[-1]
    size = raw.get("size")
    return Wheel(name=name, url=url, sha256=sha, size=size if isinstance(size, int) else None)
