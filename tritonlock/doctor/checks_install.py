"""doctor's checks for mixed installs: triton pins, second copies, conda, shadowing libraries, glibc, symbols."""

from __future__ import annotations

import os
import re

from packaging.markers import InvalidMarker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from tritonlock.doctor.context import Context, Finding, parse_version, plural, sync_fix
from tritonlock.doctor.facts import VenvFacts
from tritonlock.environment._venv import HARDLINK_CAUSE

_TRITONS = ("triton", "pytorch-triton", "triton-windows")


# Distributions whose package shares a name with another's: both write the same files.
_SAME_FILES = (("triton", "pytorch-triton"),)


# A shared library's family: "libcudnn.so.9" and "libcudnn.so" are both libcudnn.
_LIB_FAMILY = re.compile(r"^(lib[A-Za-z_]+?)(\d*)\.so")

_CONDA_TORCH = ("pytorch", "pytorch-cuda", "pytorch-gpu", "torchvision", "torchaudio", "triton", "cudatoolkit",
                "cuda-toolkit", "cuda-runtime", "cudnn", "nccl", "libcublas", "cuda-cudart")


# ---------------------------------------------------------------- triton pins


def _names_torch(line: str) -> bool:
    """Whether a Requires-Dist line from a venv's METADATA requires torch (a malformed line requires nothing)."""
    try:
        return canonicalize_name(Requirement(line).name) == "torch"
    except InvalidRequirement:
        return False


def _torch_pin(c: Context) -> tuple[str, SpecifierSet, str] | None:
    """The triton-family requirement torch's METADATA pins for this interpreter: (name, spec, line)."""
    d = c.dist("torch")
    if d is None or c.venv is None:
        return None
    for line in d.requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) not in _TRITONS:
            continue
        try:
            if req.marker is not None and not req.marker.evaluate({**c.venv.markers, "extra": ""}):
                continue
        except (InvalidMarker, KeyError, ValueError):
            continue
        return canonicalize_name(req.name), req.specifier, line
    return None


def check_triton(c: Context) -> list[Finding]:
    v = c.venv
    if v is None:
        return []
    out: list[Finding] = []
    for a, b in _SAME_FILES:
        da, db = c.dist(a), c.dist(b)
        if da and db:
            ev = [f"{da.name} {da.version} in {da.location}", f"{db.name} {db.version} in {db.location}"]
            if v.triton_version:
                ev.append(f"`import triton` reports {v.triton_version}: that distribution's files won")
            out.append(Finding(id="pytorch-triton-leftover", severity="error",
                               title=f"{db.name} {db.version} and {da.name} {da.version} are both installed: both "
                                     "write the same `triton` package, so its files are a mix of the two",
                               evidence=tuple(ev),
                               fix=f"`pip uninstall -y {db.name} {da.name}` "
                                   f"(uv: `uv pip uninstall {db.name} {da.name}`), "
                                   f"then {sync_fix(c)}; {db.name} belongs to nightly torch builds only"))
    pin = _torch_pin(c)
    tv = c.torch_version()
    if pin is not None:
        name, spec, line = pin
        have = c.dist(name)
        if have is None:
            ev = [f"torch {tv} METADATA: Requires-Dist: {line}",
                  "torch.compile fails with: Cannot find a working triton installation"]
            ev += [f"{o} {d.version} is installed instead" for o in _TRITONS if o != name and (d := c.dist(o))]
            out.append(Finding(id="triton-missing", severity="error",
                               title=f"torch {tv} requires {name}{spec}, which is not installed in {c.where}",
                               evidence=tuple(ev), fix=sync_fix(c)))
        elif not spec.contains(have.version, prereleases=True):
            out.append(Finding(id="triton-version-mismatch", severity="error",
                               title=f"{name} {have.version} is installed, but torch {tv} pins {name}{spec}",
                               evidence=(f"torch {tv} METADATA: Requires-Dist: {line}",
                                         f"{have.name} {have.version} in {have.location}",
                                         "a triton torch was not built with breaks torch.compile / inductor "
                                         "(import errors or wrong kernels)"),
                               fix=f"{sync_fix(c)}; by hand: `pip install '{name}{spec}'`"))
    if v.triton_error and "No module named 'triton'" not in v.triton_error:
        if "undefined symbol" in v.triton_error:
            out.append(undefined_symbol(c, "triton", v.triton_error))
        else:
            out.append(Finding(id="triton-import-error", severity="error", title=f"`import triton` fails in {c.where}",
                               evidence=(v.triton_error,), fix=symbol_fix(c, mixed_causes(c, v.triton_error), c.where)))
    return out


# ---------------------------------------------------------------- second copies, conda, shadowing libraries


def _foreign(c: Context, location: str) -> str:
    """How a copy outside the venv's own site-packages gets on sys.path."""
    assert c.venv
    pp = c.venv.env.get("PYTHONPATH", "")
    if any(p and os.path.abspath(p) == os.path.abspath(location) for p in pp.split(os.pathsep)):
        return "PYTHONPATH"
    if "/.local/lib/" in location or "\\AppData\\Roaming\\Python" in location:
        return "the user site (~/.local): `pip uninstall --user` it, or set PYTHONNOUSERSITE=1"
    if not location.startswith(c.venv.prefix):
        return "a .pth file in site-packages (or PYTHONPATH) adds that directory: remove it"
    return "this venv"


def check_duplicates(c: Context) -> list[Finding]:
    v = c.venv
    if v is None:
        return []
    out = []
    for name, dirs in (("torch", v.torch_dirs), ("triton", v.triton_dirs)):
        copies = {os.path.abspath(d.location): d.version for d in c.dists(name)}
        for path in dirs:
            copies.setdefault(os.path.dirname(path), "(no dist-info)")
        if len(copies) < 2:
            continue
        ev = [f"{name} {ver} in {loc}" for loc, ver in copies.items()]
        file = v.torch.file if name == "torch" and v.torch else v.triton_file
        if file:
            ev.append(f"`import {name}` loads {file}")
        others = [loc for loc in copies if not loc.startswith(v.prefix)] or list(copies)[1:]
        how = "; ".join(f"{loc}: {_foreign(c, loc)}" for loc in others)
        out.append(Finding(id=f"duplicate-{name}", severity="error",
                           title=f"{len(copies)} copies of {name} are importable in {c.where}: their compiled "
                                 "libraries and Python files get mixed", evidence=tuple(ev),
                           fix=f"remove the copies outside the venv ({how}), then {sync_fix(c)}"))
    return out


def check_conda(c: Context) -> list[Finding]:
    v = c.venv
    if v is None or v.conda_packages is None:
        return []
    conda = [p for p in v.conda_packages if p in _CONDA_TORCH]
    pip = [d for d in v.dists if (d.installer or "").lower() != "conda"
           and (canonicalize_name(d.name) in ("torch", *_TRITONS) or canonicalize_name(d.name).startswith("nvidia-"))]
    if not conda or not pip:
        return []
    broken = bool(v.torch is None or (v.torch and v.torch.error))
    return [Finding(id="conda-pip-mix", severity="error" if broken else "warning",
                    title=f"{c.where} is a conda environment whose conda packages ({', '.join(conda)}) overlap the "
                          f"torch stack installed with {pip[0].installer or 'pip'}",
                    evidence=(f"{v.prefix}/conda-meta: {', '.join(conda)}",
                              *(f"{d.name} {d.version} installed by {d.installer or 'unknown'} in {d.location}"
                                for d in pip[:6])),
                    fix="use one installer for the torch stack: `conda remove` those packages and keep the locked "
                        "wheels, or better, a plain venv outside conda: `tritonlock sync` (with the conda "
                        "environment deactivated)")]


def _family(path: str) -> str | None:
    m = _LIB_FAMILY.match(os.path.basename(path))
    return m[1] if m else None


def check_shadowing(c: Context) -> list[Finding]:
    v = c.venv
    if v is None:
        return []
    # libcuda is the driver's: it is always the system's copy, by design.
    shipped = {f: p for p in v.wheel_libs if (f := _family(p)) and f != "libcuda"}
    ev: list[str] = []
    for d, libs in v.ld_library_path_libs.items():
        clash = [lib for lib in libs if _family(lib) in shipped]
        if clash:
            ev.append(f"LD_LIBRARY_PATH dir {d} holds {', '.join(clash)}; the venv's wheels ship "
                      + ", ".join(sorted({os.path.basename(shipped[f]) for lib in clash if (f := _family(lib))})))
    preload = [p for p in v.env.get("LD_PRELOAD", "").replace(":", " ").split() if _family(p) in shipped]
    ev += [f"LD_PRELOAD loads {p}" for p in preload]
    if not ev:
        return []
    loaded = [p for p in v.loaded_libs if not p.startswith(v.prefix) and _family(p) in shipped]
    if loaded:
        ev += [f"torch loaded {p} instead of the wheel's {shipped[_family(p) or '']}" for p in loaded]
        title = "system CUDA libraries shadow the ones the venv's nvidia-* wheels ship, and torch loaded them"
    else:
        # Recent torch preloads its nvidia-* libraries by path, so it may escape; code that loads them by
        # name (a CUDA extension, an older torch, cupy) still gets the system copy.
        mine = [p for p in v.loaded_libs if p.startswith(v.prefix) and _family(p) in shipped]
        ev += [f"torch loaded the wheels' own copies this time: {', '.join(os.path.basename(p) for p in mine)}"
               ] if mine else []
        title = ("LD_LIBRARY_PATH puts system CUDA libraries ahead of the ones the venv's nvidia-* wheels ship: "
                 "whatever loads them by name gets the system copy")
    broken = bool(loaded) or bool(v.torch is None or (v.torch and v.torch.error))
    return [Finding(id="cuda-lib-shadow", severity="error" if broken else "warning", title=title,
                    evidence=(f"LD_LIBRARY_PATH={v.env.get('LD_LIBRARY_PATH', '')}", *ev),
                    fix="unset LD_LIBRARY_PATH (or drop those directories from it) when using this venv: the wheels "
                        "find their own libraries, and ld.so searches LD_LIBRARY_PATH before a library's RUNPATH")]


def check_wsl_libcuda(c: Context) -> list[Finding]:
    v = c.venv
    if not c.host.wsl or v is None or not v.libcuda or v.libcuda.startswith("/usr/lib/wsl/"):
        return []
    return [Finding(id="wsl-libcuda-shadowed", severity="error",
                    title=f"libcuda.so.1 loads from {v.libcuda}, not from WSL's /usr/lib/wsl/lib: a Linux driver "
                          "library shadows the one the Windows driver provides",
                    evidence=(f"dlopen(libcuda.so.1) → {v.libcuda}", "WSL2 kernel",
                              f"LD_LIBRARY_PATH={v.env.get('LD_LIBRARY_PATH', '')}"),
                    fix="remove the Linux NVIDIA driver packages inside WSL (e.g. `sudo apt remove --purge "
                        "'libnvidia-compute-*'`), drop other libcuda directories from LD_LIBRARY_PATH, keep "
                        "/usr/lib/wsl/lib in /etc/ld.so.conf.d/ld.wsl.conf and run `sudo ldconfig`")]


# ---------------------------------------------------------------- glibc


def _glibc_needed(tags: tuple[str, ...]) -> str | None:
    """The least glibc any of a wheel's tags runs on; None when a tag needs none (pure or non-manylinux)."""
    need: list[tuple[int, int]] = []
    for tag in tags:
        for plat in tag.split("-")[-1].split("."):
            m = re.match(r"manylinux_(\d+)_(\d+)_", plat)
            legacy = {"manylinux2014": (2, 17), "manylinux2010": (2, 12), "manylinux1": (2, 5)}
            found = (int(m[1]), int(m[2])) if m else legacy.get(plat.split("_")[0])
            if found is None:
                return None
            need.append(found)
    return f"{min(need)[0]}.{min(need)[1]}" if need else None


def check_glibc(c: Context) -> list[Finding]:
    v = c.venv
    glibc = c.host.glibc or (v.glibc if v else None)
    if v is None or not glibc or parse_version(glibc) is None:
        return []
    bad = []
    for d in v.dists:
        need = _glibc_needed(d.tags)
        if need and Version(need) > Version(glibc):
            bad.append((Version(need), d))
    if not bad:
        return []
    bad.sort(key=lambda x: x[1].name)
    bad.sort(key=lambda x: x[0], reverse=True)
    ev = [f"{d.name} {d.version}: wheel tag {' '.join(d.tags)} needs glibc >= {need}" for need, d in bad[:6]]
    ev.append(f"this host: glibc {glibc}")
    if v.torch and v.torch.error and "GLIBC_" in v.torch.error:
        ev.append(v.torch.error)
    return [Finding(id="glibc-too-old", severity="error",
                    title=f"{plural(len(bad), 'installed wheel')} in {c.where} need glibc >= {bad[0][0]}; this host "
                          f"has {glibc}",
                    evidence=tuple(ev),
                    fix="the venv was built for a newer system: lock for this host (`tritonlock host --save "
                        "host.toml`, add it to triton-env.toml, `tritonlock resolve`) and rebuild it here with "
                        "`tritonlock sync` — or run in a newer OS image (`tritonlock export --format dockerfile`)")]


# ---------------------------------------------------------------- undefined symbols: which mixed install caused them


def mixed_causes(c: Context, error: str) -> list[tuple[str, str]]:
    """Mixed-install causes visible in the venv, each (evidence, fix)."""
    out: list[tuple[str, str]] = []
    for f in check_stray(c) + check_duplicates(c) + check_conda(c) + check_shadowing(c):
        out.append((f.title, f.fix))
    if "triton" in error or not error:
        for f in check_triton(Context(host=c.host, venv=_no_import_errors(c.venv), lock=c.lock, matrix=c.matrix,
                                      where=c.where)):
            out.append((f.title, f.fix))
    m = re.search(r"(\S+/(torchvision|torchaudio)/\S+\.so)", error)
    if m:
        pkg, tv = m[2], c.torch_version()
        d = c.dist(pkg)
        pins = [r for r in (d.requires if d else ()) if _names_torch(r)]
        out.append((f"{pkg} {d.version if d else '?'} was built for {', '.join(pins) or 'another torch'}; torch is "
                    f"{tv}", f"install the {pkg} that matches torch {tv}: {sync_fix(c)}"))
    return out


def _no_import_errors(v: VenvFacts | None) -> VenvFacts | None:
    if v is None:
        return None
    from dataclasses import replace

    return replace(v, triton_error=None)


def symbol_fix(c: Context, causes: list[tuple[str, str]], where: str) -> str:
    if causes:
        return "; ".join(dict.fromkeys(f for _, f in causes))
    return (f"a partial upgrade left files of two builds: rebuild the venv from the lock — remove {where} and run "
            "`tritonlock sync`")


def undefined_symbol(c: Context, module: str, error: str) -> Finding:
    m = re.search(r"(\S+\.so[.\d]*): undefined symbol: (\S+)", error)
    lib, sym = (m[1], m[2]) if m else ("?", error.rsplit(":", 1)[-1].strip())
    causes = mixed_causes(c, error)
    ev = [error] + [f"likely cause: {cause}" for cause, _ in causes]
    if not causes:
        ev.append("no second copy, conda mix, leftover package or shadowing library found: the files of one "
                  "package are from two different builds")
    return Finding(id="undefined-symbol", severity="error",
                   title=f"`import {module}` fails: {os.path.basename(lib)} needs symbol {sym}, which the loaded "
                         "libraries lack — a mixed install", evidence=tuple(ev), fix=symbol_fix(c, causes, c.where))


# ---------------------------------------------------------------- files against RECORD


def check_stray(c: Context) -> list[Finding]:
    """Files no installed distribution owns that take the import name of an installed module or package (a
    triton.py dropped beside triton/): nothing installed them and no reinstall removes them."""
    v = c.venv
    if v is None or not v.stray:
        return []
    n = len(v.stray)
    fix = (f"{sync_fix(c)}: it removes them and reinstalls the packages they shadow" if c.lock and c.lock.lock
           else f"remove {'it' if n == 1 else 'them'} by hand ({' '.join(v.stray[:3])}{' …' if n > 3 else ''})")
    return [Finding(id="venv-stray-module", severity="error",
                    title=f"{plural(n, 'file')} in {c.where} that no installed distribution owns "
                          f"{'takes' if n == 1 else 'take'} the import name of an installed module: "
                          + ", ".join(v.stray[:3]) + (" …" if n > 3 else ""),
                    evidence=tuple(f"{p}: no RECORD in {c.where} lists it" for p in v.stray), fix=fix)]


def check_integrity(c: Context) -> list[Finding]:
    """A killed install (or a deleted file) leaves packages whose files are not what their RECORD lists."""
    v = c.venv
    if v is None or not (v.damaged or v.modified):
        return []
    fix = (f"{sync_fix(c)}: it checks every package's files and reinstalls the damaged ones" if c.lock and c.lock.lock
           else "reinstall them (`uv pip install --reinstall-package NAME`), or lock the project and `tritonlock sync`")
    out = []
    if v.damaged:
        n = len(v.damaged)
        out.append(Finding(id="venv-damaged", severity="error",
                           title=f"{plural(n, 'package')} in {c.where} {'is' if n == 1 else 'are'} damaged: files "
                                 "missing or not as their RECORD lists (an install that was stopped half-way?)",
                           evidence=v.damaged, fix=fix))
    if v.modified:
        # Every file is there, some with other sizes: edited after install (images that swap certifi's bundle
        # for the system's do this on purpose) or cut short by a kill; only the owner knows which — unless the
        # changed files are hard links shared with uv's cache: then an edit elsewhere changed them, and says so.
        n = len(v.modified)
        names = " ".join(dict.fromkeys(e.split(" ", 1)[0] for e in v.modified))
        again = (f"`tritonlock sync --reinstall {names}` installs {'it' if n == 1 else 'them'} again from the lock"
                 if c.lock and c.lock.lock else f"reinstall {'it' if n == 1 else 'them'} "
                 f"(`uv pip install --reinstall-package NAME`), or lock the project and `tritonlock sync`")
        if any(HARDLINK_CAUSE in e for e in v.modified):
            out.append(Finding(
                id="venv-modified", severity="warning",
                title=f"{plural(n, 'package')} in {c.where} {'has' if n == 1 else 'have'} files of another size than "
                      "their RECORD lists — hard links whose bytes uv's cache and other venvs share, so an edit made "
                      "through any of them changed them all",
                evidence=v.modified,
                fix=f"`uv cache clean {names}` (the cache's copy holds the edit too), then " + again
                    + "; tritonlock's own syncs give each venv copies of its own (or copy-on-write clones) unless "
                      "UV_LINK_MODE=hardlink asks for shared files (docs/sync.md)"))
            return out
        out.append(Finding(id="venv-modified", severity="warning",
                           title=f"{plural(n, 'package')} in {c.where} {'has' if n == 1 else 'have'} files of another "
                                 "size than their RECORD lists: changed after install, or cut short by a killed install",
                           evidence=v.modified, fix="if the change was not deliberate: " + again))
    return out
