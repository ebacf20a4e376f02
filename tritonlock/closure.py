"""Turn a target's top-level pins into its full, hashed package set by driving `uv pip compile`."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from tritonlock import _subprocess, _toml, _urls
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


# uv resolves `aarch64-apple-darwin` for macOS 13.0 unless MACOSX_DEPLOYMENT_TARGET says otherwise (its
# --python-platform help; checked: a macosx_14_0_arm64 wheel is skipped without it and taken with "14.0").
_UV_MACOS_DEFAULT = "13.0"


def macos_deployment_target(sel: Selection, matrix: Matrix) -> str | None:
    """The macOS uv must resolve a macos target for: the version the target states, else the floor of the chosen
    torch's wheels (torch.toml `macos`, e.g. 2.15.0's macosx_14_0_arm64) where it is above uv's own assumption."""
    t = sel.target
    if t.os != "macos":
        return None
    if t.macos:
        return t.macos
    from tritonlock.resolve import platform_of

    release = matrix.torch_release(sel.torch or "")
    floor = release.macos_floor(platform_of(t), sel.python) if release else None
    from packaging.version import Version

    return floor if floor and Version(floor) > Version(_UV_MACOS_DEFAULT) else None


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
    lines += [f'{toml_value(p)} = {{ index = "torch" }}' for p in torch_pkgs]
    return "\n".join(lines) + "\n"


def bound_to_torch_index(matrix: Matrix, sel: Selection, name: str) -> bool:
    """Whether a package must come from the selection's torch index (the torch family, compat/meta.toml) — triton
    only where that backend's index publishes it (meta.toml triton_from_default: not for cpu)."""
    return matrix.bound_to_torch_index(canonicalize_name(name), sel.backend)


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*", re.ASCII)
# How many times a newly found torch-family package may bring another one (torchvision → torch → triton).
_PASSES = 5


def compile_key(sel: Selection, matrix: Matrix, default_index: str) -> tuple[str, ...]:
    """Everything compile_target's answer depends on: targets with equal keys can share one compile."""
    from tritonlock.resolve import platform_of

    release = matrix.torch_release(sel.torch or "")
    floor = release.glibc_for(platform_of(sel.target), sel.backend) if release else None
    return (*requirements(sel), sel.index or "", sel.python or "", python_platform(sel, floor), default_index,
            macos_deployment_target(sel, matrix) or "")


def compile_target(sel: Selection, matrix: Matrix, default_index: str, *, timeout: float = 900) -> tuple[LockedPackage, ...]:
    """The full transitive set for one ok selection, each package bound to exactly one index.

    uv honours [tool.uv.sources] for direct requirements only, so a torch-family package that enters the closure
    through another package (a library needing torchvision; the triton torch pins) would come from the default
    index — where a same-named decoy may wait (PyTorch's Dec 2022 torchtriton incident). Each family member found
    that way is added as a bare direct requirement bound to the torch index and the closure is computed again,
    until no family member is left unbound; if the torch index cannot serve it, the lock is refused.
    """
    assert sel.ok and sel.torch and sel.index and sel.python
    reqs = requirements(sel)
    names = {canonicalize_name(m.group(0)) for r in reqs if (m := _NAME.match(r))}
    bound = {n for n in names if bound_to_torch_index(matrix, sel, n)}
    release = matrix.torch_release(sel.torch)
    from tritonlock.resolve import platform_of

    floor = release.glibc_for(platform_of(sel.target), sel.backend) if release else None
    pulled: list[str] = []  # family members that came in through other packages
    macos = macos_deployment_target(sel, matrix)
    for _ in range(_PASSES):
        raw = _compile(sel, reqs + pulled, sorted(bound), default_index, floor, timeout, pulled, macos)
        found = {canonicalize_name(str(r["name"])) for r in raw}
        unbound = sorted(n for n in found - bound if bound_to_torch_index(matrix, sel, n))
        if not unbound:
            break
        bound.update(unbound)
        pulled += unbound
    else:
        raise ClosureError(f"target {sel.target.name!r}: the torch family kept growing after {_PASSES} passes "
                           f"({', '.join(pulled)}) — report this with your triton-env.toml")
    pkgs: list[LockedPackage] = []
    for r in raw:
        name = canonicalize_name(str(r["name"]))
        index = sel.index if name in bound else default_index
        wheels = tuple(_file(w) for w in r.get("wheels", []))
        sdist = _file(r["sdist"]) if "sdist" in r else None
        pkgs.append(LockedPackage(name=name, version=str(r["version"]), index=index, wheels=wheels, sdist=sdist))
    return tuple(sorted(pkgs, key=lambda p: p.name))


def _compile(sel: Selection, reqs: list[str], torch_pkgs: list[str], default_index: str, floor: str | None,
             timeout: float, pulled: list[str], macos: str | None = None) -> list[dict[str, Any]]:
    """One `uv pip compile` for the target's platform and Python: the [[packages]] tables of its pylock output.

    Index addresses go to uv without credentials; credentials (and pip's TLS settings) go in uv's environment,
    never on its command line or in a file. As pip, keyring is asked only when an index wants credentials.
    """
    from tritonlock import index

    assert sel.python and sel.index
    with tempfile.TemporaryDirectory(prefix="tritonlock-closure-") as tmp:
        pyproject = Path(tmp) / "pyproject.toml"
        pyproject.write_text(_pyproject(sel, reqs, torch_pkgs), encoding="utf-8")
        out = Path(tmp) / "pylock.toml"
        args = [_subprocess.uv_bin(), "pip", "compile", str(pyproject), "--no-config", "--no-header", "--quiet",
                f"--python-version={sel.python}", f"--python-platform={python_platform(sel, floor)}",
                "--generate-hashes", "-o", str(out)]
        for keyring in (False, True):
            env = index.uv_env(named={"torch": sel.index}, default=default_index, keyring=keyring)
            if macos:
                env["MACOSX_DEPLOYMENT_TARGET"] = macos
            unset = (*index.UV_UNSET, "MACOSX_DEPLOYMENT_TARGET")  # this machine's setting says nothing of the target
            proc = _subprocess.run(args, cwd=tmp, timeout=timeout, env=env, unset=unset)
            if proc.returncode == 0 or not index.asked_for_credentials(proc.stderr) or not index.network().keyring:
                break
        if proc.returncode != 0:
            msg = index.explain((proc.stderr or proc.stdout).strip().replace(str(pyproject), "the requirements"))
            shown = [r for r in reqs if r not in pulled]
            why = (f"\n  note: {', '.join(pulled)} {'is' if len(pulled) == 1 else 'are'} needed by other packages and, "
                   f"being in the torch family, {'is' if len(pulled) == 1 else 'are'} taken only from the torch index "
                   f"{sel.index} (never from the default index, where a same-named package may be a decoy)"
                   if pulled else "")
            raise ClosureError(f"uv could not resolve target {sel.target.name!r} "
                               f"({', '.join(shown)}; torch index {sel.index}; default index {default_index}):\n"
                               f"{msg}{why}\n  fix: check that both indexes are reachable and serve these versions "
                               f"for Python {sel.python} on {python_platform(sel, floor)}"
                               + (f" (macOS {macos})" if macos else "") + index.extra_index_note())
        data = _toml.loads(out.read_text(encoding="utf-8"))
    packages = data.get("packages", [])
    return [p for p in packages if isinstance(p, dict)]


def _file(raw: dict[str, object]) -> Wheel:
    url = _urls.strip_credentials(str(raw["url"]))
    hashes = raw.get("hashes")
    sha = hashes.get("sha256") if isinstance(hashes, dict) else None
    if not isinstance(sha, str):
        raise ClosureError(f"uv gave no sha256 for {url} — the index must publish hashes")
    from urllib.parse import unquote, urlsplit

    name = unquote(urlsplit(url).path).rsplit("/", 1)[-1]
    size = raw.get("size")
    return Wheel(name=name, url=url, sha256=sha, size=size if isinstance(size, int) else None)
