"""Looking at a venv without starting its interpreter: installed distributions, their integrity, and the two
marker files sync keeps in it. Standard library only, so that a no-op `sync` stays fast."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# How tritonlock made this venv (Python, --system-site-packages, the base interpreter): kept for its life.
MADE = ".tritonlock-made.json"
# Written only after a sync completed, removed before an install starts: its absence after a kill means
# "check every distribution's files", its presence lets a no-op sync answer from file stats alone.
SYNCED = ".tritonlock-synced.json"
STATE_FORMAT = 1

# PEP 508 names: what may be handed to an installer as a distribution name (never "-r", "--all", …).
_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")


def normalize(name: str) -> str:
    """PEP 503 normalized name (packaging's canonicalize_name, without importing packaging)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def valid_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def site_dirs(venv: Path) -> list[Path]:
    if os.name == "nt":
        return [venv / "Lib" / "site-packages"]
    return sorted((venv / "lib").glob("python3*/site-packages"))


def _meta(dist_info: Path) -> tuple[str, str] | None:
    """(Name, Version) from a .dist-info's METADATA headers."""
    name = version = None
    try:
        with (dist_info / "METADATA").open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("Name:"):
                    name = line[5:].strip()
                elif line.startswith("Version:"):
                    version = line[8:].strip()
                if (name and version) or line in ("\n", "\r\n"):
                    break
    except OSError:
        return None
    return (name, version) if name and version else None


def read_dists_one(dist_info: Path) -> tuple[str, str] | None:
    """(Name, Version) of one .dist-info, or None when its METADATA is missing or incomplete."""
    return _meta(dist_info)


def dist_infos(site: Path) -> list[Path]:
    try:
        return sorted(p for p in site.iterdir() if p.name.endswith(".dist-info") and p.is_dir())
    except OSError:
        return []


def read_dists(site: Path) -> dict[str, str]:
    """normalized name → version from *.dist-info directories (cheap: no interpreter is started)."""
    out: dict[str, str] = {}
    for d in dist_infos(site):
        nv = _meta(d)
        if nv:
            out[normalize(nv[0])] = nv[1]
    return out


def invalid_dist_infos(venv: Path) -> list[Path]:
    """.dist-info directories whose METADATA Name is not a valid distribution name (never handed to an installer)."""
    return [d for site in site_dirs(venv) for d in dist_infos(site)
            if (nv := _meta(d)) is not None and not valid_name(nv[0])]


def venv_dists(venv: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for site in site_dirs(venv):
        out.update(read_dists(site))
    return out


def venv_config(venv: Path) -> dict[str, str]:
    cfg: dict[str, str] = {}
    try:
        for line in (venv / "pyvenv.cfg").read_text(encoding="utf-8").splitlines():
            k, sep, v = line.partition("=")
            if sep:
                cfg[k.strip().lower()] = v.strip()
    except OSError:
        pass
    return cfg


def venv_ssp(venv: Path) -> bool:
    """Whether the venv sees its base interpreter's packages (include-system-site-packages)."""
    return venv_config(venv).get("include-system-site-packages", "false").lower() == "true"


def venv_python_minor(venv: Path) -> str | None:
    cfg = venv_config(venv)
    ver = cfg.get("version_info") or cfg.get("version")
    if ver:
        return ".".join(ver.split(".")[:2])
    sites = site_dirs(venv)
    m = re.search(r"python(3\.\d+)", str(sites[0])) if sites else None
    return m.group(1) if m else None


def siblings(venv: Path) -> tuple[Path, Path]:
    """Where a rebuild is made (…-new) and where the old venv waits during a two-step swap (…-old)."""
    return (venv.parent / f".{venv.name}.tritonlock-new", venv.parent / f".{venv.name}.tritonlock-old")


# ---------------------------------------------------------------- integrity


@dataclass(frozen=True, kw_only=True, slots=True)
class Damage:
    """A distribution whose files are not what its RECORD lists (a killed install, a deleted file)."""

    name: str  # normalized
    version: str | None
    dist_info: str  # path of the .dist-info directory
    problem: str  # plain words: "RECORD is missing", "3 of 812 files are missing (…)", …
    kind: str = "files"  # "files" | "record" | "metadata" | "twice"


def _record_problem(site: Path, dist_info: Path) -> str | None:
    """What is wrong with one installed distribution's files, judged by its RECORD (paths and sizes)."""
    try:
        text = (dist_info / "RECORD").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "its RECORD is missing (an install or uninstall stopped half-way)"
    except OSError as err:
        return f"its RECORD cannot be read ({err.strerror})"
    missing: list[str] = []
    wrong: list[str] = []
    total = 0
    for row in csv.reader(text.splitlines()):
        if not row or not row[0]:
            continue
        rel, size = row[0], (row[2] if len(row) > 2 else "")
        if not size and not (len(row) > 1 and row[1]):
            continue  # RECORD itself and byte-code: listed without hash or size, may come and go
        total += 1
        try:
            st = os.stat(site / rel)
        except OSError:
            missing.append(rel)
            continue
        if size.isdigit() and st.st_size != int(size):
            wrong.append(rel)
    if not total:
        return "its RECORD lists no files (it was cut short)"
    parts = []
    if missing:
        parts.append(f"{len(missing)} of {total} files are missing ({', '.join(missing[:3])}"
                     f"{', …' if len(missing) > 3 else ''})")
    if wrong:
        parts.append(f"{len(wrong)} files have another size than RECORD says ({', '.join(wrong[:3])}"
                     f"{', …' if len(wrong) > 3 else ''})")
    return "; ".join(parts) or None


def venv_damage(venv: Path, only: set[str] | None = None) -> list[Damage]:
    """Distributions in the venv whose files do not match their RECORD, or that are installed twice.

    `only` limits the check to these .dist-info directory names (sync checks those whose RECORD changed since
    its last completed run); doctor checks them all.
    """
    out: list[Damage] = []
    for site in site_dirs(venv):
        seen: dict[str, list[tuple[Path, str | None]]] = {}
        for d in dist_infos(site):
            nv = _meta(d)
            name = normalize(nv[0]) if nv else normalize(d.name[: -len(".dist-info")].split("-")[0])
            seen.setdefault(name, []).append((d, nv[1] if nv else None))
            if only is not None and d.name not in only:
                continue
            problem = "its METADATA is missing or unreadable" if nv is None else _record_problem(site, d)
            if problem:
                kind = "metadata" if nv is None else "record" if "RECORD" in problem else "files"
                out.append(Damage(name=name, version=nv[1] if nv else None, dist_info=str(d), problem=problem,
                                  kind=kind))
        for name, copies in seen.items():
            if len(copies) > 1 and not any(x.name == name for x in out):
                vs = " and ".join(v or "?" for _, v in copies)
                out.append(Damage(name=name, version=copies[-1][1], dist_info=str(copies[-1][0]),
                                  problem=f"it is installed twice ({vs}: {', '.join(p.name for p, _ in copies)})",
                                  kind="twice"))
    return out


def fingerprint(venv: Path) -> dict[str, list[int]]:
    """.dist-info name → [mtime_ns, size] of its RECORD ([] when it has none): what changes when anything
    installs, upgrades or removes a distribution."""
    out: dict[str, list[int]] = {}
    for site in site_dirs(venv):
        for d in dist_infos(site):
            try:
                st = os.stat(d / "RECORD")
            except OSError:
                out[d.name] = []
                continue
            out[d.name] = [st.st_mtime_ns, st.st_size]
    return out


def snapshot(venv: Path) -> dict[str, tuple[int, int]]:
    """Every file under the venv (byte-code caches aside) → (size, mtime_ns): what "unchanged" is checked against."""
    out: dict[str, tuple[int, int]] = {}
    todo = [str(venv)]
    cut = len(str(venv)) + 1
    while todo:
        try:
            it = os.scandir(todo.pop())
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    if e.is_dir(follow_symlinks=False):
                        if e.name != "__pycache__":
                            todo.append(e.path)
                        continue
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                out[e.path[cut:]] = (st.st_size, st.st_mtime_ns)
    return out


def site_listing(sites: list[str]) -> list[list[str]]:
    """The .dist-info names in each of these directories (the preinstalled stack a venv sees)."""
    return [sorted(p.name for p in dist_infos(Path(s))) for s in sites]


# ---------------------------------------------------------------- marker files


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and data.get("format") == STATE_FORMAT else None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps({"format": STATE_FORMAT, **data}, indent=1, sort_keys=True) + "\n"
    try:
        if path.read_text(encoding="utf-8") == text:
            return  # a no-op sync leaves the venv untouched, its markers included
    except (OSError, UnicodeDecodeError):
        pass
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_made(venv: Path) -> dict[str, Any] | None:
    return _read_json(venv / MADE)


def write_made(venv: Path, *, python: str, system_site_packages: bool, base_python: str | None,
               base_sites: list[str], created_by: str) -> None:
    _write_json(venv / MADE, {"python": python, "system-site-packages": system_site_packages,
                              "base-python": base_python, "base-sites": base_sites, "created-by": created_by})


def read_synced(venv: Path) -> dict[str, Any] | None:
    return _read_json(venv / SYNCED)


def drop_synced(venv: Path) -> dict[str, Any] | None:
    """Remove the completed-sync stamp before changing the venv; returns what it said."""
    data = read_synced(venv)
    try:
        os.unlink(venv / SYNCED)
    except FileNotFoundError:
        pass
    return data


def write_synced(venv: Path, *, key: str | None, target: str, packages: int, system_site_packages: bool,
                 base_sites: list[str]) -> None:
    _write_json(venv / SYNCED, {"key": key, "target": target, "packages": packages,
                                "system-site-packages": system_site_packages, "dists": fingerprint(venv),
                                "base": site_listing(base_sites), "cfg": _cfg_digest(venv)})


def _cfg_digest(venv: Path) -> str:
    try:
        return hashlib.sha256((venv / "pyvenv.cfg").read_bytes()).hexdigest()
    except OSError:
        return ""


def restore_synced(venv: Path, data: dict[str, Any]) -> None:
    data = {k: v for k, v in data.items() if k != "format"}
    _write_json(venv / SYNCED, data)


# ---------------------------------------------------------------- the no-op fast path


def _code_stamp() -> list[object]:
    """This tritonlock's version and the stats of its modules: a new release (or an edited checkout) reads locks
    and venvs by other rules, so its first sync takes the full path."""
    from tritonlock import __version__

    here = Path(__file__).parent
    stats: list[object] = [__version__]
    try:
        for e in sorted(os.scandir(here), key=lambda e: e.name):
            if e.name.endswith(".py"):
                st = e.stat()
                stats.append([e.name, st.st_mtime_ns, st.st_size])
    except OSError:
        pass
    return stats


def sync_key(*, lock_bytes: bytes, intent_bytes: bytes | None, matrix_version: str | None, machine: str | None,
             target: str | None, python: str | None) -> str | None:
    """Everything besides the venv that a sync's answer depends on; None when it cannot be told cheaply."""
    if machine is None or matrix_version is None:
        return None
    h = hashlib.sha256()
    for part in (lock_bytes, intent_bytes if intent_bytes is not None else b"\0none",
                 json.dumps([matrix_version, machine, target, python, _code_stamp()]).encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def already_synced(project: Path, venv: Path, *, target: str | None, python: str | None,
                   system_site_packages: bool | None) -> str | None:
    """The "already matches" line when the last completed sync of this venv had exactly these inputs and no
    distribution (nor the preinstalled stack it sees) changed since; None means "take the full path"."""
    stamp = read_synced(venv)
    if stamp is None or not stamp.get("key") or any(s.exists() for s in siblings(venv)):
        return None  # (a killed sync left something beside the venv: the full path cleans it up)
    if system_site_packages is not None and system_site_packages != stamp.get("system-site-packages"):
        return None
    try:
        lock_bytes = (project / "triton-env.lock").read_bytes()
        intent_path = project / "triton-env.toml"
        intent_bytes = intent_path.read_bytes() if intent_path.exists() else None
    except OSError:
        return None
    from tritonlock._fast import matrix_version, raw_machine_key

    key = sync_key(lock_bytes=lock_bytes, intent_bytes=intent_bytes, matrix_version=matrix_version(),
                   machine=raw_machine_key(), target=target, python=python)
    if (key is None or key != stamp["key"] or _cfg_digest(venv) != stamp.get("cfg")
            or fingerprint(venv) != stamp.get("dists")):
        return None
    made = read_made(venv) or {}
    if stamp.get("system-site-packages") and site_listing(made.get("base-sites") or []) != stamp.get("base"):
        return None
    return f"{venv} already matches target {stamp.get('target')} ({stamp.get('packages')} packages)"
