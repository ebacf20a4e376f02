"""The project itself in its venv, as uv installs it: where the intent lives in the pyproject.toml of a project that
can be built (a [build-system] table and a [project].name), `sync` installs it editable — without its dependencies,
which the lock holds — and again when its pyproject.toml changes. `sync --no-install-project` leaves it out."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tritonlock.errors import SyncError

# In the venv: which project was installed editable, from which pyproject.toml bytes.
MARKER = ".tritonlock-project.json"


@dataclass(frozen=True, kw_only=True, slots=True)
class Project:
    name: str  # canonical
    root: Path
    digest: str  # of its pyproject.toml (and setup.cfg / setup.py where present): what its build reads


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def buildable(project: Path) -> Project | None:
    """The project, when its intent is its pyproject.toml ([tool.tritonlock]) and it can be built; None otherwise."""
    from tritonlock import _toml
    from tritonlock._discover import PYPROJECT, is_pyproject_project
    from tritonlock._files import read_bytes

    if not is_pyproject_project(project):
        return None
    try:
        raw = read_bytes(project / PYPROJECT)
        data = _toml.loads(raw.decode("utf-8-sig"))
    except (OSError, UnicodeDecodeError, _toml.TOMLDecodeError):
        return None  # (the intent reader says what is wrong with it)
    meta = data.get("project")
    if not isinstance(data.get("build-system"), dict) or not isinstance(meta, dict):
        return None
    name = meta.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    from tritonlock._machine import sha256_hex

    parts = [raw]
    for extra in ("setup.cfg", "setup.py"):
        try:
            parts.append(read_bytes(project / extra))
        except OSError:
            parts.append(b"")
    return Project(name=_canon(name), root=project,
                   digest=sha256_hex(b"\0".join(sha256_hex(p).encode() for p in parts)))


def key_part(project: Path | str) -> str:
    """What of the project the no-op check keys on: its build's inputs, when sync installs it ("" otherwise)."""
    p = buildable(Path(project))
    return f"project:{p.name}:{p.digest}" if p is not None else ""


def _marker(venv: Path) -> dict[str, object] | None:
    import json

    try:
        with open(venv / MARKER, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def why_install(p: Project, venv: Path, dists: dict[str, str]) -> str | None:
    """Why the project must be installed (again) into the venv; None when it is there as its pyproject.toml says."""
    if p.name not in dists:
        return f"installing the project itself, {p.name} (editable, as uv does; --no-install-project leaves it out)"
    m = _marker(venv)
    if m is None or m.get("name") != p.name or m.get("root") != str(p.root.resolve()):
        return f"installing the project itself, {p.name}, from {p.root} (editable)"
    if m.get("digest") != p.digest:
        return f"installing the project itself, {p.name}, again: its pyproject.toml changed (editable)"
    return None


def install(p: Project, venv: Path, *, default_index: str, offline: bool, say: Callable[[str], None]) -> None:
    """`uv pip install --no-deps -e PROJECT` into the venv (its build backend from the default index, or uv's cache
    with --offline); SyncError (exit 5) saying the venv otherwise matches the lock when the build fails."""
    from tritonlock import _subprocess
    from tritonlock.lock import index

    py = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    args = [_subprocess.uv_bin(), "pip", "install", "--no-config", f"--python={py}", "--no-deps",
            "-e", str(p.root.resolve())]
    if offline:
        args.append("--offline")
    env = {**index.install_env([default_index], keyring=False), "UV_NO_PROGRESS": "1"}
    proc = _subprocess.run(args, env=env, unset=index.UV_UNSET, timeout=1800)
    if proc.returncode != 0:
        said = index.explain((proc.stderr or proc.stdout or "").strip())[-3000:]
        raise SyncError(f"{venv} matches the lock, but installing the project itself ({p.name}, editable, from "
                        f"{p.root}) failed:\n{said}\n  fix: make `uv pip install -e {p.root}` work (its build system "
                        "is in [build-system]), or sync without it: `tritonlock sync --no-install-project`")
    import json

    from tritonlock._files import write_atomic

    write_atomic(venv / MARKER, json.dumps({"name": p.name, "root": str(p.root.resolve()), "digest": p.digest}),
                 what="sync")


def installed_here(venv: Path) -> str | None:
    """The name of the project a sync installed editable into this venv (kept by the plan, never removed)."""
    m = _marker(venv)
    name = m.get("name") if m else None
    return name if isinstance(name, str) and os.path.isdir(venv) else None
