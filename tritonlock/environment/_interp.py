"""Asking interpreters what they see: site-packages, Python version, and which one a --system-site-packages
venv is built on."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tritonlock import _subprocess
from tritonlock.environment import _venv


def venv_sites(python: str) -> list[str]:
    """site-packages of `python` when it is itself a venv (empty for a plain interpreter)."""
    code = ("import json, site, sys; print(json.dumps(site.getsitepackages() "
            "if sys.prefix != sys.base_prefix else []))")
    proc = _subprocess.run([python, "-I", "-c", code], timeout=60)
    if proc.returncode != 0:
        return []
    return [p for p in json.loads(proc.stdout or "[]") if Path(p).is_dir()]


def path_sites(python: str) -> list[str]:
    """The site-packages directories on `python`'s sys.path, in import order."""
    code = "import json, sys; print(json.dumps([p for p in sys.path if p.endswith(('site-packages', 'dist-packages'))]))"
    proc = _subprocess.run([python, "-I", "-c", code], timeout=60)
    if proc.returncode != 0:
        return []
    return [p for p in json.loads(proc.stdout or "[]") if Path(p).is_dir()]


def dists_in(sites: list[str]) -> dict[str, str]:
    """Distributions in these directories; the first copy of a name wins, as it does on import."""
    out: dict[str, str] = {}
    for p in sites:
        for k, v in _venv.read_dists(Path(p)).items():
            out.setdefault(k, v)
    return out


def system_dists(python: Path) -> dict[str, str]:
    """Distributions visible from an interpreter's site-packages (for --system-site-packages)."""
    return dists_in(path_sites(str(python)))


def python_minor_of(python: str) -> str | None:
    """"3.12" for an interpreter path (from its venv's pyvenv.cfg when it has one, else by asking it)."""
    p = Path(python)
    if (p.parent.parent / "pyvenv.cfg").is_file():
        minor = _venv.venv_python_minor(p.parent.parent)
        if minor:
            return minor
    try:
        proc = _subprocess.run([python, "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], timeout=60)
    except OSError:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def find_base_python(minor: str, exclude: tuple[Path, ...] = ()) -> str | None:
    """The interpreter a --system-site-packages venv is built on when --python names none: in PATH order, the
    first directory's `python3.X` (or `python3`, `python`) that runs the locked Python — skipping tritonlock's own
    environment (pipx-style installs, or an activated one) and the venv being synced; then what
    `uv python find --system` finds."""
    skip = {os.path.realpath(e / ("Scripts" if os.name == "nt" else "bin")) for e in exclude}
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d or os.path.realpath(d) in skip:
            continue
        for name in (f"python{minor}", "python3", "python"):
            cand = os.path.join(d, name)
            if os.path.isfile(cand) and os.access(cand, os.X_OK) and python_minor_of(cand) == minor:
                return cand
    proc = _subprocess.run([_subprocess.uv_bin(), "python", "find", "--system", "--no-config", minor], timeout=60)
    found = proc.stdout.strip()
    return found if proc.returncode == 0 and found else None
